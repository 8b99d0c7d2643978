"""The in-process bus: the embedded default's and the unit tests' transport.

Without ``inbox_url`` commands live in memory only (unit tests). With it (the embedded default,
``avalon run``) every command is committed to the database's ``inbox`` table before
``send_command`` returns, deleted once the handler has returned (or it was dead-lettered), and
what a killed process left there is delivered again by ``start()``, in the order it was sent,
before anything new (``shared.bus.inbox``). Either way the semantics are ``RabbitBus``'s: a
command handed to the bus is delivered until its handler returns, or dead-lettered.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging

from avalon.shared.protocol import CommandEnvelope, EventEnvelope

from .base import CommandHandler, EventHandler, PartitionWatch, PoisonMessage, Unroutable, routing_key, topic_matches
from .inbox import Inbox

log = logging.getLogger(__name__)
#: publish_events' list of the confirmations its publish_event calls are to wait for together
_COLLECTING: contextvars.ContextVar[list | None] = contextvars.ContextVar("collecting", default=None)


class InProcessBus:
    def __init__(self, *, delivery_limit: int = 5, inbox_url: str | None = None,
                 confirm_events: float | None = None) -> None:
        self.delivery_limit = delivery_limit
        self.prefix: str | None = None  # no broker users here: every sender is the process itself
        self.partitions = 1
        #: publish_events returns once the subscribers have handled the events (at most this many
        #: seconds): what the engine marks published is then already in a channel's outbox, as
        #: RabbitMQ's durable queues hold it, so a kill in between loses no event (``avalon run``)
        self.confirm_events = confirm_events
        #: (body, attempts, the inbox row's key or None)
        self._commands: asyncio.Queue[tuple[bytes, int, str | None]] = asyncio.Queue()
        self.inbox = Inbox(inbox_url) if inbox_url else None
        self._opened = False
        self._dead: list[bytes] = []
        self._subscriptions: dict[str, tuple[str, EventHandler, asyncio.Queue]] = {}
        self._tasks: list[asyncio.Task] = []
        self._handling = 0  # commands and events taken off their queues, their handlers not returned yet

    async def start(self) -> None:
        """With an inbox: open it, and queue what an earlier run left there before anything new."""
        if self.inbox is None or self._opened:
            return
        left = await self.inbox.open(self._stored)
        self._opened = True
        for key, body in left:
            self._commands.put_nowait((body, 0, key))
        if left:
            log.info("%d commands left in the inbox by the last run are delivered again", len(left))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self.inbox is not None and self._opened:
            self._opened = False
            await self.inbox.close()  # the handled commands' rows go; the others wait for the next start

    async def send_command(self, envelope: CommandEnvelope) -> None:
        await self.send_raw_command(envelope.model_dump_json().encode())

    async def send_raw_command(self, body: bytes) -> None:
        """Returns once the command is queued; with an inbox, once it is committed there."""
        if self.inbox is None:
            await self._commands.put((body, 0, None))
        else:
            await self.inbox.put(body)  # queued by _stored, in the order committed

    def _stored(self, key: str, body: bytes) -> None:
        self._commands.put_nowait((body, 0, key))

    def _settled(self, key: str | None) -> None:
        if key is not None and self.inbox is not None:
            self.inbox.done(key)

    async def consume_commands(self, handler: CommandHandler, *, prefetch: int = 64,
                               watch: PartitionWatch | None = None) -> None:
        """The one consumer serves the one partition from the start."""
        if watch is not None:
            taking_over = watch.serving(0)
            if taking_over is not None:
                await taking_over
        self._tasks.append(asyncio.create_task(self._consume(handler)))

    async def _consume(self, handler: CommandHandler) -> None:
        while True:
            body, attempts, key = await self._commands.get()
            self._handling += 1
            try:
                await handler(body)
            except PoisonMessage:
                self._dead.append(body)
                self._settled(key)
            except asyncio.CancelledError:
                raise  # closing: the command stays in the inbox, for the next start
            except Exception:  # transient: deliver again, up to the limit
                log.exception("command handler failed (attempt %d)", attempts + 1)
                if attempts + 1 >= self.delivery_limit:
                    self._dead.append(body)
                    self._settled(key)
                else:
                    await self._commands.put((body, attempts + 1, key))
            else:
                self._settled(key)  # acknowledged: the handler returned
            finally:
                self._handling -= 1

    async def publish_event(self, envelope: EventEnvelope, channel: str) -> None:
        handled = self._put(envelope, channel)
        collecting = _COLLECTING.get()
        if collecting is not None:  # within publish_events: confirmed together at its end
            collecting.extend(handled)
        else:
            await self._confirmed(handled)

    def _put(self, envelope: EventEnvelope, channel: str) -> list[asyncio.Future]:
        key = routing_key(channel, envelope.audience.kind.value, envelope.game_id)
        targets = [q for pattern, _, q in self._subscriptions.values() if topic_matches(pattern, key)]
        if not targets:
            raise Unroutable(key)
        handled = []
        for queue in targets:
            done = asyncio.get_running_loop().create_future() if self.confirm_events else None
            queue.put_nowait((envelope, done))
            if done is not None:
                handled.append(done)
        return handled

    async def _confirmed(self, handled: list[asyncio.Future]) -> None:
        if handled:
            _, late = await asyncio.wait(handled, timeout=self.confirm_events)
            if late:
                log.warning("%d events not handled by their subscribers within %.0f s: published anyway",
                            len(late), self.confirm_events)

    async def publish_events(self, envelopes: list[EventEnvelope], channel: str, *,
                             bodies: list[str] | None = None) -> None:
        unroutable, handled = [], []
        token = _COLLECTING.set(handled)
        try:
            for envelope in envelopes:
                try:
                    await self.publish_event(envelope, channel)
                except Unroutable as e:
                    unroutable.append(str(e))
        finally:
            _COLLECTING.reset(token)
        await self._confirmed(handled)
        if unroutable:
            raise Unroutable("; ".join(unroutable))

    async def subscribe_events(self, name: str, pattern: str, handler: EventHandler, *,
                               by_game: bool = False) -> None:
        # one at a time, whatever ``by_game`` says (a valid order for it too)
        queue: asyncio.Queue = asyncio.Queue()
        self._subscriptions[name] = (pattern, handler, queue)
        self._tasks.append(asyncio.create_task(self._deliver(handler, queue)))

    async def _deliver(self, handler: EventHandler, queue: asyncio.Queue) -> None:
        while True:
            envelope, done = await queue.get()
            self._handling += 1
            try:
                for attempt in range(self.delivery_limit):
                    try:
                        await handler(envelope)
                        break
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        log.exception("event handler failed (attempt %d)", attempt + 1)
            finally:
                self._handling -= 1
                if done is not None and not done.done():
                    done.set_result(None)

    async def dead_letters(self) -> list[bytes]:
        dead, self._dead = self._dead, []
        return dead

    async def idle(self) -> None:
        """Wait until every queued command and event has been handled, the ones being handled too."""
        while True:
            await asyncio.sleep(0)
            if not self._busy():
                await asyncio.sleep(0.01)
                if not self._busy():
                    return

    def _busy(self) -> bool:
        return bool(self._handling) or not self._commands.empty() or any(
            not q.empty() for _, _, q in self._subscriptions.values())
