"""Several engines share the games (issue 23): ``avalon engine`` three times over one broker and one
PostgreSQL database, the commands in six partitions. Each partition is served by one engine, the load
is evened out, an engine SIGKILLed has its partitions taken over (their commands and their deadlines,
and only theirs), and every game plays to the end with each command applied once, in order."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import update

from avalon.services.engine.rows import GameRow
from avalon.services.engine.store import Store
from avalon.services.partitions_cli import change
from avalon.shared.bus.rabbit import partition_of
from avalon.shared.runtime import StartupError

from .conftest import rabbit_buses, require_rabbitmq
from .engine_support import create_pg_database, drop_pg_database, lobby_commands, play_to_the_end, wait_processed
from .test_engine_over_broker import EngineProcess

PARTITIONS = 6
GAMES = 18


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine(EngineProcess):
    """An engine with its own /metrics, and what its log says it serves."""

    def __init__(self, *args, **kwargs) -> None:
        self.port = _free_port()
        super().__init__(*args, ENGINE_PARTITIONS=str(PARTITIONS), OPS_LISTEN=f"127.0.0.1:{self.port}", **kwargs)

    def metric(self, name: str) -> float:
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5).read().decode()
        found = re.search(rf"^{name} (\S+)$", text, re.M)
        return float(found.group(1)) if found else 0.0

    def ready(self) -> dict:
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5).read())

    def served(self) -> set[int]:
        """The partitions this engine serves, as its log tells (taken over, handed on or lost)."""
        return self._partitions()

    def taken_over(self, since: int) -> set[int]:
        """Every partition it took over after that offset of its log (whether it still serves it or not)."""
        return self._partitions(since, keep=True)

    def _partitions(self, since: int = 0, keep: bool = False) -> set[int]:
        served: set[int] = set()
        for line in self.log.read_text()[since:].splitlines():
            found = re.search(r"command partition\(s\) ([\d, ]+) (served here|no longer served)", line)
            if found:
                numbers = {int(n) for n in found.group(1).split(",")}
                served = served | numbers if found.group(2) == "served here" or keep \
                    else served - numbers
        return served


async def _until(check, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.1)


@pytest.fixture
async def three(amqp_url, rabbit_prefix, tmp_path):
    await require_rabbitmq(amqp_url)
    db_url, db_name = await create_pg_database()
    engines = [Engine(db_url, amqp_url, rabbit_prefix, tmp_path / f"engine{i}.log") for i in range(3)]
    store = Store(db_url)
    async with rabbit_buses(amqp_url, rabbit_prefix) as make:
        client = await make(partitions=PARTITIONS)
        try:
            for engine in engines:
                await engine.start()
            yield engines, client, store
        finally:
            for engine in engines:
                engine.stop()
            await store.close()
    await drop_pg_database(db_name)


async def test_three_engines_share_the_partitions_and_take_over_a_killed_ones_commands_and_deadlines(three):
    engines, client, store = three
    # each partition served by exactly one engine, two each once the load is evened out
    await _until(lambda: sorted(len(e.served()) for e in engines) == [2, 2, 2]
                 and set().union(*(e.served() for e in engines)) == set(range(PARTITIONS)), "two partitions each")
    assert [e.metric("avalon_engine_partitions") for e in engines] == [2.0, 2.0, 2.0]
    said = [e.ready()["details"]["partitions"] for e in engines]  # /readyz says which, per engine
    assert sorted(p for d in said for p in d["served"]) == list(range(PARTITIONS))
    assert all(d["of"] == PARTITIONS and d["takeovers"] >= 2 for d in said)

    games = [f"shared{i}" for i in range(GAMES)]
    assert {partition_of(g, PARTITIONS) for g in games} == set(range(PARTITIONS))
    for game in games:
        for envelope in lobby_commands(game, 5):
            await client.send_command(envelope)
    for game in games:
        await _until_started(store, game)
    phases = {g: (await store.load(g)).state.phase_id for g in games}

    # every deadline falls due now in the database; only a takeover reads it again
    victim = engines[0]
    taken = victim.served()
    async with store.sessions() as session, session.begin():
        await session.execute(update(GameRow).where(GameRow.id.in_(games)).values(
            deadline_at=datetime.now(timezone.utc) - timedelta(minutes=1)))
    survivors = engines[1:]
    marks = [len(e.log.read_text()) for e in survivors]
    victim.kill()
    await _until(lambda: set().union(*(e.served() for e in survivors)) == set(range(PARTITIONS)),
                 "the survivors serve every partition", timeout=20)
    orphans = [g for g in games if partition_of(g, PARTITIONS) in taken]
    for game in orphans:  # the deadline of a game taken over is armed by its new engine, and fires
        await wait_processed(store, f"timeout:{game}:{phases[game]}", timeout=20)
    await _until(lambda: sorted(len(e.served()) for e in survivors) == [3, 3], "three partitions each", timeout=20)
    await asyncio.sleep(2.5)  # past the last takeover's second reading of the deadlines
    moved = set().union(*(e.taken_over(since) for e, since in zip(survivors, marks)))  # taken over since the kill
    assert taken <= moved
    kept = [g for g in games if partition_of(g, PARTITIONS) not in moved]
    assert kept, "some partitions stayed with their engine"
    for game in kept:  # a game whose engine lives on keeps the deadline that engine armed: nobody else arms it
        assert not await store.seen(f"timeout:{game}:{phases[game]}"), game
    assert sum(e.metric("avalon_engine_partition_takeovers_total") for e in survivors) >= PARTITIONS

    # the killed engine comes back (last in every line); every game plays to the end, one more kill on the way
    await victim.start()
    await asyncio.gather(*(play_to_the_end(client.send_command, store, g, seed=i, timeout=30)
                           for i, g in enumerate(games[: GAMES // 2])))
    engines[1].kill()
    await asyncio.gather(*(play_to_the_end(client.send_command, store, g, seed=i, timeout=30)
                           for i, g in enumerate(games[GAMES // 2:])))
    for game in games:
        log = await store.event_log(game, include_internal=True)
        assert [e.seq for e in log] == list(range(1, len(log) + 1)), game
        blocks: list[str] = []
        for e in log:
            if not blocks or blocks[-1] != e.caused_by:
                blocks.append(e.caused_by)
        assert len(blocks) == len(set(blocks)), f"{game}: a command's events were applied twice"
        missed = [e.event.phase_id for e in log if e.event.type == "deadline_missed"]
        assert len(missed) == len(set(missed)), f"{game}: a deadline fired twice"
        assert (await store.load(game)).state.over


async def _until_started(store: Store, game: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        loaded = await store.load(game)
        if loaded is not None and loaded.state.started:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{game} did not start")
        await asyncio.sleep(0.05)


async def test_the_partition_count_changes_only_while_nothing_uses_the_queues(amqp_url, rabbit_prefix):
    async with rabbit_buses(amqp_url, rabbit_prefix) as make:
        engine = await make(partitions=2)

        async def handler(body: bytes) -> None:
            return None

        await engine.consume_commands(handler)
        with pytest.raises(StartupError, match=r"commands holds 0 command\(s\), 1 consumer"):
            await change(amqp_url, rabbit_prefix, 5, 4)
        await engine.close()
        assert "-> 4 command partition(s)" in await change(amqp_url, rabbit_prefix, 5, 4)
        gateway = await make()  # a gateway reads the count off the broker
        assert gateway.partitions == 4
        assert "already" in await change(amqp_url, rabbit_prefix, 5, 4)
        assert "-> 1 command partition(s)" in await change(amqp_url, rabbit_prefix, 5, 1)
        assert (await make()).partitions == 1
