"""The engine's publisher: once a batch's commands are committed and their events published, marking
them published is upkeep. A database that goes away at that moment fails no command (the fault suite
saw 'command handler failed' with a ConnectionDoesNotExistError from mark_published while PostgreSQL
was cut off): the marks wait for the next flush."""

from __future__ import annotations

import asyncio

import asyncpg

from avalon.services.engine.outage import DatabaseWatch
from avalon.services.engine.publisher import MARK_EVERY, Publisher
from avalon.services.engine.store import Outgoing
from avalon.shared.protocol import EventEnvelope


class Store:  # the outbox's marks: failing while the database is away
    def __init__(self) -> None:
        self.away = True
        self.marked: list[int] = []

    async def mark_published(self, ids: list[int]) -> None:
        if self.away:
            raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")
        self.marked.extend(ids)


class Bus:
    def __init__(self) -> None:
        self.published = 0

    async def publish_events(self, envelopes, channel, bodies=None) -> None:
        self.published += len(envelopes)


def outgoing(n: int) -> Outgoing:
    envelope = EventEnvelope.model_validate({"message_id": f"g:{n}", "game_id": "g", "seq": n,
                                             "occurred_at": "2026-01-01T20:00:00Z", "audience": {"kind": "public"},
                                             "event": {"type": "player_joined", "player": "test:1"}})
    return Outgoing(id=n, envelope=envelope, channels=("test",), body=envelope.model_dump_json())


async def test_a_database_away_while_marking_fails_no_command_and_the_marks_wait_for_the_next_flush():
    store, bus = Store(), Bus()
    publisher = Publisher(store, bus, DatabaseWatch())
    committed = [outgoing(n) for n in range(1, MARK_EVERY + 1)]
    command = asyncio.get_running_loop().create_future()
    publisher.hand_over(committed, [(None, command)])
    await asyncio.wait_for(command, 5)  # settled without an error: the command is done
    assert bus.published == MARK_EVERY and store.marked == []
    store.away = False
    assert await publisher.flush_published()
    assert store.marked == list(range(1, MARK_EVERY + 1))
