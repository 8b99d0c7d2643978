"""What a gateway can rely on to detect a lost event: every event of a game sent to a channel names
the previous one sent to that channel (``prev_seq``), across the engine's own records (never
published), other channels' private events, and a restart of the engine, over RabbitMQ."""

from __future__ import annotations

import asyncio
import random

from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from tests.integration.test_two_channels import act, send

GAME = "mixed-1"
PLAYERS = ["test:1", "test:2", "test:3", "mail:dan@example.org", "mail:eve@example.org"]


async def test_each_channel_sees_an_unbroken_chain_of_its_events_across_an_engine_restart(tmp_path,
                                                                                          make_rabbit_bus):
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'chain.db'}")
    await store.migrate()
    rng = random.Random(5)
    got: dict[str, list] = {"test": [], "email": []}
    answered: set = set()
    players = await make_rabbit_bus()  # the gateways' side: it stays up while the engine restarts

    def listener(channel: str):
        async def on_event(envelope) -> None:
            got[channel].append(envelope)
            e = envelope.event
            mine = e.type == "choices_offered" and e.player.startswith("test:") == (channel == "test")
            if mine and (e.player, e.phase_id) not in answered:
                answered.add((e.player, e.phase_id))
                await act(players, e, rng)
        return on_event

    for channel in got:
        await players.subscribe_events(channel, f"{channel}.#", listener(channel))

    async def start_engine():
        bus = await make_rabbit_bus()
        engine = EngineService(store, bus, DeadlineScheduler(bus), channels=channel_map())
        await engine.start()
        return bus, engine

    bus, engine = await start_engine()
    try:
        await send(players, PLAYERS[0], {"type": "create_game", "options": {"lady": True}})
        for player in PLAYERS[1:]:
            await send(players, player, {"type": "join"})
        await send(players, PLAYERS[0], {"type": "start_game"})
        restarted = False
        for _ in range(1500):
            loaded = await store.load(GAME)
            if loaded is not None and loaded.state.quest >= 2 and not restarted:
                await engine.stop()  # a new engine reads back from the database what was sent where
                await bus.close()
                bus, engine = await start_engine()
                restarted = True
            if loaded is not None and loaded.state.over:
                break
            await asyncio.sleep(0.02)
        assert loaded.state.over and restarted
        await asyncio.sleep(0.5)
        log = await store.event_log(GAME, include_internal=True)
    finally:
        await engine.stop()
        await store.close()

    assert [e.seq for e in log] == list(range(1, len(log) + 1)), "the stored stream has no hole"
    assert any(e.audience.kind.value == "nobody" for e in log), "records of the engine's own take numbers"
    for channel, envelopes in got.items():
        stream = [e for e in envelopes if e.seq]  # seq 0: replies outside the stream
        last = 0
        for envelope in stream:
            if envelope.seq <= last:
                continue  # delivered again (at least once): a gateway drops what it has handled
            assert envelope.prev_seq.get(channel) == last, (channel, envelope.seq, envelope.prev_seq, last)
            last = envelope.seq
        sent = [e.seq for e in log if channel in e.prev_seq]
        assert sorted({e.seq for e in stream}) == sent, f"{channel} got every event sent to it, and only those"
    assert {e.seq for e in got["test"]} != {e.seq for e in got["email"]}, "private events differ per channel"
