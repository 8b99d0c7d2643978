"""The in-process bus's durable inbox (``shared/bus/inbox.py``), on real SQLite and PostgreSQL.

A process killed at any moment is modelled by abandoning a bus: its tasks are cancelled and its
database connections dropped without ``close()`` (which would still delete what was handled)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from avalon.shared.bus import InProcessBus, PoisonMessage
from avalon.shared.bus.inbox import INBOX, InboxMissing
from avalon.shared.protocol import CommandEnvelope
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store

from .engine_support import create_pg_database, drop_pg_database, lobby_commands, wait_processed

TIMEOUT = 10.0


@pytest.fixture(params=["sqlite", "postgres"])
async def db_url(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}"
        name = None
    else:
        url, name = await create_pg_database()
    store = Store(url)
    await store.migrate()
    await store.close()
    yield url
    if name is not None:
        await drop_pg_database(name)


def command(text: str, game_id: str = "g1") -> CommandEnvelope:
    return CommandEnvelope(game_id=game_id, actor="alice", phase_id=3, command={"type": "confer", "text": text})


def text_of(body: bytes) -> str:
    return CommandEnvelope.model_validate_json(body).command.text


async def eventually(check, what: str, timeout: float = TIMEOUT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.02)


async def rows_in_inbox(url: str) -> int:
    store = Store(url)
    try:
        async with store.engine.connect() as conn:
            return (await conn.execute(select(func.count()).select_from(INBOX))).scalar()
    finally:
        await store.close()


async def abandon(bus: InProcessBus) -> None:
    """The process is killed: nothing more runs, nothing is written, its connections are gone."""
    tasks = [*bus._tasks, bus.inbox._writer]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await bus.inbox._engine.dispose()


class Recorder:
    """A command handler that records what it got and, once armed, never returns from ``stall_at``."""

    def __init__(self, stall_at: str | None = None, poison: str | None = None) -> None:
        self.got: list[str] = []
        self.stall_at = stall_at
        self.poison = poison

    async def __call__(self, body: bytes) -> None:
        text = text_of(body)
        self.got.append(text)
        if text == self.poison:
            raise PoisonMessage("never handleable")
        if text == self.stall_at:
            await asyncio.Event().wait()  # killed while handling it


async def test_send_command_returns_only_once_the_command_is_committed_to_the_inbox(db_url):
    bus = InProcessBus(inbox_url=db_url)
    await bus.start()
    try:
        await bus.send_command(command("durable"))
        assert await rows_in_inbox(db_url) == 1  # seen from another connection: committed
    finally:
        await abandon(bus)


async def test_commands_not_yet_handled_are_delivered_by_a_new_bus_on_the_same_database_in_the_order_sent_and_handled_ones_are_not(db_url):  # noqa: E501
    first = InProcessBus(inbox_url=db_url)
    await first.start()
    handler = Recorder(stall_at="#4")
    await first.consume_commands(handler)
    sent = [f"#{i}" for i in range(10)]
    for text in sent:
        await first.send_command(command(text, game_id=f"g{int(text[1:]) % 3}"))

    async def four_handled_and_deleted() -> bool:
        return handler.got[-1:] == ["#4"] and await rows_in_inbox(db_url) == 6

    await eventually(four_handled_and_deleted, "#0-#3 are handled and their rows deleted, #4 is being handled")
    await abandon(first)

    second = InProcessBus(inbox_url=db_url)
    await second.start()
    try:
        again = Recorder()
        await second.consume_commands(again)
        await second.send_command(command("new"))

        async def all_delivered() -> bool:
            return len(again.got) == 7

        await eventually(all_delivered, "the rest and the new one are delivered")
        await asyncio.sleep(0.3)
        assert again.got == ["#4", "#5", "#6", "#7", "#8", "#9", "new"]  # in order, before anything new
    finally:
        await second.close()
    assert await rows_in_inbox(db_url) == 0, "a clean close deletes every handled command"


async def test_a_burst_of_commands_sent_at_once_is_committed_in_a_few_transactions_and_delivered_in_order(db_url):
    bus = InProcessBus(inbox_url=db_url)
    await bus.start()
    writes = 0
    write = bus.inbox._write

    async def counted(puts, done):
        nonlocal writes
        writes += bool(puts)
        await write(puts, done)

    bus.inbox._write = counted
    handler = Recorder()
    await bus.consume_commands(handler)
    sent = [f"#{i}" for i in range(300)]
    try:
        for batch in range(0, 300, 100):  # three bursts of 100 concurrent senders
            await asyncio.gather(*(bus.send_command(command(t)) for t in sent[batch:batch + 100]))

        async def handled() -> bool:
            return len(handler.got) == 300

        await eventually(handled, "every command is handled")
        assert handler.got == sent
        assert writes <= 12, f"{writes} transactions for 300 commands"

        async def deleted() -> bool:
            return await rows_in_inbox(db_url) == 0

        await eventually(deleted, "the handled commands' rows are deleted, together")
    finally:
        await bus.close()


async def test_a_poison_command_is_dead_lettered_once_and_not_delivered_again_after_a_restart(db_url):
    bus = InProcessBus(inbox_url=db_url)
    await bus.start()
    handler = Recorder(poison="poison", stall_at="stall")
    await bus.consume_commands(handler)
    await bus.send_command(command("poison"))
    await bus.send_command(command("stall"))

    async def stalled() -> bool:
        return handler.got == ["poison", "stall"] and await rows_in_inbox(db_url) == 1

    await eventually(stalled, "the poison is settled and the next command is being handled")
    assert [text_of(b) for b in await bus.dead_letters()] == ["poison"]
    await abandon(bus)

    second = InProcessBus(inbox_url=db_url)
    await second.start()
    again = Recorder()
    try:
        await second.consume_commands(again)

        async def delivered() -> bool:
            return bool(again.got)

        await eventually(delivered, "the command not settled is delivered again")
        await asyncio.sleep(0.2)
        assert again.got == ["stall"]
    finally:
        await second.close()


async def test_raw_bytes_left_in_the_inbox_are_delivered_again_byte_for_byte(db_url):
    garbage = b"\x00\xff{not json at all"
    bus = InProcessBus(inbox_url=db_url)
    await bus.start()
    await bus.send_raw_command(garbage)
    await bus.send_command(command("after"))
    await abandon(bus)  # nobody consumed them

    raw: list[bytes] = []
    second = InProcessBus(inbox_url=db_url)
    await second.start()

    async def record(body: bytes) -> None:
        raw.append(body)

    try:
        await second.consume_commands(record)
        await second.idle()
        assert raw[0] == garbage and type(raw[0]) is bytes
        assert [text_of(b) for b in raw[1:]] == ["after"]
    finally:
        await second.close()


async def test_a_garbage_body_the_handler_dead_letters_goes_byte_for_byte_and_leaves_the_inbox(db_url):
    bus = InProcessBus(inbox_url=db_url)
    await bus.start()
    garbage = b"\x00\xff{not json at all"
    got: list[bytes] = []

    async def handler(body: bytes) -> None:
        got.append(body)
        raise PoisonMessage("malformed")

    try:
        await bus.consume_commands(handler)
        await bus.send_raw_command(garbage)

        async def dead() -> bool:
            return bool(got)

        await eventually(dead, "the garbage reaches the handler")
        await asyncio.sleep(0.05)
        assert await bus.dead_letters() == [garbage]
        assert got == [garbage] and type(got[0]) is bytes
    finally:
        await bus.close()
    assert await rows_in_inbox(db_url) == 0


async def test_a_command_that_always_fails_is_dead_lettered_after_delivery_limit_attempts_and_leaves_the_inbox(db_url):
    bus = InProcessBus(inbox_url=db_url, delivery_limit=2)
    await bus.start()
    attempts: dict[str, int] = {}

    async def handler(body: bytes) -> None:
        text = text_of(body)
        attempts[text] = attempts.get(text, 0) + 1
        if text == "always fails":
            raise RuntimeError("transient, forever")

    try:
        await bus.consume_commands(handler)
        await bus.send_command(command("always fails"))
        await bus.send_command(command("fine"))

        async def settled() -> bool:
            return attempts.get("fine") == 1 and attempts.get("always fails") == 2

        await eventually(settled, "the failing command is tried twice and the next one served")
        await asyncio.sleep(0.3)
        assert attempts == {"always fails": 2, "fine": 1}
        assert [text_of(b) for b in await bus.dead_letters()] == ["always fails"]
    finally:
        await bus.close()
    assert await rows_in_inbox(db_url) == 0


async def test_a_bus_whose_database_has_no_inbox_table_says_to_migrate(tmp_path):
    bus = InProcessBus(inbox_url=f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    with pytest.raises(InboxMissing, match="migrat"):
        await bus.start()


async def test_the_engine_applies_a_command_redelivered_after_its_commit_only_once(db_url):
    """Killed between the engine's commit and the inbox's delete: the command comes again and the
    engine drops it as a command id it has processed."""
    bus = InProcessBus(inbox_url=db_url)
    bus.inbox.done = lambda key: None  # killed before any handled command's row is deleted
    store = Store(db_url)
    engine = EngineService(store, bus, channels=channel_map())
    await bus.start()
    await engine.start()
    commands = lobby_commands("g1", 5)
    for envelope in commands:
        await bus.send_command(envelope)
    await wait_processed(store, commands[-1].message_id)
    version = (await store.load("g1")).version
    assert await rows_in_inbox(db_url) == len(commands)
    await abandon(bus)
    await engine.stop()
    await store.close()

    bus = InProcessBus(inbox_url=db_url)
    store = Store(db_url)
    engine = EngineService(store, bus, channels=channel_map())
    await bus.start()
    await engine.start()
    try:
        async def drained() -> bool:
            return await rows_in_inbox(db_url) == 0

        await eventually(drained, "the redelivered commands are handled and deleted")
        assert (await store.load("g1")).version == version, "nothing applied twice"
    finally:
        await engine.stop()
        await bus.close()
        await store.close()


async def test_without_an_inbox_url_the_bus_touches_no_database():
    bus = InProcessBus()
    await bus.start()
    got: list[str] = []

    async def handler(body: bytes) -> None:
        got.append(text_of(body))

    try:
        await bus.consume_commands(handler)
        await bus.send_command(command("in memory"))
        await bus.idle()
        assert got == ["in memory"] and bus.inbox is None
    finally:
        await bus.close()
