"""A channel's durable outbox: what an event asked to send is committed, with the mark that the
event is handled and the channel's memory of that game, in one transaction; only then is the
event acknowledged. A worker per recipient sends the rows in order, through the channel's
``deliver``; a crash at any point loses nothing (pending rows are sent on the next start) and
sends again at most the rows that were in flight.

A row that still fails after its attempts is *dead*: kept in the table with its error, logged
with its event and recipient, counted (``avalon_dead_messages_total``; ``counts()``, ``dead_rows()``), and
handed to ``on_dead`` so the channel can tell the group or the host. A server that is down
(``Unavailable``) spends no attempt: the message waits for it, however long that takes.

``Outbox`` is the composition of its parts, each owning its state: the staging (``staging.py``:
the commit of an event's messages, its mark and the game's memory), a queue and a worker per
recipient (``queues.py``), the attempts at each message (``attempts.py``: retries, backoff, dead
rows), the marks of messages sent written together (``marks.py``) and the slots a later message
edits (``slots.py``).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Awaitable, Callable

from . import readback
from .attempts import Attempts, Backoff
from .marks import MARK_DELAY, SentMarks
from .messages import Deliver, DeliverMerged, Outgoing, Row, Unavailable, Undeliverable
from .queues import RecipientQueues
from .slots import Slots
from .staging import Staging

__all__ = ["MARK_DELAY", "Deliver", "DeliverMerged", "Outbox", "Outgoing", "Row", "Unavailable", "Undeliverable"]

log = logging.getLogger(__name__)


class Outbox:
    def __init__(self, engine, channel: str, deliver: Deliver, *, attempts: int = 5, first_delay: float = 0.5,
                 max_delay: float = 30.0, on_dead: Callable[[Row, str], Awaitable[None]] | None = None,
                 deliver_merged: DeliverMerged | None = None, linger: float = 0.0) -> None:
        self.engine = engine  # a SQLAlchemy AsyncEngine on the project's database
        self.channel = channel
        self.slots = Slots(channel)
        self.marks = SentMarks(engine, channel, self.slots)
        each = Attempts(engine, channel, deliver, Backoff(attempts, first_delay, max_delay), self.slots, self.marks,
                        on_dead=on_dead, deliver_merged=deliver_merged)
        #: With ``deliver_merged``, a recipient's rows of one game that are waiting together (what one
        #: batch of events brings them, staged within ``linger`` seconds) go out as one message.
        self.queues = RecipientQueues(channel, each.send, merged=deliver_merged is not None, linger=linger)
        self.staging = Staging(engine, channel, self.queues.enqueue)

    # -- start and stop --------------------------------------------------------------------

    async def start(self) -> None:
        """Load the slots and send what was pending when the process last stopped."""
        async with self.engine.connect() as conn:
            await self.slots.load(conn)
            pending = await readback.rows_in_state(conn, self.channel, "pending")
        if pending:
            log.info("%s outbox: %d messages still to send from before the restart", self.channel, len(pending))
        self.queues.enqueue(pending)

    async def close(self) -> None:
        await self.queues.close()
        await self.staging.close()
        await self.marks.close()

    # -- what a channel stages -------------------------------------------------------------

    async def stage(self, event_id: str, game_id: str, messages: list[Outgoing], game_blob: bytes | None = None
                    ) -> bool:
        """Commit these messages, the mark that ``event_id`` is handled and the game's memory, at
        once. False (and nothing written) when the event was handled before: a redelivery."""
        return await self.staging.stage(event_id, game_id, messages, game_blob)

    async def post(self, game_id: str, message: Outgoing, reason: str = "direct") -> None:
        """A message that no event asked for (a button's redraw), sent in order after what this
        recipient already has in the outbox (so an edit finds the message it edits)."""
        await self.staging.post(game_id, message, reason)

    async def record_dead(self, event_id: str, game_id: str, recipient: str, error: str) -> None:
        """An event that produced nothing to send: marked handled, and a dead row in its place."""
        await self.staging.record_dead(event_id, game_id, recipient, error)

    async def save_game(self, game_id: str, game_blob: bytes) -> None:
        """The channel's memory of a game changed without an event (a player's message did it)."""
        await self.staging.save_game(game_id, game_blob)

    async def handled(self, event_id: str) -> bool:
        return await self.staging.handled(event_id)

    async def games(self) -> dict[str, tuple[bytes, datetime]]:
        """The channel's memory of every game as last staged, and when: the least recently changed first."""
        return await self.staging.games()

    def slot(self, name: str) -> str | None:
        """The reference of the message last sent under this slot's name, if any."""
        return self.slots.get(name)

    # -- what operators see ----------------------------------------------------------------

    async def counts(self) -> dict[str, int]:
        async with self.engine.connect() as conn:
            return await readback.counts(conn, self.channel)

    async def dead_rows(self) -> list[Row]:
        async with self.engine.connect() as conn:
            return await readback.rows_in_state(conn, self.channel, "dead")

    @property
    def pending(self) -> int:
        return self.queues.pending

    async def idle(self, timeout: float = 30.0) -> None:
        """Wait until nothing is left to send, and what was sent is marked so (tests)."""
        async def drained() -> None:
            while self.queues.pending or self.marks.waiting:
                await asyncio.sleep(0.02)
        await asyncio.wait_for(drained(), timeout)
