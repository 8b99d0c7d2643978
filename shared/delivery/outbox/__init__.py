"""A channel's durable outbox: what an event asked to send is committed, with the mark that the
event is handled and the channel's memory of that game, in one transaction; only then is the
event acknowledged. A worker per recipient sends the rows in order, through the channel's
``deliver``; a crash at any point loses nothing (pending rows are sent on the next start) and
sends again at most the rows that were in flight.

A row that still fails after its attempts is *dead*: kept in the table with its error, logged
with its event and recipient, counted (``avalon_dead_messages_total``, ``dead_count()``), and
handed to ``on_dead`` so the channel can tell the group or the host. A server that is down
(``Unavailable``) spends no attempt: the message waits for it, however long that takes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from shared import ops
from shared.db import upsert

from ..tables import ChannelGameRow, HandledEvent, OutboxRow, SlotRow

log = logging.getLogger(__name__)

#: Seconds the marks of messages sent wait to be written together (one transaction for all of them, not
#: one each). A crash before they are written sends those messages again on the next start.
MARK_DELAY = 0.05


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)  # SQLite drops the zone


class Undeliverable(Exception):
    """This message cannot be delivered and trying again will not help: dead at once."""


class Unavailable(Exception):
    """The server this channel sends through is down (unreachable, or closing the connection): not
    this message's fault, so it waits and is tried again with backoff, spending no attempt."""


@dataclass(frozen=True)
class Outgoing:
    """One message for one recipient. ``body`` is JSON for the channel's wire. A body with
    ``"slot": NAME`` is remembered once sent (its ``ref``), so that a later body with
    ``"edit_slot": NAME`` can edit it in place."""

    recipient: str
    body: dict[str, Any]


@dataclass
class Row:
    id: int
    event_id: str
    game_id: str
    recipient: str
    body: dict[str, Any]
    attempts: int = 0


@dataclass
class _Staged:
    event_id: str
    game_id: str
    messages: list[Outgoing]
    game_blob: bytes | None
    done: asyncio.Future
    ids: list[int] = field(default_factory=list)


#: deliver(row, slot_ref) -> the sent message's reference (for a slot), or None
Deliver = Callable[[Row, str | None], Awaitable[str | None]]
#: deliver_merged(rows): the rows of one recipient and one game sent as one message
DeliverMerged = Callable[[list[Row]], Awaitable[None]]


