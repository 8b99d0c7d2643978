"""The delivery core's outbox on SQLite and PostgreSQL, with a minimal channel of its own: what an
event asks to send is committed with its handled mark, sent in order per recipient, retried, and
given up on visibly; a restart sends what was pending; a redelivered event adds nothing."""

from __future__ import annotations

import asyncio

import pytest

from avalon.services.engine.store import Store
from avalon.shared import ops
from avalon.shared.delivery.outbox import Outbox, Outgoing, Undeliverable
from tests.integration.engine_support import create_pg_database, drop_pg_database


@pytest.fixture(params=["sqlite", "postgres"])
async def database(request, tmp_path):
    if request.param == "sqlite":
        url, name = f"sqlite+aiosqlite:///{tmp_path / 'delivery.db'}", None
    else:
        url, name = await create_pg_database()
    store = Store(url)
    await store.migrate()
    try:
        yield store.engine
    finally:
        await store.close()
        if name:
            await drop_pg_database(name)


class Channel:
    """A channel whose wire is a list; it can be told to fail."""

    def __init__(self) -> None:
        self.wire: list[tuple[str, str]] = []
        self.fail: dict[str, int] = {}  # text -> how many more attempts fail
        self.refuse: set[str] = set()  # texts refused for good
        self.hold = asyncio.Event()
        self.hold.set()
        self.dead: list[tuple[int, str]] = []
        self.refs = 0

    async def deliver(self, row, slot_ref):
        await self.hold.wait()
        text = row.body["text"]
        if text in self.refuse:
            raise Undeliverable("the channel refused it")
        if self.fail.get(text, 0) > 0:
            self.fail[text] -= 1
            raise ConnectionError("the wire is down")
        if row.body.get("edit_slot"):
            text = f"edit {slot_ref}: {text}"
        self.wire.append((row.recipient, text))
        self.refs += 1
        return str(self.refs)

    async def on_dead(self, row, error) -> None:
        self.dead.append((row.id, error))


def outbox(engine, channel: Channel) -> Outbox:
    return Outbox(engine, "test", channel.deliver, attempts=3, first_delay=0.01, on_dead=channel.on_dead)


def say(recipient: str, *texts: str, **extra) -> list[Outgoing]:
    return [Outgoing(recipient, {"text": t, **extra}) for t in texts]


async def test_messages_go_out_in_order_per_recipient_and_a_redelivered_event_adds_nothing(database):
    channel = Channel()
    box = outbox(database, channel)
    await box.start()
    assert await box.stage("g:1", "g", say("group", "one", "two") + say("ann", "secret"))
    assert await box.stage("g:2", "g", say("group", "three"))
    assert not await box.stage("g:1", "g", say("group", "one", "two")), "a redelivery is dropped"
    await box.idle()
    assert [t for r, t in channel.wire if r == "group"] == ["one", "two", "three"]
    assert [t for r, t in channel.wire if r == "ann"] == ["secret"]
    assert await box.counts() == {"sent": 4}
    await box.close()


async def test_idle_waits_for_the_marks_being_written_not_only_for_the_sends(database):
    """A mark's transaction in flight (here held up by another writer's lock) still counts as work:
    idle() returns only once the table says sent (the row read back right after it must not be pending)."""
    channel = Channel()
    channel.hold.clear()
    box = outbox(database, channel)
    await box.start()
    assert await box.stage("g:1", "g", say("ann", "one"))
    async with database.connect() as other:  # another writer holds the table while the mark is written
        if database.dialect.name == "sqlite":
            await other.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            await other.exec_driver_sql("SELECT id FROM delivery_outbox FOR UPDATE")
        channel.hold.set()
        idle = asyncio.ensure_future(box.idle())
        await asyncio.sleep(0.4)
        assert channel.wire == [("ann", "one")], "sent at once"
        assert not idle.done(), "its mark is not written yet, so the outbox is not idle"
        await other.rollback()
    await idle
    assert await box.counts() == {"sent": 1}
    await box.close()


async def test_a_failing_send_is_retried_then_dead_and_reported_while_the_next_messages_still_go(database):
    channel = Channel()
    channel.fail["flaky"] = 2  # two failures, then it goes
    channel.fail["broken"] = 99
    box = outbox(database, channel)
    await box.start()
    dead_before = ops.sample("avalon_dead_messages_total", service="delivery", channel="test")
    await box.stage("g:1", "g", say("group", "flaky", "broken"))
    await box.stage("g:2", "g", say("group", "after"))
    await box.idle()
    assert [t for _, t in channel.wire] == ["flaky", "after"]
    dead = await box.dead_rows()
    assert [(row.event_id, row.recipient, row.body["text"]) for row in dead] == [("g:1", "group", "broken")]
    assert len(channel.dead) == 1 and "the wire is down" in channel.dead[0][1]
    assert ops.sample("avalon_dead_messages_total", service="delivery", channel="test") == dead_before + 1
    assert await box.counts() == {"sent": 2, "dead": 1}
    await box.close()


