"""Garbage on the bus changes nothing: the real engine service on RabbitMQ and PostgreSQL.

Random bytes, broken JSON, JSON of another shape, an envelope with a command nobody knows, a 10 MB
message, an envelope that is not UTF-8, ids PostgreSQL cannot store: each ends in the dead-letter
queue, once, while a real game sent in between is applied command by command, in order, and no game
is changed by anything but its own commands. The same for the events exchange: garbage sent to a
gateway's queue is dead-lettered and the subscriber goes on with the next event.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
import uuid
from collections import Counter
from datetime import datetime, timezone

import aio_pika
import pytest
from sqlalchemy import select

from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.simulate import random_command
from avalon.services.engine.store import Store
from avalon.services.engine.rows import GameRow
from avalon.shared.protocol import EventEnvelope, from_core_command

from .conftest import rabbit_buses, require_rabbitmq
from .engine_support import create_pg_database, drop_pg_database, lobby_commands, wait_processed

MB = 1024 * 1024


def envelope_json(game: str, actor: str, command: dict, **extra) -> dict:
    return {"v": 1, "message_id": f"bad-{uuid.uuid4()}", "game_id": game, "actor": actor, "channel": "test",
            "command": command, **extra}


def garbage_commands(game: str, actor: str) -> list[bytes]:
    """Every kind of command message the engine can never act on, several aimed at a real game."""
    rng = random.Random(9)
    join = envelope_json(game, actor, {"type": "join"})
    utf16 = json.dumps(join).encode("utf-16")
    latin1 = json.dumps(envelope_json(game, "test:jérôme", {"type": "join"}), ensure_ascii=False).encode("latin-1")
    return [
        rng.randbytes(300),
        b"",
        b"\xff\xfe\x00",
        b'{"v": 1, "game_id": "' + game.encode() + b'", "actor": ',  # cut off
        b"{'v': 1}",  # not JSON: single quotes
        b'{"hello": "world"}',
        b"[1, 2, 3]",
        b'"a string"',
        b"null",
        b"[" * 200_000,  # nested past any parser's limit
        json.dumps(envelope_json(game, actor, {"type": "steal_the_grail"})).encode(),
        json.dumps(envelope_json(game, actor, {"type": "join"}, v=2)).encode(),
        json.dumps(envelope_json(game, actor, {"type": "cast_vote", "approve": "maybe"})).encode(),
        json.dumps(envelope_json(game, actor, {"type": "play_card", "card": "bogus"})).encode(),
        json.dumps(envelope_json(game, "", {"type": "join"})).encode(),
        json.dumps(envelope_json(game, actor, {"type": "join"}, message_id="m" * 300)).encode(),
        json.dumps(envelope_json(game, actor, {"type": "join"}, padding="x" * (10 * MB))).encode(),
        json.dumps(envelope_json(game, "y" * (10 * MB), {"type": "join"})).encode(),
        json.dumps(envelope_json(game, actor, {"type": "confer", "text": "\ud800"})).encode(),  # a lone surrogate
        utf16,
        latin1,
        json.dumps(envelope_json("ghost\u0000game", actor, {"type": "create_game"})).encode(),
        json.dumps(envelope_json(game, "test:p\u0000", {"type": "join"})).encode(),
    ]


@pytest.fixture
async def stack(amqp_url, rabbit_prefix):
    await require_rabbitmq(amqp_url)
    db_url, db_name = await create_pg_database()
    store = Store(db_url)
    async with rabbit_buses(amqp_url, rabbit_prefix) as make:
        engine_bus, client = await make(), await make()
        engine = EngineService(store, engine_bus, DeadlineScheduler(engine_bus), channels=channel_map())
        seen: list[EventEnvelope] = []

        async def record(envelope: EventEnvelope) -> None:
            seen.append(envelope)
        await client.subscribe_events("observer", "test.#", record)
        await engine.start()
        try:
            yield engine, client, store, seen
        finally:
            await engine.stop()
            await store.close()
    await drop_pg_database(db_name)


async def drain_dead(bus, expected: int, timeout: float = 30) -> list[bytes]:
    dead: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(dead) < expected and time.monotonic() < deadline:
        dead += await bus.dead_letters()
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.3)  # and nothing more than expected
    return dead + await bus.dead_letters()


async def test_garbage_amid_a_real_game_is_dead_lettered_and_the_game_is_applied_in_order(stack, caplog):
    caplog.set_level(logging.WARNING)
    _, client, store, seen = stack
    lobby = lobby_commands("real", 5)
    bad = garbage_commands("real", lobby[1].actor)
    thrown: list[bytes] = []

    async def throw(body: bytes) -> None:
        await client.send_raw_command(body)
        thrown.append(body)
    for i, envelope in enumerate(lobby):  # all at once, the garbage in between
        await throw(bad[i])
        await client.send_command(envelope)
    for body in bad[len(lobby):]:
        await throw(body)
    await wait_processed(store, lobby[-1].message_id, timeout=60)
    sent = list(lobby)
    rng = random.Random(3)
    for step in range(25):  # then the game, one command at a time, each after a piece of garbage
        state = (await store.load("real")).state
        if state.over:
            break
        envelope = from_core_command(random_command(state, rng), "real")
        await throw(bad[step % len(bad)])
        await client.send_command(envelope)
        await wait_processed(store, envelope.message_id, timeout=30)
        sent.append(envelope)

    dead = await drain_dead(client, len(thrown))
    assert Counter(dead) == Counter(thrown), "every bad message is dead-lettered, once"
    log = await store.event_log("real", include_internal=True)
    assert {e.caused_by for e in log} <= {e.message_id for e in sent}, "only the game's own commands changed it"
    causes = [e.caused_by for e in log]
    assert sorted(set(causes), key=causes.index) == [e.message_id for e in sent], "each applied, in order"
    joined = [e.event.player for e in log if e.event.type == "player_joined"]
    assert joined == [e.actor for e in lobby[:-1]]
    async with store.sessions() as session:
        assert list((await session.execute(select(GameRow.id))).scalars()) == ["real"], "no other game was made"
    await asyncio.sleep(0.2)
    assert not [e for e in seen if e.event.type == "command_rejected"], "garbage is not answered as a command"
    failures = [r.getMessage()[:300] for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, "garbage is dead-lettered at once, not tried again and again"
    assert max(len(r.getMessage()) for r in caplog.records) < 5000, "no 10 MB log line"


def event_json(seq: int, game: str = "g1") -> bytes:
    return EventEnvelope(
        message_id=f"{game}:{seq}", game_id=game, seq=seq, occurred_at=datetime.now(timezone.utc),
        audience={"kind": "public"}, event={"type": "player_joined", "player": f"test:p{seq}"},
    ).model_dump_json().encode()


def garbage_events() -> list[bytes]:
    good = json.loads(event_json(99))
    unknown = {**good, "event": {"type": "dragon_attacked", "player": "x"}}
    return [
        random.Random(4).randbytes(300),
        b"",
        b"not json",
        b"[not json either",
        b'{"v": 1, "what": "no"}',
        b"[" * 200_000,
        b"[" + event_json(1) + b', {"v": 1}]',  # a batch with one bad envelope: all of it is refused
        json.dumps(unknown).encode(),
        json.dumps({**good, "padding": "x" * (10 * MB)}).encode(),
        json.dumps({**good, "game_id": "jérôme"}, ensure_ascii=False).encode("latin-1"),
        json.dumps(good).encode("utf-16"),
    ]


async def test_garbage_on_the_events_exchange_is_dead_lettered_and_the_subscriber_goes_on(make_rabbit_bus,
                                                                                          amqp_url, caplog):
    caplog.set_level(logging.WARNING)
    gateway_bus = await make_rabbit_bus()
    handled: list[EventEnvelope] = []

    async def handler(envelope: EventEnvelope) -> None:
        handled.append(envelope)
    await gateway_bus.subscribe_events("telegram", "telegram.#", handler)
    bad = garbage_events()
    async with await aio_pika.connect(amqp_url) as connection:
        channel = await connection.channel()
        exchange = await channel.get_exchange(gateway_bus.topology.events_exchange_name, ensure=False)
        for seq, body in enumerate(bad, start=1):
            await exchange.publish(aio_pika.Message(body), routing_key="telegram.public.g1")
            await exchange.publish(aio_pika.Message(event_json(seq)), routing_key="telegram.public.g1")
    dead = await drain_dead(gateway_bus, len(bad))
    assert Counter(dead) == Counter(bad)
    deadline = time.monotonic() + 10
    while len(handled) < len(bad) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert [e.seq for e in handled] == list(range(1, len(bad) + 1)), "every good event, in order, once"
    assert max(len(r.getMessage()) for r in caplog.records) < 5000, "no 10 MB log line"