class Outbox:
    def __init__(self, engine, channel: str, deliver: Deliver, *, attempts: int = 5, first_delay: float = 0.5,
                 max_delay: float = 30.0, on_dead: Callable[[Row, str], Awaitable[None]] | None = None,
                 deliver_merged: DeliverMerged | None = None, linger: float = 0.0) -> None:
        self.engine = engine  # a SQLAlchemy AsyncEngine on the project's database
        self.channel = channel
        self.deliver = deliver
        #: With ``deliver_merged``, a recipient's rows of one game that are waiting together (what one
        #: batch of events brings them, staged within ``linger`` seconds) go out as one message.
        self.deliver_merged = deliver_merged
        self.linger = linger
        self.attempts = attempts
        self.first_delay, self.max_delay = first_delay, max_delay
        self.on_dead = on_dead
        self._queues: dict[str, deque[Row]] = {}
        self._workers: dict[str, asyncio.Task] = {}
        self._slots: dict[str, str] = {}
        self._dead = ops.DEAD_MESSAGES.labels(service="delivery", channel=channel)
        self._depth = ops.OUTBOX_DEPTH.labels(service=f"{channel}-outbox")
        self._pending = 0
        self._closing = False
        self._marks: list[dict[str, Any]] = []  # messages sent, their rows not yet marked so
        self._slot_refs: dict[str, str] = {}  # slots sent, not yet written
        self._marking: asyncio.Task | None = None
        self._staging: list[_Staged] = []  # events waiting for the next commit
        self._stager: asyncio.Task | None = None

    # -- start and stop --------------------------------------------------------------------

    async def start(self) -> None:
        """Load the slots and send what was pending when the process last stopped."""
        async with self.engine.connect() as conn:
            slots = await conn.execute(select(SlotRow.slot, SlotRow.ref).where(SlotRow.channel == self.channel))
            self._slots = dict(slots.all())
            rows = await conn.execute(
                select(OutboxRow.id, OutboxRow.event_id, OutboxRow.game_id, OutboxRow.recipient, OutboxRow.body,
                       OutboxRow.attempts)
                .where(OutboxRow.channel == self.channel, OutboxRow.state == "pending").order_by(OutboxRow.id))
            pending = [Row(id, event, game, recipient, json.loads(body), attempts)
                       for id, event, game, recipient, body, attempts in rows.all()]
        if pending:
            log.info("%s outbox: %d messages still to send from before the restart", self.channel, len(pending))
        self._enqueue(pending)

    async def close(self) -> None:
        self._closing = True
        for task in self._workers.values():
            task.cancel()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        self._depth.dec(self._pending)
        self._pending = 0
        if self._stager is not None:  # what is being committed is committed (or not: then sent again)
            await asyncio.gather(self._stager, return_exceptions=True)
        if self._marking is not None:
            self._marking.cancel()
            await asyncio.gather(self._marking, return_exceptions=True)
        try:
            await self._write_marks()
        except Exception as error:  # noqa: BLE001 - those rows are sent again on the next start
            log.warning("%s outbox: could not mark %d messages sent before stopping (%s); they are sent again "
                        "on the next start", self.channel, len(self._marks), error)

    # -- staging ---------------------------------------------------------------------------

    async def stage(self, event_id: str, game_id: str, messages: list[Outgoing], game_blob: bytes | None = None
                    ) -> bool:
        """Commit these messages, the mark that ``event_id`` is handled and the game's memory, at
        once. False (and nothing written) when the event was handled before: a redelivery.

        Events staged while a commit is under way are committed together in the next one (each
        still all or nothing): under load, one transaction for many events, not one each."""
        staged = _Staged(event_id, game_id, messages, game_blob, asyncio.get_running_loop().create_future())
        self._staging.append(staged)
        if self._stager is None or self._stager.done():
            self._stager = asyncio.create_task(self._stage_waiting())
        return await asyncio.shield(staged.done)

    async def _stage_waiting(self) -> None:
        while self._staging:
            batch, self._staging = self._staging, []
            try:
                await self._commit(batch)
            except IntegrityError:  # one of them was handled before: each on its own, to know which
                for staged in batch:
                    await self._stage_alone(staged)
                continue
            except Exception as error:  # noqa: BLE001 - each caller decides (the database may be away)
                for staged in batch:
                    if not staged.done.done():
                        staged.done.set_exception(error)
                continue
            for staged in batch:
                self._staged(staged)

    async def _stage_alone(self, staged: "_Staged") -> None:
        try:
            await self._commit([staged])
        except IntegrityError:
            if not staged.done.done():
                staged.done.set_result(False)  # handled before (the mark's primary key)
        except Exception as error:  # noqa: BLE001
            if not staged.done.done():
                staged.done.set_exception(error)
        else:
            self._staged(staged)

    async def _commit(self, batch: list["_Staged"]) -> None:
        now = datetime.now(timezone.utc)
        async with self.engine.begin() as conn:
            await conn.execute(insert(HandledEvent), [{"channel": self.channel, "event_id": s.event_id}
                                                      for s in batch])
            rows = [dict(channel=self.channel, game_id=s.game_id, event_id=s.event_id, recipient=m.recipient,
                         body=json.dumps(m.body, ensure_ascii=False), state="pending", attempts=0, created_at=now)
                    for s in batch for m in s.messages]
            if rows:  # one statement for all of them, their ids in their order
                result = await conn.execute(insert(OutboxRow).returning(OutboxRow.id, sort_by_parameter_order=True),
                                            rows)
                ids = iter(list(result.scalars()))
                for s in batch:
                    s.ids = [next(ids) for _ in s.messages]
            games = {s.game_id: s.game_blob for s in batch if s.game_blob is not None}  # the latest of each
            if games:
                await conn.execute(self._upsert_games(), [
                    {"channel": self.channel, "game_id": game, "blob": blob, "updated_at": now}
                    for game, blob in games.items()])

    def _staged(self, staged: "_Staged") -> None:
        self._enqueue([Row(id, staged.event_id, staged.game_id, m.recipient, m.body)
                       for id, m in zip(staged.ids, staged.messages)])
        if not staged.done.done():
            staged.done.set_result(True)

    async def post(self, game_id: str, message: Outgoing, reason: str = "direct") -> None:
        """A message that no event asked for (a button's redraw), sent in order after what this
        recipient already has in the outbox (so an edit finds the message it edits)."""
        now = datetime.now(timezone.utc)
        async with self.engine.begin() as conn:
            result = await conn.execute(insert(OutboxRow).values(
                channel=self.channel, game_id=game_id, event_id=reason, recipient=message.recipient,
                body=json.dumps(message.body, ensure_ascii=False), state="pending", attempts=0,
                created_at=now).returning(OutboxRow.id))
            row_id = result.scalar_one()
        self._enqueue([Row(row_id, reason, game_id, message.recipient, message.body)])

    async def record_dead(self, event_id: str, game_id: str, recipient: str, error: str) -> None:
        """An event that produced nothing to send (it could not be rendered): marked handled, and a
        dead row in its place, logged and counted like any message given up on."""
        now = datetime.now(timezone.utc)
        async with self.engine.begin() as conn:
            exists = await conn.execute(select(HandledEvent.event_id).where(
                HandledEvent.channel == self.channel, HandledEvent.event_id == event_id))
            if exists.first() is None:
                await conn.execute(insert(HandledEvent).values(channel=self.channel, event_id=event_id))
            await conn.execute(insert(OutboxRow).values(
                channel=self.channel, game_id=game_id, event_id=event_id, recipient=recipient, body="{}",
                state="dead", attempts=1, last_error=error[:2000], created_at=now, done_at=now))
        self._dead.inc()
        log.error("%s outbox: event %s for %s is dead: %s", self.channel, event_id, recipient, error)

    async def save_game(self, game_id: str, game_blob: bytes) -> None:
        """The channel's memory of a game changed without an event (a player's message did it)."""
        async with self.engine.begin() as conn:
            await conn.execute(self._upsert_games(), {"channel": self.channel, "game_id": game_id, "blob": game_blob,
                                                      "updated_at": datetime.now(timezone.utc)})

    async def handled(self, event_id: str) -> bool:
        async with self.engine.connect() as conn:
            found = await conn.execute(select(HandledEvent.event_id).where(
                HandledEvent.channel == self.channel, HandledEvent.event_id == event_id))
            return found.first() is not None

    def _upsert_games(self):
        return upsert(self.engine, ChannelGameRow, ["channel", "game_id"], ["blob", "updated_at"])

    async def games(self) -> dict[str, tuple[bytes, datetime]]:
        """The channel's memory of every game as last staged, and when: the least recently changed first."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(select(ChannelGameRow.game_id, ChannelGameRow.blob, ChannelGameRow.updated_at)
                                      .where(ChannelGameRow.channel == self.channel)
                                      .order_by(ChannelGameRow.updated_at))
            return {game: (blob, _aware(at)) for game, blob, at in rows.all()}

    def slot(self, name: str) -> str | None:
        return self._slots.get(name)

    # -- what operators see ----------------------------------------------------------------

    async def counts(self) -> dict[str, int]:
        async with self.engine.connect() as conn:
            rows = await conn.execute(select(OutboxRow.state, func.count()).where(
                OutboxRow.channel == self.channel).group_by(OutboxRow.state))
            return {state: count for state, count in rows.all()}

    async def dead_rows(self) -> list[Row]:
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                select(OutboxRow.id, OutboxRow.event_id, OutboxRow.game_id, OutboxRow.recipient, OutboxRow.body,
                       OutboxRow.attempts)
                .where(OutboxRow.channel == self.channel, OutboxRow.state == "dead").order_by(OutboxRow.id))
            return [Row(id, event, game, recipient, json.loads(body), attempts)
                    for id, event, game, recipient, body, attempts in rows.all()]

    @property
    def pending(self) -> int:
        return self._pending

    async def idle(self, timeout: float = 30.0) -> None:
        """Wait until nothing is left to send, and what was sent is marked so (tests)."""
        async def drained() -> None:
            while self._pending or self._marks or self._slot_refs:
                await asyncio.sleep(0.02)
        await asyncio.wait_for(drained(), timeout)

    # -- sending ---------------------------------------------------------------------------

    def _enqueue(self, rows: list[Row]) -> None:
        for row in rows:
            self._queues.setdefault(row.recipient, deque()).append(row)
            self._pending += 1
            self._depth.inc()
            worker = self._workers.get(row.recipient)
            if worker is None or worker.done():
                self._workers[row.recipient] = asyncio.create_task(self._work(row.recipient))

    async def _work(self, recipient: str) -> None:
        queue = self._queues[recipient]
        if self.deliver_merged is not None:
            await self._work_merged(queue)
            return
        while queue and not self._closing:
            batch = [queue.popleft()]  # rows that do not wait on each other go to the wire together
            while queue and not self._waits_on(queue[0], batch):
                batch.append(queue.popleft())
            await asyncio.gather(*(self._send(row) for row in batch))

    async def _work_merged(self, queue: deque[Row]) -> None:
        while queue and not self._closing:
            if self.linger:  # let the rest of the batch be staged: a linger, then while rows still come
                await asyncio.sleep(self.linger)
                quiet = min(0.1, self.linger / 4)
                for _ in range(int(4 * self.linger / quiet)):
                    waiting = len(queue)
                    await asyncio.sleep(quiet)
                    if len(queue) == waiting:
                        break
            game = queue[0].game_id
            rows = [queue.popleft()]
            while queue and queue[0].game_id == game:
                rows.append(queue.popleft())
            await self._send(rows)

    def _waits_on(self, row: Row, batch: list[Row]) -> bool:
        wanted = row.body.get("edit_slot")
        return bool(wanted) and any(other.body.get("slot") == wanted for other in batch)

    async def _send(self, rows: Row | list[Row]) -> None:
        """One row through ``deliver``, or several merged into one message (``deliver_merged``):
        retried with backoff, then dead."""
        rows = [rows] if isinstance(rows, Row) else rows
        row = rows[0]
        # the backoff goes on from the attempts already spent (a restart does not start it afresh)
        delay = min(self.first_delay * 2 ** min(row.attempts, 30), self.max_delay)
        error = ""
        try:
            while row.attempts < self.attempts:
                row.attempts += 1
                for other in rows[1:]:
                    other.attempts = row.attempts
                try:
                    if self.deliver_merged is not None:
                        ref = await self.deliver_merged(rows)
                    else:
                        wanted = row.body.get("edit_slot")
                        ref = await self.deliver(row, self._slots.get(wanted) if wanted else None)
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
                                    row.id, row.recipient, row.attempts, self.attempts, error)
                    for each in rows:
                        await self._mark(each, "pending", error)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, self.max_delay)
                    continue
                for each in rows:
                    await self._sent(each, ref)
                return
            for each in rows:
                await self._died(each, error or "no attempt left")
        finally:
            self._pending -= len(rows)
            self._depth.dec(len(rows))

    async def _sent(self, row: Row, ref: str | None) -> None:
        """Sent: known at once (an edit of its slot finds it); marked in the table with the others
        sent within MARK_DELAY."""
        slot = row.body.get("slot")
        if slot and ref is not None:
            self._slots[slot] = self._slot_refs[slot] = ref
        self._marks.append({"row": row.id, "tries": row.attempts, "at": datetime.now(timezone.utc)})
        if self._marking is None or self._marking.done():
            self._marking = asyncio.create_task(self._mark_sent())

    async def _mark_sent(self) -> None:
        delay = MARK_DELAY
        failing = False
        while self._marks or self._slot_refs:
            await asyncio.sleep(delay)
            try:
                await self._write_marks()
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

    async def _write_marks(self) -> None:
        marks, refs = self._marks, self._slot_refs
        if not marks and not refs:
            return
        self._marks, self._slot_refs = [], {}
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
            self._slot_refs = {**refs, **self._slot_refs}
            raise

    async def _mark(self, row: Row, state: str, error: str) -> None:
        try:
            async with self.engine.begin() as conn:
                await conn.execute(update(OutboxRow).where(OutboxRow.id == row.id).values(
                    state=state, attempts=row.attempts, last_error=error,
                    done_at=datetime.now(timezone.utc) if state != "pending" else None))
        except Exception:  # noqa: BLE001 - the row stays pending: sent again after a restart
            log.exception("%s outbox: could not record the state of message %d", self.channel, row.id)

    async def _died(self, row: Row, error: str) -> None:
        await self._mark(row, "dead", error)
        self._dead.inc()
        log.error("%s outbox: gave up on message %d of event %s to %s after %d attempts: %s", self.channel,
                  row.id, row.event_id, row.recipient, row.attempts, error)
        if self.on_dead is not None:
            try:
                await self.on_dead(row, error)
            except Exception:  # noqa: BLE001
                log.exception("%s outbox: could not report dead message %d", self.channel, row.id)
