"""The marks of messages sent: each message sent is marked so in the table, together with the
others sent within ``MARK_DELAY`` and with the slots they filled (one transaction for all of them,
not one each). A mark that cannot be written (the database is away) is kept and written later; a
crash before it is written sends that message again on the next start."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import bindparam, update

from avalon.shared.db import to_the_end, upsert

from ..rows import OutboxRow, SlotRow
from .messages import Row
from .slots import Slots

log = logging.getLogger(__name__)

#: Seconds the marks of messages sent wait to be written together (one transaction for all of them, not
#: one each). A crash before they are written sends those messages again on the next start.
MARK_DELAY = 0.05


class SentMarks:
    def __init__(self, engine, channel: str, slots: Slots) -> None:
        self.engine = engine
        self.channel = channel
        self.slots = slots
        self._marks: list[dict[str, Any]] = []  # messages sent, their rows not yet marked so
        self._writer: asyncio.Task | None = None
        self._writing = False  # marks taken from the list, their transaction not committed yet

    def sent(self, row: Row, ref: str | None) -> None:
        """Sent: known at once (an edit of its slot finds it); marked in the table with the others
        sent within MARK_DELAY."""
        slot = row.body.get("slot")
        if slot and ref is not None:
            self.slots.remember(slot, ref)
        self._marks.append({"row": row.id, "tries": row.attempts, "at": datetime.now(timezone.utc)})
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_soon())

    @property
    def waiting(self) -> bool:
        """Whether something sent is not marked so in the table yet (waiting, or being written)."""
        return bool(self._marks) or self.slots.unwritten or self._writing

    async def close(self) -> None:
        """Write what is waiting now; what cannot be written is sent again on the next start."""
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
        try:
            await self._write()
        except Exception as error:  # noqa: BLE001 - those rows are sent again on the next start
            log.warning("%s outbox: could not mark %d messages sent before stopping (%s); they are sent again "
                        "on the next start", self.channel, len(self._marks), error)

    async def _write_soon(self) -> None:
        delay = MARK_DELAY
        failing = False
        while self.waiting:
            await asyncio.sleep(delay)
            try:
                await to_the_end(self._write())  # close() cancels this task: never in the middle of a write
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - the database is away: kept, and tried again
                if not failing:
                    log.warning("%s outbox: could not mark %d messages sent (%s); trying again", self.channel,
                                len(self._marks), " ".join(str(error).split())[:200])
                failing, delay = True, min(max(delay, 0.2) * 2, 5.0)
                continue
            if failing:
                log.info("%s outbox: messages sent are marked again", self.channel)
            failing, delay = False, MARK_DELAY

    async def _write(self) -> None:
        if not (self._marks or self.slots.unwritten):
            return
        marks, self._marks = self._marks, []
        refs = self.slots.take_unwritten()
        self._writing = True
        try:
            async with self.engine.begin() as conn:
                if marks:
                    await conn.execute(update(OutboxRow).where(OutboxRow.id == bindparam("row")).values(
                        state="sent", attempts=bindparam("tries"), done_at=bindparam("at")), marks)
                if refs:
                    await conn.execute(upsert(self.engine, SlotRow, ["channel", "slot"], ["ref"]),
                                       [{"channel": self.channel, "slot": slot, "ref": ref} for slot, ref in refs.items()])
        except BaseException:
            self._marks[:0] = marks  # tried again with the next
            self.slots.put_back(refs)
            raise
        finally:
            self._writing = False
