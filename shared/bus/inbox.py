"""The in-process bus's durable inbox: a command is committed to the ``inbox`` table before
``send_command`` returns, so a process killed at any moment loses no command a sender was told
was sent.

- ``put``: the command is written (with the others arriving meanwhile: one transaction for a
  burst) and handed to the bus's queue, in order, only once committed.
- ``done``: the command was handled (the engine acknowledges after its own commit) or
  dead-lettered; its row is deleted with the others done lately, in one statement (deletes wait
  for the next write or ``delete_delay``). A crash before the delete delivers it once more: the
  engine drops a command id it has processed.
- ``open``: what the table still holds, in the order it was sent, for the bus to deliver again
  before anything new.

The table (``message_id`` primary key, ``seq`` for the order, ``body``, ``received_at``) comes
from the engine's migrations (``shared/migrations/versions/0003_inbox.py``); it is
looked up here with SQLAlchemy Core so the bus does not import the engine.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from sqlalchemy import BigInteger, Column, DateTime, LargeBinary, MetaData, String, Table, delete, func, select
from sqlalchemy import event as sa_event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

log = logging.getLogger(__name__)


def inbox_table(name: str) -> Table:
    return Table(
        name, MetaData(),
        Column("message_id", String(200), primary_key=True),
        Column("seq", BigInteger, nullable=False),
        Column("body", LargeBinary, nullable=False),  # the command envelope's JSON, byte for byte
        Column("received_at", DateTime(timezone=True), nullable=False),
    )


INBOX = inbox_table("inbox")
#: The Telegram gateway's updates, kept the same way (services/telegram_gateway/polling.py).
UPDATE_INBOX = inbox_table("update_inbox")

#: Deletes per statement (SQLite's bound-parameter limit is well above it).
_CHUNK = 500


def _engine(url: str) -> AsyncEngine:
    if not url.startswith("sqlite"):
        return create_async_engine(url, pool_size=2, max_overflow=2, pool_pre_ping=True)
    engine = create_async_engine(url, connect_args={"timeout": 30})

    @sa_event.listens_for(engine.sync_engine, "connect")
    def _sqlite_pragmas(dbapi_connection, _record) -> None:  # pragma: no cover - driver hook
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")  # as the engine's store: a commit survives a killed process
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    return engine


def message_id_of(body: bytes) -> str:
    """The envelope's message_id; a fresh id for a body that is no envelope (it is still kept)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        data = None
    value = data.get("message_id") if isinstance(data, dict) else None
    return value[:200] if isinstance(value, str) and value else f"raw:{uuid.uuid4()}"


@dataclass(frozen=True)
class Kept:
    """What an inbox keeps: its table, and how a body's key in it is read."""

    table: Table
    key_of: Callable[[bytes], str]


class InboxMissing(RuntimeError):
    """The database has no inbox table: the engine's migrations have not run."""


