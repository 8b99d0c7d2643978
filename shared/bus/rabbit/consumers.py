"""What the bus's consumers share, and how closing stops them: each consumer's channel, its
registration on the broker, the handlers in flight and the ackers that settle their deliveries."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from aio_pika.abc import AbstractRobustChannel, AbstractRobustConnection

from .acks import Acker
from .link import CLOSE_TIMEOUT, close_channel

log = logging.getLogger(__package__)  # the bus speaks under one name, "avalon.shared.bus.rabbit", whichever piece


class Consumers:
    """Every consumer of one bus. ``shutdown_grace``: on close, how long in-flight handlers may still
    finish (and ack) before they are cancelled."""

    def __init__(self, shutdown_grace: float) -> None:
        self.shutdown_grace = shutdown_grace
        self._channels: list[AbstractRobustChannel] = []
        self._cancels: list[tuple[str, Callable[[], Awaitable[Any]]]] = []  # (queue, cancel)
        self._inflight: set[asyncio.Task] = set()
        self._ackers: list[Acker] = []

    async def open_channel(self, connection: AbstractRobustConnection, prefetch: int) -> AbstractRobustChannel:
        """A channel for one consumer (delivery tags, and so bulk acks, are per channel); the broker keeps
        at most ``prefetch`` unacknowledged deliveries on it."""
        channel = await connection.channel()
        self._channels.append(channel)
        await channel.set_qos(prefetch_count=prefetch)
        return channel

    def acker(self) -> Acker:
        acker = Acker(self.spawn)
        self._ackers.append(acker)
        return acker

    def spawn(self, coro: Any) -> asyncio.Task:
        """A handler's task (or an acker's flush): closing waits for it, for a while."""
        task = asyncio.create_task(coro)
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return task

    def consuming(self, queue: str, cancel: Callable[[], Awaitable[Any]]) -> None:
        """A consumer is registered on ``queue``; ``cancel`` ends its deliveries."""
        self._cancels.append((queue, cancel))

    def drop(self, channel: AbstractRobustChannel, cancel: Callable[[], Awaitable[Any]], acker: Acker) -> None:
        """Forget a consumer whose channel was closed on purpose (a command partition handed on)."""
        self._channels = [c for c in self._channels if c is not channel]
        self._cancels = [(q, c) for q, c in self._cancels if c is not cancel]
        self._ackers = [a for a in self._ackers if a is not acker]

    async def stop(self, *, connected: bool) -> None:
        """No new deliveries, then the handlers in flight finish (and ack) for a while and are then
        cancelled: a message left unacked goes back to its queue when its channel closes. While the
        connection is not ``connected`` the broker has dropped the consumers already, and nothing is
        asked of it."""
        for queue, cancel in self._cancels if connected else ():
            try:
                await asyncio.wait_for(cancel(), CLOSE_TIMEOUT)
            except Exception:  # the channel may be gone already; closing it below cancels too
                log.warning("could not cancel the consumer on %s", queue, exc_info=True)
        self._cancels.clear()
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=self.shutdown_grace)
        for task in list(self._inflight):
            task.cancel()
        await asyncio.gather(*self._inflight, return_exceptions=True)
        self._inflight.clear()
        for acker in self._ackers if connected else ():
            await acker.flush()
        self._ackers.clear()

    async def close(self, *, connected: bool) -> None:
        """Close the consumers' channels (only asked of the broker while ``connected``) and forget them."""
        for channel in self._channels if connected else ():
            await close_channel(channel)
        self._channels.clear()
