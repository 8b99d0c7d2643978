"""The engine service on a real bus moves the counters operators read from /metrics.

Both buses: the in-process one, and a real RabbitMQ (these fail, never skip, without a broker);
the database is SQLite. Counters are the process's own, so each test reads them before and after."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from avalon.shared.bus import InProcessBus
from avalon.shared.ops import Readiness, serve_ops
from avalon.shared.protocol import from_core_command
from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.engine.rules import CreateGame, Join, Options, StartGame
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store

from .engine_support import player_ids, wait_processed

COMMANDS = "avalon_commands_total"
WATCHED = [
    ("avalon_commands_total", {"result": "applied"}),
    ("avalon_commands_total", {"result": "rejected"}),
    ("avalon_commands_total", {"result": "duplicate"}),
    ("avalon_dead_messages_total", {"service": "engine", "channel": "commands"}),
    ("avalon_events_published_total", {"channel": "test"}),
    ("avalon_outbox_depth", {"service": "engine"}),
]


class Ops:
    """The ops endpoints of a test's process, read over HTTP."""

    def __init__(self, client: aiohttp.ClientSession) -> None:
        self.client = client

    async def metrics(self) -> dict[tuple[str, tuple], float]:
        async with self.client.get("/metrics") as response:
            assert response.status == 200
            text = await response.text()
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    async def watched(self) -> dict[str, float]:
        values = await self.metrics()
        return {f"{name}{labels}": values.get((name, tuple(sorted(labels.items()))), 0.0)
                for name, labels in WATCHED}

    async def moved_by(self, before: dict[str, float], until, timeout: float = 20.0) -> dict[str, float]:
        """The change since ``before``, once ``until(change)`` holds (or the last change seen)."""
        deadline = time.monotonic() + timeout
        while True:
            now = await self.watched()
            change = {key: now[key] - before[key] for key in before}
            if until(change) or time.monotonic() > deadline:
                return change
            await asyncio.sleep(0.05)

    async def ready(self) -> tuple[int, dict]:
        async with self.client.get("/readyz") as response:
            return response.status, await response.json()


@pytest.fixture
async def stack(make_bus, tmp_path):
    """An engine service on the bus (with a subscriber for the test channel), SQLite, and its ops server."""
    bus = await make_bus()
    recorded = []

    async def record(envelope):
        recorded.append(envelope)

    await bus.subscribe_events("recorder", "test.#", record)
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}")
    engine = EngineService(store, bus, DeadlineScheduler(bus), channels=channel_map())
    readiness = Readiness()
    readiness.register("engine")
    server = await serve_ops("127.0.0.1:0", readiness)
    async with aiohttp.ClientSession(base_url=server.url) as client:
        ops = Ops(client)
        status, body = await ops.ready()
        assert status == 503 and body["not_ready"] == {"engine": "starting"}
        await engine.start()
        readiness.set_ready("engine")
        yield bus, store, ops
        await engine.stop()
    await server.close()
    await store.close()


async def test_an_applied_a_rejected_and_a_duplicate_command_show_in_the_counters_of_metrics(stack):
    bus, store, ops = stack
    assert (await ops.ready())[0] == 200, "ready once the engine has started"
    before = await ops.watched()
    host, guest = player_ids(2)
    create = from_core_command(CreateGame(actor=host, game_id="m1", seed=0, options=Options()), "m1")
    await bus.send_command(create)
    await wait_processed(store, create.message_id)
    start = from_core_command(StartGame(actor=host), "m1")  # one player: refused with a reason
    await bus.send_command(start)
    await wait_processed(store, start.message_id)
    await bus.send_command(create)  # delivered again: same message id

    change = await ops.moved_by(before, lambda c: c[f"{COMMANDS}{{'result': 'duplicate'}}"] >= 1)
    assert change[f"{COMMANDS}{{'result': 'applied'}}"] == 1
    assert change[f"{COMMANDS}{{'result': 'rejected'}}"] == 1
    assert change[f"{COMMANDS}{{'result': 'duplicate'}}"] == 1
    assert change["avalon_events_published_total{'channel': 'test'}"] >= 2, "the lobby opened, the refusal"
    assert change["avalon_outbox_depth{'service': 'engine'}"] == 0, "everything committed was published"
    assert change["avalon_dead_messages_total{'service': 'engine', 'channel': 'commands'}"] == 0


