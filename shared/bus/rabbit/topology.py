"""The bus's exchanges and queues on the broker: their names, the arguments each queue is declared
with, and declaring them.

Every name starts with ``prefix``, so tests can use their own and delete it all afterwards:

- ``<prefix>.commands``: a direct exchange, and a durable quorum queue bound
  to it with the routing key ``command``. The queue has single active
  consumer on (a second engine instance waits instead of taking messages out
  of order), a delivery limit and ``<prefix>.dlx`` as its dead-letter exchange.
- ``<prefix>.events``: a durable topic exchange; every subscription is a
  durable quorum queue ``<prefix>.events.<name>`` with the same delivery limit
  and dead-letter exchange.
- ``<prefix>.dlx``: a fanout exchange, and ``<prefix>.dead``: the durable queue
  behind it, which ``dead_letters()`` drains.

Who declares what: the engine (the commands' consumer) declares all of the above again in
``consume_commands``; ``start`` declares it only when some of it is missing and otherwise just names
it, so a gateway whose broker user may not declare the engine's exchanges and queues (see
services/broker_users.py) starts on them, and declares only its own event queue.

``delivery_limit`` means what it means for ``InProcessBus``: the number of
times a handler is tried before the message is dead-lettered. A quorum queue's
``x-delivery-limit`` counts *re*-deliveries (RabbitMQ dead-letters a message
once it has been returned more than ``x-delivery-limit`` times, i.e. after
``x-delivery-limit + 1`` deliveries), so the queue is declared with
``delivery_limit - 1``. Messages returned because a consumer's channel or
connection closed count too.
"""

from __future__ import annotations

from typing import Any, Iterable

import aio_pika
import aiormq
from aio_pika.abc import AbstractQueue, AbstractRobustChannel, AbstractRobustConnection

COMMAND_ROUTING_KEY = "command"


class TopologyMissing(ConnectionError):
    """The engine's exchanges and queues are not there yet and this broker user may not declare them (a
    gateway started before the engine ever did): a ConnectionError, so start-up waits and tries again."""


class Topology:
    """The names under one prefix and the queues' arguments; declares or names them on a channel."""

    def __init__(self, prefix: str, delivery_limit: int) -> None:
        self.prefix = prefix
        self.delivery_limit = delivery_limit
        self.commands_exchange_name = f"{prefix}.commands"
        self.commands_queue_name = f"{prefix}.commands"
        self.events_exchange_name = f"{prefix}.events"
        self.dlx_name = f"{prefix}.dlx"
        self.dead_queue_name = f"{prefix}.dead"

    def quorum_arguments(self) -> dict[str, Any]:
        return {
            "x-queue-type": "quorum",
            # RabbitMQ dead-letters after x-delivery-limit + 1 deliveries; see the module docstring
            "x-delivery-limit": self.delivery_limit - 1,
            "x-dead-letter-exchange": self.dlx_name,
        }

    def command_queue_arguments(self) -> dict[str, Any]:
        return {**self.quorum_arguments(), "x-single-active-consumer": True}

    def event_queue_name(self, name: str) -> str:
        return f"{self.prefix}.events.{name}"

    async def attach(self, connection: AbstractRobustConnection, channel: AbstractRobustChannel) -> AbstractQueue:
        """Declares everything the engine owns on ``channel`` unless it is all there already: then it is
        only named, which needs no permission (a gateway's broker user may not declare what the engine
        owns; the engine declares it all again in consume_commands). Returns the dead-letter queue on
        ``channel``; the exchanges are published to by name."""
        if await self.exists(connection):
            return await channel.get_queue(self.dead_queue_name, ensure=False)
        return await self.declare(channel)

    async def exists(self, connection: AbstractRobustConnection) -> bool:
        """Whether every exchange and queue the engine owns is there: asked passively (which needs no
        permission) on a channel of its own, since the broker closes a channel that names a missing one."""
        assert connection.transport is not None
        channel = await connection.transport.connection.channel()
        try:
            for exchange in (self.dlx_name, self.commands_exchange_name, self.events_exchange_name):
                await channel.exchange_declare(exchange, passive=True)
            for queue in (self.dead_queue_name, self.commands_queue_name):
                await channel.queue_declare(queue, passive=True)
        except aiormq.exceptions.ChannelNotFoundEntity:
            return False
        finally:
            if not channel.is_closed:
                await channel.close()
        return True

    async def declare(self, channel: AbstractRobustChannel) -> AbstractQueue:
        """Declares (and binds) everything the engine owns: the dead letters, the commands exchange and
        queue, the events exchange. Returns the dead-letter queue."""
        dlx = await channel.declare_exchange(self.dlx_name, aio_pika.ExchangeType.FANOUT, durable=True)
        dead = await channel.declare_queue(self.dead_queue_name, durable=True)
        await dead.bind(dlx, routing_key="")
        commands_exchange = await channel.declare_exchange(
            self.commands_exchange_name, aio_pika.ExchangeType.DIRECT, durable=True,
        )
        commands = await channel.declare_queue(
            self.commands_queue_name, durable=True, arguments=self.command_queue_arguments(),
        )
        await commands.bind(commands_exchange, routing_key=COMMAND_ROUTING_KEY)
        await channel.declare_exchange(self.events_exchange_name, aio_pika.ExchangeType.TOPIC, durable=True)
        return dead

    async def declare_event_queue(self, channel: AbstractRobustChannel, name: str, pattern: str) -> AbstractQueue:
        """A subscription's queue, declared and bound to the events exchange with ``pattern``."""
        queue = await channel.declare_queue(self.event_queue_name(name), durable=True,
                                            arguments=self.quorum_arguments())
        await queue.bind(self.events_exchange_name, routing_key=pattern)
        return queue

    async def delete_everything(self, url: str, subscriptions: Iterable[str]) -> None:
        """Delete every queue and exchange under this prefix, the event queues of ``subscriptions``
        included (tests), over a connection of its own."""
        queues = [self.commands_queue_name, self.dead_queue_name,
                  *(self.event_queue_name(n) for n in sorted(set(subscriptions)))]
        exchanges = [self.commands_exchange_name, self.events_exchange_name, self.dlx_name]
        connection = await aio_pika.connect(url)
        async with connection:
            channel = await connection.channel()
            for queue in queues:
                # quorum queues refuse if_unused/if_empty (aio-pika's defaults) with a *connection* error
                await channel.queue_delete(queue, if_unused=False, if_empty=False)
            for exchange in exchanges:
                await channel.exchange_delete(exchange, if_unused=False)