class Inbox:
    def __init__(self, url: str, *, delete_delay: float = 0.2, max_deletes: int = 2000, table: Table = INBOX,
                 key_of: Callable[[bytes], str] = message_id_of, engine: AsyncEngine | None = None) -> None:
        """``table``: the table kept (the bus's commands by default); ``key_of``: a body's key in it;
        ``engine``: the owner's engine on ``url``, used (and left open) instead of one of the inbox's
        own, so that one process does not write one SQLite file through two pools."""
        self.kept = Kept(table, key_of)
        self.database: AsyncEngine | str = engine if engine is not None else url  # a URL: an engine of its own
        self.delete_delay = delete_delay  # how long handled commands' rows may wait to be deleted together
        self.max_deletes = max_deletes  # ... or how many
        self._engine: AsyncEngine | None = None
        self._seq = 0
        self._puts: list[tuple[str, bytes, asyncio.Future]] = []
        self._done: list[str] = []
        self._wake = asyncio.Event()
        self._writer: asyncio.Task | None = None
        self._closing = False
        self._on_stored: Callable[[str, bytes], None] = lambda key, body: None

    async def open(self, on_stored: Callable[[str, bytes], None]) -> list[tuple[str, bytes]]:
        """Start; returns the rows left by an earlier run, oldest first. ``on_stored(key, body)`` is
        called for each command once committed, in the order the commands were put."""
        self._engine = _engine(self.database) if isinstance(self.database, str) else self.database
        table = self.kept.table
        try:
            async with self._engine.connect() as conn:
                rows = (await conn.execute(select(table.c.message_id, table.c.body).order_by(table.c.seq))).all()
                top = (await conn.execute(select(func.max(table.c.seq)))).scalar()
        except DBAPIError as error:
            await self._dispose()
            raise InboxMissing(f"the {table.name} table cannot be read: {error.orig!r}; without it, run the "
                               "migrations (avalon migrate) first") from None
        self._seq = top or 0
        self._on_stored = on_stored
        self._wake = asyncio.Event()
        self._closing = False
        self._writer = asyncio.create_task(self._write_loop())
        return [(key, bytes(body)) for key, body in rows]

    async def put(self, body: bytes) -> None:
        """Returns once the command is committed (and handed on); raises if it could not be."""
        if self._writer is None or self._writer.done() or self._closing:
            raise RuntimeError("the inbox is not open: await bus.start() first")
        future = asyncio.get_running_loop().create_future()
        self._puts.append((self.kept.key_of(body), body, future))
        self._wake.set()
        await future

    def done(self, key: str) -> None:
        """The command was handled or dead-lettered: its row goes with the next group of deletes."""
        self._done.append(key)
        self._wake.set()

    async def close(self, timeout: float = 5.0) -> None:
        """Commit what is being put and delete what was handled (a while at most), then stop."""
        if self._writer is not None:
            self._closing = True
            self._wake.set()
            try:
                await asyncio.wait_for(asyncio.shield(self._writer), timeout)
            except Exception:  # noqa: BLE001 - stopping regardless; what is left waits for the next start
                log.warning("the inbox could not be written before closing", exc_info=True)
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
            self._writer = None
        for _, _, future in self._puts:  # never committed: their senders are not told they were sent
            if not future.done():
                future.set_exception(RuntimeError("the bus is closing"))
        self._puts.clear()
        await self._dispose()

    async def _dispose(self) -> None:
        if self._engine is not None and isinstance(self.database, str):
            await self._engine.dispose()
        self._engine = None

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._puts:  # deletes only: they wait a while for more, or for a write to join
                deadline = loop.time() + self.delete_delay
                while not self._puts and len(self._done) < self.max_deletes and not self._closing:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    try:
                        await asyncio.wait_for(self._wake.wait(), remaining)
                    except asyncio.TimeoutError:
                        break
                    self._wake.clear()
            puts, self._puts = self._puts, []
            done, self._done = self._done, []
            # close() may cancel this task: a write is run to its end all the same (a statement
            # cancelled on SQLite can leave the file locked; see shared.db.to_the_end)
            write = asyncio.ensure_future(self._write(puts, done))
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:
                if not write.done():
                    await asyncio.wait([write])
                if write.done() and not write.cancelled() and write.exception() is None:
                    self._stored(puts)
                else:
                    self._puts[:0] = puts  # close() fails them
                raise
            except Exception as error:
                log.exception("could not write %d commands to the inbox", len(puts))
                self._done[:0] = done
                for _, _, future in puts:
                    if not future.done():
                        future.set_exception(error)
                if self._closing:
                    return
                await asyncio.sleep(self.delete_delay)
                if self._done:
                    self._wake.set()
                continue
            self._stored(puts)
            if self._closing and not self._puts:
                return

    def _stored(self, puts: list[tuple[str, bytes, asyncio.Future]]) -> None:
        for key, body, future in puts:
            if not future.done():  # a sender cancelled meanwhile: it was not told it was sent, but it was
                future.set_result(None)
            self._on_stored(key, body)

    async def _write(self, puts: list[tuple[str, bytes, asyncio.Future]], done: list[str]) -> None:
        if not puts and not done:
            return
        assert self._engine is not None
        now = datetime.now(timezone.utc)
        rows = []
        for key, body, _ in puts:
            self._seq += 1
            rows.append(dict(message_id=key, seq=self._seq, body=body, received_at=now))
        table = self.kept.table
        async with self._engine.begin() as conn:
            if rows:  # a command id already waiting (sent twice): one row, delivered as often as sent
                insert = (postgresql if self._engine.dialect.name == "postgresql" else sqlite).insert
                await conn.execute(insert(table).on_conflict_do_nothing(index_elements=["message_id"]), rows)
            for start in range(0, len(done), _CHUNK):
                await conn.execute(delete(table).where(table.c.message_id.in_(done[start:start + _CHUNK])))
