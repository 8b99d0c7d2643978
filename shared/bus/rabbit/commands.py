"""Consuming the commands queue (the engine): each command handed to the handler in arrival order, in a
task of its own, and settled by what the handler did: acknowledged, dead-lettered as poison, or
returned to be delivered again."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable

import aiormq

from ..base import COMMAND_SENDER, CommandHandler, PoisonMessage
from .acks import Acker, delivery_count
from .consumers import Consumers
from .link import CONNECTION_ERRORS, BrokerLink
from .topology import Topology

log = logging.getLogger(__package__)  # the bus speaks under one name, "avalon.shared.bus.rabbit", whichever piece


class CommandConsumer:
    """The consumer of the commands queue, on a channel of its own; the engine's bus has one."""

    def __init__(self, link: BrokerLink, topology: Topology, consumers: Consumers) -> None:
        self._link = link
        self._topology = topology
        self._consumers = consumers

    async def consume(self, handler: CommandHandler, *, prefetch: int = 64) -> None:
        """Commands are consumed with aiormq directly: aio-pika's consumer wraps each delivery in an
        IncomingMessage and one more task, ~8% of the engine's CPU. The robust channel comes back
        after a reconnect (with its QoS); the consumer is registered on it again here."""
        connection = self._link.require()
        channel = await self._consumers.open_channel(connection, prefetch)
        await self._topology.declare(channel)  # the commands' consumer (the engine) owns it all
        acker = self._consumers.acker()
        queue = self._topology.commands_queue_name
        tags: list[str] = []  # the consumer's tag on the current underlying channel

        async def on_delivery(delivered: aiormq.abc.DeliveredMessage) -> None:
            # aiormq runs this in a task per delivery, created in delivery order; starting the
            # handler's task here, without awaiting anything first, keeps the arrival order. The
            # handler needs a task of its own: aiormq cancels its tasks when the connection drops,
            # and a command being decided must still finish (its ack then goes nowhere).
            message = Delivery(delivered)
            acker.delivered(message)
            acker.watch(message, self._consumers.spawn(self._handle(handler, message, acker)))

        async def consume() -> None:
            underlay = await channel.get_underlay_channel()
            result = await underlay.basic_consume(queue, on_delivery)
            tags[:] = [result.consumer_tag]

        async def cancel() -> None:
            if tags and not channel.is_closed:
                underlay = await channel.get_underlay_channel()
                await underlay.basic_cancel(tags[0])

        async def consume_again(*_: Any) -> None:  # aio-pika gathers reopen callbacks' errors silently
            try:
                await consume()
            except Exception:
                log.exception("could not consume %s again after reconnecting", queue)
                raise

        await consume()
        channel.reopen_callbacks.add(consume_again)
        self._consumers.consuming(queue, cancel)

    async def _handle(self, handler: CommandHandler, message: "Delivery", acker: Acker) -> None:
        COMMAND_SENDER.set(message.user_id)  # this task's context: the handler reads who sent it
        try:
            await handler(message.body)
        except PoisonMessage as e:
            log.warning("poison command %s dead-lettered: %s", message.message_id, e)
            await acker.reject(message, requeue=False)
        except asyncio.CancelledError:
            raise  # shutting down: left unacked (abandoned, see Acker.watch), the broker delivers it again
        except Exception as error:
            if not self._cut_off(error):
                log.exception("command handler failed (delivery count %s)", delivery_count(message))
            await acker.reject(message, requeue=True)
        else:
            acker.ack(message)

    def _cut_off(self, error: BaseException) -> bool:
        """A handler failed because the broker connection went away under it (an expected event,
        told once by the link): no line per command; the broker delivers it again."""
        if not (self._link.lost or isinstance(error, CONNECTION_ERRORS)):
            return False
        log.debug("a command in flight was cut off by the connection's loss: %r", error)
        return True


class Delivery:
    """An aiormq delivery with the few parts of aio-pika's IncomingMessage the bus uses."""

    __slots__ = ("_delivered", "channel", "body", "delivery_tag")

    def __init__(self, delivered: aiormq.abc.DeliveredMessage) -> None:
        self._delivered = delivered
        self.channel = delivered.channel
        self.body = delivered.body
        self.delivery_tag = delivered.delivery_tag

    @property
    def message_id(self) -> str | None:
        return self._delivered.header.properties.message_id

    @property
    def headers(self) -> dict | None:
        return self._delivered.header.properties.headers

    @property
    def user_id(self) -> str | None:
        return self._delivered.header.properties.user_id

    def ack(self, multiple: bool = False) -> Awaitable[None]:
        return self.channel.basic_ack(self.delivery_tag, multiple=multiple)

    def reject(self, requeue: bool = True) -> Awaitable[None]:
        return self.channel.basic_reject(self.delivery_tag, requeue=requeue)
