"""The gateway's memory survives a restart: a snapshot in the project's database, written once
a second when it changed, after each update (the gateway asks, and waits), and on shutdown. Saves
asked for while one is being written share the next write. Each game's own memory is not in it: the
outbox keeps it in a row of its own, with the events that changed it."""

from __future__ import annotations

import asyncio
import logging
import pickle
from dataclasses import MISSING, fields
from datetime import datetime, timezone

from sqlalchemy import select

from avalon.shared import snapshots
from avalon.shared.db import make_engine, migrate, to_the_end, upsert
from avalon.shared.delivery.rows import GatewayStateRow

from .memory import Memory

log = logging.getLogger(__name__)
KEY = "telegram"

#: Seconds at least between two snapshots: the updates handled meanwhile share the next one (under load a
#: snapshot each commit took an eighth of the gateway's time; an update waits this much longer at most).
GAP = 0.1


class MemoryKeeper:
    def __init__(self, database_url: str, memory_of, *, interval: float = 1.0) -> None:
        self.engine = make_engine(database_url)
        self.memory_of = memory_of  # a callable returning the live Memory
        self.interval = interval
        self._last: bytes | None = None
        self.saved_at: datetime | None = None  # when the snapshot load() read was written
        self._task: asyncio.Task | None = None
        self._writing = asyncio.Lock()
        self._writes = self._written = 0  # snapshots taken; the latest taken of those written
        self._wrote_at = 0.0  # the event loop's time when the last snapshot was taken

    async def load(self) -> Memory | None:
        await migrate(self.engine)
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(GatewayStateRow.blob, GatewayStateRow.updated_at)
                                      .where(GatewayStateRow.key == KEY))).first()
        if row is None:
            return None
        try:
            memory = snapshots.loads(row.blob)
        except Exception:  # an older, unreadable snapshot: start afresh rather than not at all
            log.exception("the gateway's saved memory could not be read; starting empty")
            return None
        self._last = row.blob
        at = row.updated_at
        self.saved_at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
        if not isinstance(memory, Memory):
            return None
        for kept_apart in ("games", "offers"):  # a snapshot from before the games were kept with the outbox
            memory.__dict__.pop(kept_apart, None)
        for f in fields(Memory):  # a snapshot from before a field was added: the field starts empty
            if f.name not in memory.__dict__ and f.default_factory is not MISSING:
                setattr(memory, f.name, f.default_factory())
        return memory

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await to_the_end(self.save())  # close() cancels this task: never in the middle of a write
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("could not save the gateway's memory; retrying")

    async def save(self) -> None:
        """Returns once a snapshot taken after this call is written (or was the same as the last).
        One write at a time, GAP apart; the saves asked for meanwhile share the next one. (A snapshot
        per update, each waiting for a database connection, left the updates and the events behind
        them queued: bench/load_bench.py, 100 games, a vote's tally edited after 33 s. The games are
        not in it: each is kept in its own row, see ``TelegramGateway.game_blob``.)"""
        asked = self._writes
        async with self._writing:
            if self._written > asked:  # a snapshot taken after this call was written meanwhile
                return
            loop = asyncio.get_running_loop()
            wait = self._wrote_at + GAP - loop.time()
            if wait > 0:  # saves asked for meanwhile queue on the lock: they share this one
                await asyncio.sleep(wait)
            self._wrote_at = loop.time()
            self._writes += 1  # the snapshot is taken now: it holds every change made before this line
            mine = self._writes
            await self._write()
            self._written = mine

    async def _write(self) -> None:
        blob = pickle.dumps(self.memory_of(), protocol=pickle.HIGHEST_PROTOCOL)
        if blob == self._last:
            return
        async with self.engine.begin() as conn:
            await conn.execute(upsert(self.engine, GatewayStateRow, ["key"], ["blob", "updated_at"]),
                               {"key": KEY, "blob": blob, "updated_at": datetime.now(timezone.utc)})
        self._last = blob

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.save()
        await self.engine.dispose()
