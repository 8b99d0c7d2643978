"""Settling a consumer's deliveries: acknowledgements in bulk, rejections at once, and what a
delivery left unsettled by a shutdown means."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from aio_pika.abc import AbstractIncomingMessage
from aio_pika.exceptions import AMQPError, ChannelInvalidStateError, MessageProcessError

log = logging.getLogger(__package__)  # the bus speaks under one name, "avalon.shared.bus.rabbit", whichever piece


class Acker:
    """Acknowledges one consumer's deliveries in bulk (each consumer has a channel of its own: delivery
    tags, and so multiple acks, are per channel): one ``basic.ack(multiple)`` for every delivery
    up to the newest one before which everything is settled, instead of a frame (and, for a quorum
    queue, a log entry) per message. Rejections still go out one by one, at once."""

    def __init__(self, spawn) -> None:
        self._spawn = spawn
        self._order: deque[AbstractIncomingMessage] = deque()  # delivered, in delivery order
        self._settled: dict[int, str] = {}  # id(message) -> "ack", "rejected" or "abandoned"
        self._single: set[Any] = set()  # channels with an abandoned delivery: no multiple ack may cover it
        self._scheduled = False
        self._lock = asyncio.Lock()  # acks leave in delivery order: an ack covering a tag acked already is an error

    def delivered(self, message: AbstractIncomingMessage) -> None:
        self._order.append(message)

    def ack(self, message: AbstractIncomingMessage) -> None:
        self._settled[id(message)] = "ack"
        if not self._scheduled:
            self._scheduled = True
            self._spawn(self.flush())

    async def ack_now(self, message: AbstractIncomingMessage) -> None:
        """Acknowledge this one delivery at once, whatever came before it (a partition's probe: it must
        not hold a prefetch slot while the commands before it are handled)."""
        async with self._lock:  # on the wire before any multiple ack that covers it
            await settle(message, message.ack())
            self._settled[id(message)] = "acked"

    async def reject(self, message: AbstractIncomingMessage, *, requeue: bool) -> None:
        await settle(message, message.reject(requeue=requeue))  # on the wire before any ack covers it
        self._settled[id(message)] = "rejected"
        await self.flush()

    def watch(self, message: AbstractIncomingMessage, task: asyncio.Task) -> None:
        """A handler cancelled before it even started leaves its delivery abandoned too."""
        task.add_done_callback(lambda t: self.abandon(message) if t.cancelled() else None)

    def abandon(self, message: AbstractIncomingMessage) -> None:
        """Left unsettled (shutting down): the broker delivers it again once the channel closes."""
        if id(message) in self._settled:
            return
        self._settled[id(message)] = "abandoned"
        if (channel := open_channel_of(message)) is not None:
            self._single.add(channel)

    async def flush(self) -> None:
        async with self._lock:
            await self._flush()

    async def _flush(self) -> None:
        self._scheduled = False
        newest: dict[Any, AbstractIncomingMessage] = {}  # per underlying channel (a reconnect makes a new one)
        singles: list[AbstractIncomingMessage] = []
        while self._order and id(self._order[0]) in self._settled:
            message = self._order.popleft()
            if self._settled.pop(id(message)) != "ack":
                continue
            channel = open_channel_of(message)
            if channel is None:  # it went with its channel: the broker has put it back in the queue
                continue
            if channel in self._single:
                singles.append(message)
            else:
                newest[channel] = message
        for message in newest.values():
            await settle(message, message.ack(multiple=True))
        for message in singles:
            await settle(message, message.ack())


def open_channel_of(message: AbstractIncomingMessage) -> Any:
    """The channel a message was delivered on, or None once that channel is closed (a connection lost
    since): nothing of it can be settled any more. aio-pika's ``message.channel`` raises then."""
    try:
        channel = message.channel
    except ChannelInvalidStateError:
        return None
    return None if channel.is_closed else channel


async def settle(message: AbstractIncomingMessage, action: Any) -> None:
    """Ack or reject; if the delivery's channel is gone, the broker has requeued the message already."""
    try:
        await action
    except ChannelInvalidStateError as e:  # its channel went with the connection (told once, on the loss)
        log.debug("could not settle message %s (%r); the broker will deliver it again", message.message_id, e)
    except (MessageProcessError, AMQPError, ConnectionError) as e:
        log.warning("could not settle message %s (%r); the broker will deliver it again", message.message_id, e)


def delivery_count(message: AbstractIncomingMessage) -> Any:
    return (message.headers or {}).get("x-delivery-count", 0)
