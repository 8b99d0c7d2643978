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


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_told_once_and_its_tail_right_after_the_answer_is_not_told_again(caplog):
    """The fault suite's outage of 6 s: the database answers again, and within the next 0.2 s a pooled
    connection opened before the outage fails once (the engine's log said "unreachable" three times
    for two outages). One line each way per outage; a failure that begins just after an answer is told
    only if it lasts; a later outage is told at once."""
    clock, error = Clock(), ConnectionRefusedError("refused")
    watch = DatabaseWatch(settle=1.0, clock=clock)

    def told() -> list[str]:
        return [r.getMessage().split(" (")[0] for r in caplog.records if r.name == "avalon.services.engine.outage"]

    with caplog.at_level("INFO", logger="avalon.services.engine.outage"):
        watch.lost(error)
        clock.now += 3
        watch.lost(error)  # retries: no more lines
        clock.now += 3
        watch.answered()
        assert told() == ["database unreachable", "database back after 6.0 s"]
        clock.now += 0.1
        watch.lost(error)  # the outage's tail: a stale connection
        clock.now += 0.2
        watch.answered()
        assert len(told()) == 2, told()
        clock.now += 0.3
        watch.lost(error)  # again just after an answer, and this time it lasts: told once it has for `settle`
        clock.now += 0.5
        watch.lost(error)
        assert len(told()) == 2, told()
        clock.now += 0.6
        watch.lost(error)
        assert told()[2:] == ["database unreachable"]
        clock.now += 1
        watch.answered()
        assert told()[3:] == ["database back after 2.1 s"]
        clock.now += 30
        watch.lost(error)  # a new outage, long after: told at once
        assert told()[4:] == ["database unreachable"]
