"""A queue and a worker per recipient: the rows committed for a recipient go out in their order.
Rows that do not wait on each other go to the wire together (an edit waits for the message it
edits); with merging (mail), a recipient's rows of one game that are waiting together go out as
one message, after a linger that lets the rest of their batch be staged.

What is queued and not sent yet is the outbox's depth (``avalon_outbox_depth``)."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Awaitable, Callable

from avalon.shared import ops

from .messages import Row


class RecipientQueues:
    def __init__(self, channel: str, send: Callable[[list[Row]], Awaitable[None]], *, merged: bool = False,
                 linger: float = 0.0) -> None:
        self.send = send  # the attempts at one row, or at several merged into one message
        self.merged = merged
        self.linger = linger
        self.waiting: dict[str, deque[Row]] = {}  # recipient -> the rows not taken by its worker yet
        self._workers: dict[str, asyncio.Task] = {}
        self._depth = ops.OUTBOX_DEPTH.labels(service=f"{channel}-outbox")
        self._pending = 0
        self._closing = False

    @property
    def pending(self) -> int:
        """Rows queued or being sent."""
        return self._pending

    def enqueue(self, rows: list[Row]) -> None:
        for row in rows:
            self.waiting.setdefault(row.recipient, deque()).append(row)
            self._pending += 1
            self._depth.inc()
            worker = self._workers.get(row.recipient)
            if worker is None or worker.done():
                self._workers[row.recipient] = asyncio.create_task(self._work(row.recipient))

    async def close(self) -> None:
        """Stop every worker; what was not sent stays pending in the table (sent on the next start)."""
        self._closing = True
        for task in self._workers.values():
            task.cancel()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        self._depth.dec(self._pending)
        self._pending = 0

    async def _work(self, recipient: str) -> None:
        queue = self.waiting[recipient]
        if self.merged:
            await self._work_merged(queue)
            return
        while queue and not self._closing:
            batch = [queue.popleft()]  # rows that do not wait on each other go to the wire together
            while queue and not _waits_on(queue[0], batch):
                batch.append(queue.popleft())
            await asyncio.gather(*(self._send([row]) for row in batch))

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

    async def _send(self, rows: list[Row]) -> None:
        try:
            await self.send(rows)
        finally:
            self._pending -= len(rows)
            self._depth.dec(len(rows))


def _waits_on(row: Row, batch: list[Row]) -> bool:
    """Whether ``row`` edits a message that one of ``batch`` sends."""
    wanted = row.body.get("edit_slot")
    return bool(wanted) and any(other.body.get("slot") == wanted for other in batch)
