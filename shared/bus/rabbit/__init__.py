"""The RabbitMQ bus: the same interface and semantics as ``InProcessBus``, over aio-pika.

``RabbitBus`` puts together pieces that each own their state:

- ``topology.py``: the exchanges and queues, their names under one prefix and their arguments
  (the delivery limit, dead letters), declared or only named;
- ``link.py``: the robust connection, and the one line on its loss and on its return;
- ``publisher.py``: commands and events out, with confirms, a game's events in order in few messages;
- ``consumers.py``: what every consumer shares and closing stops (channels, handlers in flight,
  ``acks.py``'s ackers); ``commands.py`` consumes the commands queue, ``events.py`` the event
  subscriptions (in ``ordering.py``'s order, waiting out a database outage).

Every piece logs as ``shared.bus.rabbit``.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from aio_pika.abc import AbstractQueue
from aiormq.exceptions import ChannelAccessRefused

from avalon.shared.protocol import CommandEnvelope, EventEnvelope

from ..base import CommandHandler, EventHandler, PartitionWatch
from .commands import CommandConsumer
from .consumers import Consumers
from .events import EventSubscriptions
from .link import BrokerLink
from .publisher import Publisher
from .topology import COMMAND_ROUTING_KEY, PartitionMismatch, Topology, TopologyMissing, partition_of


class RabbitBus:
    """``Bus`` (shared/bus/base.py) over RabbitMQ: the pieces above put together, and nothing else."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "avalon",
        delivery_limit: int = 5,
        event_prefetch: int = 64,
        game_prefetch: int = 256,
        shutdown_grace: float = 5.0,
        publish_timeout: float = 30.0,
        partitions: int = 1,
    ) -> None:
        """``shutdown_grace``: on close, how long in-flight handlers may still finish (and ack) before
        they are cancelled; ``publish_timeout``: how long a publish may wait for a reconnection in
        progress, and then for the broker's confirm; ``partitions``: the command partitions the engine
        declares (everyone else reads the broker's count on start)."""
        if delivery_limit < 1:
            raise ValueError("delivery_limit must be at least 1")
        self.delivery_limit = delivery_limit
        self.topology = Topology(prefix, delivery_limit, partitions)
        self._link = BrokerLink(url)
        user = unquote(urlsplit(url).username or "") or "guest"
        self._publisher = Publisher(self._link, self.topology, user=user, timeout=publish_timeout)
        self._consumers = Consumers(shutdown_grace)
        self._commands = CommandConsumer(self._link, self.topology, self._consumers, self._publisher)
        self._events = EventSubscriptions(self._link, self.topology, self._consumers, prefetch=event_prefetch,
                                          game_prefetch=game_prefetch)
        self._dead_queue: AbstractQueue | None = None

    @property
    def prefix(self) -> str:
        """What every name starts with, the services' broker users' included (the engine service reads
        it to tell which service a command's sender is)."""
        return self.topology.prefix

    @property
    def partitions(self) -> int:
        """The command partitions (the broker's count, once started)."""
        return self.topology.partitions

    @property
    def commands(self) -> CommandConsumer:
        """The commands' consumer: the partitions it serves (``served``), the ones it handed on."""
        return self._commands

    @property
    def event_prefetch(self) -> int:
        """How many unacknowledged events a plain subscription has in hand."""
        return self._events.prefetch

    def event_queue_name(self, name: str) -> str:
        return self.topology.event_queue_name(name)

    async def start(self) -> None:
        if self._link.connection is not None:
            return
        connection = await self._link.open()
        try:
            channel = await self._publisher.open(connection)
            self._dead_queue = await self.topology.attach(connection, channel)
        except ChannelAccessRefused as error:
            await self._link.close()
            raise TopologyMissing(f"{self.topology.prefix}.* is not declared yet and this user may not declare "
                                  f"it (the engine, or `avalon broker-users`, does): {error}") from None
        except BaseException:
            await self._link.close()
            raise

    async def close(self) -> None:
        if self._link.connection is None:
            return
        self._link.closing()
        # while the robust connection is reconnecting, every channel operation would wait for it:
        # then skip straight to closing the connection (the broker has dropped the consumers already)
        connected = self._link.connected
        await self._commands.stop()
        await self._consumers.stop(connected=connected)
        connected = connected and self._link.connected
        await self._consumers.close(connected=connected)
        await self._publisher.close(connected=connected)
        self._dead_queue = None
        await self._link.close()

    async def __aenter__(self) -> "RabbitBus":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _ready(self) -> bool:
        """Connected, and a publish would go straight out (``/readyz``, services/app.py)."""
        return self._publisher.ready()

    async def send_command(self, envelope: CommandEnvelope) -> None:
        await self._publisher.send_command(envelope)

    async def send_raw_command(self, body: bytes) -> None:
        await self._publisher.send_raw_command(body)

    async def publish_event(self, envelope: EventEnvelope, channel: str) -> None:
        await self._publisher.publish_event(envelope, channel)

    async def publish_events(self, envelopes: list[EventEnvelope], channel: str, *,
                             bodies: list[str] | None = None) -> None:
        await self._publisher.publish_events(envelopes, channel, bodies=bodies)

    async def consume_commands(self, handler: CommandHandler, *, prefetch: int = 64,
                               watch: PartitionWatch | None = None) -> None:
        await self._commands.consume(handler, prefetch=prefetch, watch=watch)

    async def subscribe_events(self, name: str, pattern: str, handler: EventHandler, *,
                               by_game: bool = False) -> None:
        await self._events.subscribe(name, pattern, handler, by_game=by_game)

    async def dead_letters(self) -> list[bytes]:
        self._link.require()
        assert self._dead_queue is not None
        bodies: list[bytes] = []
        while True:
            message = await self._dead_queue.get(no_ack=False, fail=False)
            if message is None:
                return bodies
            bodies.append(message.body)
            await message.ack()

    async def delete_everything(self, *subscriptions: str) -> None:
        """Delete every queue and exchange under this prefix (tests). Works whether or not the bus is
        started; event queues are known by the names this bus subscribed plus ``subscriptions``."""
        await self.topology.delete_everything(self._link.url, {*self._events.names, *subscriptions})


__all__ = ["RabbitBus", "TopologyMissing", "PartitionMismatch", "COMMAND_ROUTING_KEY", "partition_of"]