async def test_a_refused_message_is_dead_at_once(database):
    channel = Channel()
    channel.refuse.add("no")
    box = outbox(database, channel)
    await box.start()
    await box.stage("g:1", "g", say("group", "no", "yes"))
    await box.idle()
    assert channel.wire == [("group", "yes")]
    assert [row.attempts for row in await box.dead_rows()] == [1]
    await box.close()


async def test_what_was_pending_when_the_process_died_is_sent_by_the_next_one(database):
    first = Channel()
    first.hold.clear()  # the wire hangs: nothing leaves before the "crash"
    box = outbox(database, first)
    await box.start()
    await box.stage("g:1", "g", say("group", "a", "b") + say("ann", "c"))
    await box.close()  # as good as a kill: the rows were committed, never marked sent
    assert first.wire == []
    second = Channel()
    again = outbox(database, second)
    await again.start()
    await again.idle()
    assert sorted(second.wire) == [("ann", "c"), ("group", "a"), ("group", "b")]
    assert not await again.stage("g:1", "g", say("group", "a")), "the event stays handled across the restart"
    await again.close()


async def test_an_edit_in_place_finds_the_message_it_edits_even_after_a_restart(database):
    channel = Channel()
    box = outbox(database, channel)
    await box.start()
    await box.stage("g:1", "g", say("group", "tally 0/5", slot="vote:g:1"))
    await box.stage("g:2", "g", say("group", "tally 1/5", edit_slot="vote:g:1"))
    await box.idle()
    assert channel.wire == [("group", "tally 0/5"), ("group", "edit 1: tally 1/5")]
    await box.close()
    again = outbox(database, channel)
    await again.start()
    assert again.slot("vote:g:1") == "1"
    await again.stage("g:3", "g", say("group", "tally 2/5", edit_slot="vote:g:1"))
    await again.idle()
    assert channel.wire[-1] == ("group", "edit 1: tally 2/5")
    await again.close()


async def test_the_games_memory_is_kept_with_the_event_that_changed_it(database):
    box = outbox(database, Channel())
    await box.start()
    await box.stage("g:1", "g", [], b"memo after 1")
    assert not await box.stage("g:1", "g", [], b"must not overwrite")
    await box.stage("h:1", "h", [], b"other game")
    assert {game: blob for game, (blob, _) in (await box.games()).items()} == {"g": b"memo after 1",
                                                                                "h": b"other game"}
    await box.close()


class MergingChannel(Channel):
    """A channel that sends what waits for one reader of one game as one message (mail)."""

    async def deliver_merged(self, rows):
        await self.hold.wait()
        texts = [r.body["text"] for r in rows]
        for text in texts:
            if self.fail.get(text, 0) > 0:
                self.fail[text] -= 1
                raise ConnectionError("the wire is down")
        self.wire.append((rows[0].recipient, " + ".join(texts)))


def merging_outbox(engine, channel: MergingChannel, linger: float = 0.05) -> Outbox:
    return Outbox(engine, "test", channel.deliver, attempts=3, first_delay=0.01, on_dead=channel.on_dead,
                  deliver_merged=channel.deliver_merged, linger=linger)


async def test_what_one_batch_brings_a_reader_goes_out_as_one_message_per_game(database):
    channel = MergingChannel()
    box = merging_outbox(database, channel)
    await box.start()
    await box.stage("g:1", "g", say("ann", "votes revealed") + say("bob", "votes revealed"))
    await box.stage("g:2", "g", say("ann", "quest opens", "your choices"))
    await box.stage("h:1", "h", say("ann", "another game"))
    await box.idle()
    assert sorted(channel.wire) == [("ann", "another game"), ("ann", "votes revealed + quest opens + your choices"),
                                    ("bob", "votes revealed")]
    assert (await box.counts()) == {"sent": 5}


async def test_a_merged_message_that_fails_is_sent_again_whole_and_never_split(database):
    channel = MergingChannel()
    channel.fail["two"] = 1
    box = merging_outbox(database, channel)
    await box.start()
    await box.stage("g:1", "g", say("ann", "one", "two"))
    await box.idle()
    assert channel.wire == [("ann", "one + two")]
    assert (await box.counts()) == {"sent": 2}
