"""The in-process bus: the embedded default's and the unit tests' transport."""

from __future__ import annotations

import asyncio
import logging

from shared.protocol import CommandEnvelope, EventEnvelope

from .base import CommandHandler, EventHandler, PoisonMessage, Unroutable, routing_key, topic_matches

log = logging.getLogger(__name__)


class InProcessBus:
    def __init__(self, *, delivery_limit: int = 5) -> None:
        self.delivery_limit = delivery_limit
        self._commands: asyncio.Queue[tuple[bytes, int]] = asyncio.Queue()
        self._dead: list[bytes] = []
        self._subscriptions: dict[str, tuple[str, EventHandler, asyncio.Queue]] = {}
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def send_command(self, envelope: CommandEnvelope) -> None:
        await self.send_raw_command(envelope.model_dump_json().encode())

    async def send_raw_command(self, body: bytes) -> None:
        await self._commands.put((body, 0))

    async def consume_commands(self, handler: CommandHandler, *, prefetch: int = 64) -> None:
        self._tasks.append(asyncio.create_task(self._consume(handler)))

    async def _consume(self, handler: CommandHandler) -> None:
        while True:
            body, attempts = await self._commands.get()
            try:
                await handler(body)
            except PoisonMessage:
                self._dead.append(body)
            except asyncio.CancelledError:
                raise
            except Exception:  # transient: deliver again, up to the limit
                log.exception("command handler failed (attempt %d)", attempts + 1)
                if attempts + 1 >= self.delivery_limit:
                    self._dead.append(body)
                else:
                    await self._commands.put((body, attempts + 1))

    async def publish_event(self, envelope: EventEnvelope, channel: str) -> None:
        key = routing_key(channel, envelope.audience.kind.value, envelope.game_id)
        targets = [q for pattern, _, q in self._subscriptions.values() if topic_matches(pattern, key)]
        if not targets:
            raise Unroutable(key)
        for queue in targets:
            queue.put_nowait(envelope)

    async def publish_events(self, envelopes: list[EventEnvelope], channel: str, *,
                             bodies: list[str] | None = None) -> None:
        unroutable = []
        for envelope in envelopes:
            try:
                await self.publish_event(envelope, channel)
            except Unroutable as e:
                unroutable.append(str(e))
        if unroutable:
            raise Unroutable("; ".join(unroutable))

    async def subscribe_events(self, name: str, pattern: str, handler: EventHandler) -> None:
        queue: asyncio.Queue = asyncio.Queue()
        self._subscriptions[name] = (pattern, handler, queue)
        self._tasks.append(asyncio.create_task(self._deliver(handler, queue)))

    async def _deliver(self, handler: EventHandler, queue: asyncio.Queue) -> None:
        while True:
            envelope = await queue.get()
            for attempt in range(self.delivery_limit):
                try:
                    await handler(envelope)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("event handler failed (attempt %d)", attempt + 1)

    async def dead_letters(self) -> list[bytes]:
        dead, self._dead = self._dead, []
        return dead

    async def idle(self) -> None:
        """Wait until every queued command and event has been handled (tests)."""
        while True:
            await asyncio.sleep(0)
            busy = not self._commands.empty() or any(not q.empty() for _, _, q in self._subscriptions.values())
            if not busy:
                await asyncio.sleep(0.01)
                busy = not self._commands.empty() or any(not q.empty() for _, _, q in self._subscriptions.values())
                if not busy:
                    return
