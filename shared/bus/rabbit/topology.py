"""The bus's exchanges and queues on the broker: their names, the arguments each queue is declared
with, and declaring them.

Every name starts with ``prefix``, so tests can use their own and delete it all afterwards:

- ``<prefix>.commands``: a direct exchange, and the command partitions bound to it: partition 0 is
  the durable quorum queue ``<prefix>.commands`` (routing key ``command``), partition ``i`` > 0 the
  queue ``<prefix>.commands.<i>`` (routing key ``command.<i>``). A game's commands all go to one
  partition (``partition_of``: a CRC-32 of the game id, modulo the count), so each game's commands stay
  in order. Each queue has single active consumer on (every engine consumes every partition; one
  serves it, the others wait to take it over), a delivery limit and ``<prefix>.dlx`` as its
  dead-letter exchange. One partition, the default, is the topology of a single engine; the count is
  fixed when the topology is first declared, and read off the broker by everyone else
  (``discover``); ``avalon partitions N`` changes it while nothing runs (docs/hosting.md).
- ``<prefix>.events``: a durable topic exchange; every subscription is a
  durable quorum queue ``<prefix>.events.<name>`` with the same delivery limit
  and dead-letter exchange.
- ``<prefix>.dlx``: a fanout exchange, and ``<prefix>.dead``: the durable quorum queue
  behind it, which ``dead_letters()`` drains (a classic queue on a broker set up by an earlier
  version: kept).

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

from ..base import partition_of

COMMAND_ROUTING_KEY = "command"
#: the most command partitions a broker may hold (discovery asks for each in turn)
MAX_PARTITIONS = 256


class TopologyMissing(ConnectionError):
    """The engine's exchanges and queues are not there yet and this broker user may not declare them (a
    gateway started before the engine ever did): a ConnectionError, so start-up waits and tries again."""


class PartitionMismatch(RuntimeError):
    """The broker holds another number of command partitions than this engine is configured for."""


class Topology:
    """The names under one prefix and the queues' arguments; declares or names them on a channel.
    ``partitions``: the command partitions this process declares (the engine's setting); a process
    that only names the topology reads the count off the broker on start."""

    def __init__(self, prefix: str, delivery_limit: int, partitions: int = 1) -> None:
        if not 1 <= partitions <= MAX_PARTITIONS:
            raise ValueError(f"partitions must be between 1 and {MAX_PARTITIONS}")
        self.prefix = prefix
        self.delivery_limit = delivery_limit
        self.partitions = partitions
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

    def command_queue(self, partition: int) -> str:
        return self.commands_queue_name if partition == 0 else f"{self.commands_queue_name}.{partition}"

    def command_key(self, partition: int) -> str:
        return COMMAND_ROUTING_KEY if partition == 0 else f"{COMMAND_ROUTING_KEY}.{partition}"

    def key_of(self, game_id: str) -> str:
        """The routing key of a game's commands."""
        return self.command_key(partition_of(game_id, self.partitions))

    def event_queue_name(self, name: str) -> str:
        return f"{self.prefix}.events.{name}"

    async def attach(self, connection: AbstractRobustConnection, channel: AbstractRobustChannel) -> AbstractQueue:
        """Declares everything the engine owns on ``channel`` unless it is all there already: then it is
        only named, which needs no permission (a gateway's broker user may not declare what the engine
        owns; the engine declares it all again in consume_commands). Returns the dead-letter queue on
        ``channel``; the exchanges are published to by name."""
        if await self.exists(connection):
            self.partitions = await self.discover(connection)
            return await channel.get_queue(self.dead_queue_name, ensure=False)
        return await self.declare(channel, connection)

    async def discover(self, connection: AbstractRobustConnection) -> int:
        """How many command partitions the broker holds (asked passively: partition 1, 2... until one is
        missing); 1 when only ``<prefix>.commands`` is there."""
        count = 1
        while count < MAX_PARTITIONS and await self._passive(connection, queues=[self.command_queue(count)]):
            count += 1
        return count

    async def depth(self, connection: AbstractRobustConnection, partitions: int) -> list[tuple[int, int]]:
        """(messages ready, consumers) of each of the first ``partitions`` command queues."""
        assert connection.transport is not None
        channel = await connection.transport.connection.channel()
        try:
            found = []
            for partition in range(partitions):
                ok = await channel.queue_declare(self.command_queue(partition), passive=True)
                found.append((ok.message_count, ok.consumer_count))
            return found
        finally:
            if not channel.is_closed:
                await channel.close()

    async def check_partitions(self, connection: AbstractRobustConnection) -> None:
        """Raises PartitionMismatch when the broker holds another count of partitions than ``partitions``
        (a topology declared before with another setting)."""
        if not await self._passive(connection, queues=[self.commands_queue_name]):
            return  # nothing declared yet: this engine's count is the one
        found = await self.discover(connection)
        if found != self.partitions:
            raise PartitionMismatch(
                f"RabbitMQ holds {found} command partition(s) under {self.prefix!r} and this engine is set to "
                f"{self.partitions} (ENGINE_PARTITIONS): every engine must use the broker's count; to change "
                f"it, stop every service and run `avalon partitions {self.partitions}` (docs/hosting.md)")

    async def exists(self, connection: AbstractRobustConnection) -> bool:
        """Whether every exchange and queue the engine owns is there: asked passively (which needs no
        permission) on a channel of its own, since the broker closes a channel that names a missing one."""
        return await self._passive(connection, exchanges=[self.dlx_name, self.commands_exchange_name,
                                                          self.events_exchange_name],
                                   queues=[self.dead_queue_name, self.commands_queue_name])

    @staticmethod
    async def _passive(connection: AbstractRobustConnection, *, exchanges: Iterable[str] = (),
                       queues: Iterable[str] = ()) -> bool:
        assert connection.transport is not None
        channel = await connection.transport.connection.channel()
        try:
            for exchange in exchanges:
                await channel.exchange_declare(exchange, passive=True)
            for queue in queues:
                await channel.queue_declare(queue, passive=True)
        except aiormq.exceptions.ChannelNotFoundEntity:
            return False
        finally:
            if not channel.is_closed:
                await channel.close()
        return True

    async def declare(self, channel: AbstractRobustChannel, connection: AbstractRobustConnection) -> AbstractQueue:
        """Declares (and binds) everything the engine owns: the dead letters, the commands exchange and
        queue, the events exchange. Returns the dead-letter queue."""
        await self._declare_dead_letters(connection)
        await channel.declare_exchange(self.dlx_name, aio_pika.ExchangeType.FANOUT, durable=True)
        dead = await channel.get_queue(self.dead_queue_name, ensure=False)
        commands_exchange = await channel.declare_exchange(
            self.commands_exchange_name, aio_pika.ExchangeType.DIRECT, durable=True,
        )
        for partition in range(self.partitions):
            await self.declare_partition(channel, partition, commands_exchange)
        await channel.declare_exchange(self.events_exchange_name, aio_pika.ExchangeType.TOPIC, durable=True)
        return dead

    async def _declare_dead_letters(self, connection: AbstractRobustConnection) -> None:
        """The dead-letter queue, on a channel of its own, so that a reconnection never declares it again
        (a robust channel declares again what was declared on it). A new one is a quorum queue,
        replicated on every node of a cluster; one declared by an earlier version (a classic queue,
        which lives on one node) is kept as it is: while its node is down only dead-lettering waits."""
        if await self._passive(connection, queues=[self.dead_queue_name]):
            return
        assert connection.transport is not None
        channel = await connection.transport.connection.channel()
        try:
            await channel.exchange_declare(self.dlx_name, exchange_type="fanout", durable=True)
            await channel.queue_declare(self.dead_queue_name, durable=True, arguments={"x-queue-type": "quorum"})
            await channel.queue_bind(self.dead_queue_name, self.dlx_name, routing_key="")
        finally:
            if not channel.is_closed:
                await channel.close()

    async def declare_partition(self, channel: AbstractRobustChannel, partition: int, exchange=None) -> None:
        exchange = exchange or self.commands_exchange_name
        queue = await channel.declare_queue(self.command_queue(partition), durable=True,
                                            arguments=self.command_queue_arguments())
        await queue.bind(exchange, routing_key=self.command_key(partition))

    async def declare_event_queue(self, channel: AbstractRobustChannel, name: str, pattern: str) -> AbstractQueue:
        """A subscription's queue, declared and bound to the events exchange with ``pattern``."""
        queue = await channel.declare_queue(self.event_queue_name(name), durable=True,
                                            arguments=self.quorum_arguments())
        await queue.bind(self.events_exchange_name, routing_key=pattern)
        return queue

    async def delete_everything(self, url: str, subscriptions: Iterable[str]) -> None:
        """Delete every queue and exchange under this prefix, the event queues of ``subscriptions``
        included (tests), over a connection of its own."""
        exchanges = [self.commands_exchange_name, self.events_exchange_name, self.dlx_name]
        from .link import connect_any

        connection = await connect_any(url)
        async with connection:
            partitions = self.partitions
            if await self._passive(connection, queues=[self.commands_queue_name]):
                partitions = max(partitions, await self.discover(connection))
            queues = [*(self.command_queue(p) for p in range(partitions)), self.dead_queue_name,
                      *(self.event_queue_name(n) for n in sorted(set(subscriptions)))]
            channel = await connection.channel()
            for queue in queues:
                # quorum queues refuse if_unused/if_empty (aio-pika's defaults) with a *connection* error
                await channel.queue_delete(queue, if_unused=False, if_empty=False)
            for exchange in exchanges:
                await channel.exchange_delete(exchange, if_unused=False)
