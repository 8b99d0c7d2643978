"""The attempts at one message (or at several of one recipient merged into one): through the
channel's wire, retried with backoff, then dead. ``Undeliverable`` is dead at once; ``Unavailable``
(the server is down) waits for the server, however long that takes, spending no attempt.

A dead row is kept in the table with its error, logged with its event and recipient, counted
(``avalon_dead_messages_total``) and handed to ``on_dead``, so the channel can tell the group or
the host."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Awaitable, Callable

from sqlalchemy import update

from avalon.shared import ops
from avalon.shared.db import to_the_end

from ..rows import OutboxRow
from .marks import SentMarks
from .messages import Deliver, DeliverMerged, Row, Unavailable, Undeliverable
from .slots import Slots

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backoff:
    """How often a message is tried, and how long it waits between tries (doubling up to ``max_delay``)."""

    attempts: int = 5
    first_delay: float = 0.5
    max_delay: float = 30.0

    def first(self, spent: int) -> float:
        """The wait after a failure, going on from the attempts already spent (a restart does not
        start it afresh)."""
        return min(self.first_delay * 2 ** min(spent, 30), self.max_delay)

    def after(self, delay: float) -> float:
        return min(delay * 2, self.max_delay)


class Attempts:
    def __init__(self, engine, channel: str, deliver: Deliver, backoff: Backoff, slots: Slots, marks: SentMarks, *,
                 on_dead: Callable[[Row, str], Awaitable[None]] | None = None,
                 deliver_merged: DeliverMerged | None = None) -> None:
        self.engine = engine  # where a failure's error and a dead row's state are written
        self.channel = channel
        self.deliver = deliver
        self.deliver_merged = deliver_merged
        self.backoff = backoff
        self.slots = slots  # where an edit finds the message it edits
        self.marks = marks  # where what was sent goes
        self.on_dead = on_dead
        self._dead = ops.DEAD_MESSAGES.labels(service="delivery", channel=channel)

    async def send(self, rows: list[Row]) -> None:
        """One row through ``deliver``, or several merged into one message (``deliver_merged``):
        retried with backoff, then dead."""
        row = rows[0]
        delay = self.backoff.first(row.attempts)
        error = ""
        while row.attempts < self.backoff.attempts:
            row.attempts += 1
            for other in rows[1:]:
                other.attempts = row.attempts
            try:
                if self.deliver_merged is not None:
                    ref = await self.deliver_merged(rows)
                else:
                    wanted = row.body.get("edit_slot")
                    ref = await self.deliver(row, self.slots.get(wanted) if wanted else None)
            except asyncio.CancelledError:
                raise
            except Undeliverable as failure:
                error = str(failure) or type(failure).__name__
                break
            except Exception as failure:  # noqa: BLE001 - tried again, then dead and reported
                error = f"{type(failure).__name__}: {failure}"[:500]
                if isinstance(failure, Unavailable):  # waits for the server as long as it takes
                    row.attempts -= 1
                    for other in rows[1:]:
                        other.attempts = row.attempts
                    log.warning("%s outbox: message %d to %s waits for the server (retrying in %g s): %s",
                                self.channel, row.id, row.recipient, delay, error)
                else:
                    log.warning("%s outbox: message %d to %s failed (attempt %d of %d): %s", self.channel,
                                row.id, row.recipient, row.attempts, self.backoff.attempts, error)
                for each in rows:
                    await self._record(each, "pending", error)
                await asyncio.sleep(delay)
                delay = self.backoff.after(delay)
                continue
            for each in rows:
                self.marks.sent(each, ref)
            return
        for each in rows:
            await self._died(each, error or "no attempt left")

    async def _record(self, row: Row, state: str, error: str) -> None:
        try:  # the queues' workers are cancelled at a stop: never in the middle of this write
            await to_the_end(self._write_state(row, state, error))
        except Exception:  # noqa: BLE001 - the row stays pending: sent again after a restart
            log.exception("%s outbox: could not record the state of message %d", self.channel, row.id)

    async def _write_state(self, row: Row, state: str, error: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(update(OutboxRow).where(OutboxRow.id == row.id).values(
                state=state, attempts=row.attempts, last_error=error,
                done_at=datetime.now(timezone.utc) if state != "pending" else None))

    async def _died(self, row: Row, error: str) -> None:
        await self._record(row, "dead", error)
        self._dead.inc()
        log.error("%s outbox: gave up on message %d of event %s to %s after %d attempts: %s", self.channel,
                  row.id, row.event_id, row.recipient, row.attempts, error)
        if self.on_dead is not None:
            try:
                await self.on_dead(row, error)
            except Exception:  # noqa: BLE001
                log.exception("%s outbox: could not report dead message %d", self.channel, row.id)