async def test_a_malformed_command_counts_as_dead_and_the_next_command_still_counts_as_applied(stack):
    bus, store, ops = stack
    before = await ops.watched()
    await bus.send_raw_command(b'{"not": "a command"}')
    host, guest = player_ids(2)
    create = from_core_command(CreateGame(actor=host, game_id="m2", seed=0, options=Options()), "m2")
    join = from_core_command(Join(actor=guest), "m2")
    for envelope in (create, join):
        await bus.send_command(envelope)
        await wait_processed(store, envelope.message_id)
    dead = "avalon_dead_messages_total{'service': 'engine', 'channel': 'commands'}"
    change = await ops.moved_by(before, lambda c: c[dead] >= 1)
    assert change[dead] == 1
    assert change[f"{COMMANDS}{{'result': 'applied'}}"] == 2
    assert change[f"{COMMANDS}{{'result': 'rejected'}}"] == 0


class FlakyBus(InProcessBus):
    """Takes no event while ``broken``."""

    broken = False

    async def publish_event(self, envelope, channel):
        if self.broken:
            raise ConnectionError("broker went away")
        await super().publish_event(envelope, channel)

    async def publish_events(self, envelopes, channel, *, bodies=None):
        if self.broken:
            raise ConnectionError("broker went away")
        await super().publish_events(envelopes, channel, bodies=bodies)


async def test_the_outbox_depth_holds_what_the_bus_would_not_take_until_it_is_published(tmp_path):
    outbox, errors = ("avalon_outbox_depth", {"service": "engine"}), ("avalon_errors_total",
                                                                       {"service": "engine", "where": "publish"})
    bus = FlakyBus()
    await bus.start()
    await bus.subscribe_events("recorder", "test.#", lambda envelope: asyncio.sleep(0))
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}")
    engine = EngineService(store, bus, channels=channel_map())
    await engine.start()
    server = await serve_ops("127.0.0.1:0", Readiness())
    try:
        async with aiohttp.ClientSession(base_url=server.url) as client:
            ops = Ops(client)

            async def read(key) -> float:
                return (await ops.metrics()).get((key[0], tuple(sorted(key[1].items()))), 0.0)

            depth, failures = await read(outbox), await read(errors)
            bus.broken = True
            host, guest = player_ids(2)
            create = from_core_command(CreateGame(actor=host, game_id="m3", seed=0, options=Options()), "m3")
            join = from_core_command(Join(actor=guest), "m3")
            with pytest.raises(ConnectionError):  # the first: the bus's error
                await engine.handle_raw(create.model_dump_json().encode())
            # the next is committed and acknowledged; its events wait in the outbox behind the first's
            await engine.handle_raw(join.model_dump_json().encode())
            waiting = len(await store.unpublished())
            assert waiting == 3, "the lobby opened, its host and the guest joined: committed, not published"
            assert await read(outbox) == depth + waiting
            await asyncio.sleep(0.5)  # the outbox upkeep tries again, and fails
            assert await read(outbox) == depth + waiting
            assert await read(errors) > failures
            bus.broken = False
            deadline = time.monotonic() + 10
            while await read(outbox) != depth and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert await read(outbox) == depth, "published from the outbox once the bus took them"
            assert await store.unpublished() == []

            bus.broken = True  # an engine that stops with events still waiting takes its share with it
            with pytest.raises(ConnectionError):
                await engine.handle_raw(from_core_command(StartGame(actor=host), "m3").model_dump_json().encode())
            assert await read(outbox) == depth + 1
            await engine.stop()
            engine = None
            assert await read(outbox) == depth
    finally:
        if engine is not None:
            await engine.stop()
        await server.close()
        await bus.close()
        await store.close()
