"""The RabbitMQ bus: the same interface and semantics as ``InProcessBus``, over aio-pika.

Topology (every name starts with ``prefix``, so tests can use their own and
delete it all afterwards):

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

Every message is persistent JSON with its envelope's ``message_id``, published
with publisher confirms and ``mandatory``: a message no queue takes raises
``Unroutable`` instead of vanishing.

``delivery_limit`` means what it means for ``InProcessBus``: the number of
times a handler is tried before the message is dead-lettered. A quorum queue's
``x-delivery-limit`` counts *re*-deliveries (RabbitMQ dead-letters a message
once it has been returned more than ``x-delivery-limit`` times, i.e. after
``x-delivery-limit + 1`` deliveries), so the queue is declared with
``delivery_limit - 1``. Messages returned because a consumer's channel or
connection closed count too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Awaitable, Callable
from urllib.parse import unquote, urlsplit

import aio_pika
import aiormq
from aio_pika.abc import (
    AbstractExchange,
    AbstractIncomingMessage,
    AbstractQueue,
    AbstractRobustChannel,
    AbstractRobustConnection,
)
from aio_pika.exceptions import AMQPError, ChannelInvalidStateError, DeliveryError, PublishError
from pydantic import TypeAdapter, ValidationError

from shared import quiet
from shared.db import database_down, raised_by_database
from shared.protocol import CommandEnvelope, EventEnvelope

from ..base import COMMAND_SENDER, EVENT_REDELIVERED, CommandHandler, EventHandler, PoisonMessage, Unroutable, routing_key
from .acks import Acker, delivery_count
from .ordering import GameLocks, OneLock

log = logging.getLogger(__name__)
quiet.install()  # a broker restart is one line lost, one line back: see quiet.py

COMMAND_ROUTING_KEY = "command"
#: seconds between reconnection attempts (overridable with ?reconnect_interval= in AMQP_URL)
RECONNECT_INTERVAL = 0.5
#: what a handler meets when the broker connection goes away under it
CONNECTION_ERRORS = (AMQPError, ChannelInvalidStateError, ConnectionError, aiormq.exceptions.AMQPError)
_CLOSE_TIMEOUT = 5.0


class RabbitBus:
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
    ) -> None:
        if delivery_limit < 1:
            raise ValueError("delivery_limit must be at least 1")
        self.url = url
        #: who this connection is to the broker: every command carries it as ``user_id``, which RabbitMQ
        #: checks against the login, so the engine knows which service's user sent it
        self.user = unquote(urlsplit(url).username or "") or "guest"
        self.prefix = prefix
        self.delivery_limit = delivery_limit
        self.event_prefetch = event_prefetch
        #: a ``by_game`` subscription's: more in hand, as its games' events are handled side by side and
        #: committed together (bench/load_bench.py, 500 games: 70 s and 2.3 ms of the Telegram gateway's
        #: CPU a message with 256; 86 s and 3.0 ms with 64, a batch's acknowledgement held back by its
        #: oldest message)
        self.game_prefetch = game_prefetch
        #: on close, how long in-flight handlers may still finish (and ack) before they are cancelled
        self.shutdown_grace = shutdown_grace
        #: how long a publish may wait for a reconnection in progress, and then for the broker's confirm
        self.publish_timeout = publish_timeout

        self.commands_exchange_name = f"{prefix}.commands"
        self.commands_queue_name = f"{prefix}.commands"
        self.events_exchange_name = f"{prefix}.events"
        self.dlx_name = f"{prefix}.dlx"
        self.dead_queue_name = f"{prefix}.dead"

        self._connection: AbstractRobustConnection | None = None
        self._lost = False  # the connection is down: told once, not per command in flight
        self._database_lost = False  # an event handler is waiting for the database: told once
        self._closing = False
        self._publish_channel: AbstractRobustChannel | None = None
        self._commands_exchange: AbstractExchange | None = None
        self._events_exchange: AbstractExchange | None = None
        self._dead_queue: AbstractQueue | None = None
        self._consume_channels: list[AbstractRobustChannel] = []
        self._consumers: list[tuple[str, Callable[[], Awaitable[Any]]]] = []  # (queue, cancel)
        self._inflight: set[asyncio.Task] = set()
        self._subscriptions: set[str] = set()
        self._ackers: list[Acker] = []

    # -- queue arguments ------------------------------------------------------------

    def _quorum_arguments(self) -> dict[str, Any]:
        return {
            "x-queue-type": "quorum",
            # RabbitMQ dead-letters after x-delivery-limit + 1 deliveries; see the module docstring
            "x-delivery-limit": self.delivery_limit - 1,
            "x-dead-letter-exchange": self.dlx_name,
        }

    def _command_queue_arguments(self) -> dict[str, Any]:
        return {**self._quorum_arguments(), "x-single-active-consumer": True}

    def event_queue_name(self, name: str) -> str:
        return f"{self.prefix}.events.{name}"

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        if self._connection is not None:
            return
        self._closing = False
        # back within a second of the broker (aio-pika waits 5 s between tries by default)
        extra = {} if "reconnect_interval" in self.url else {"reconnect_interval": RECONNECT_INTERVAL}
        self._connection = await aio_pika.connect_robust(self.url, **extra)
        self._connection.close_callbacks.add(self._on_connection_lost)
        self._connection.reconnect_callbacks.add(self._on_reconnected)
        try:
            channel = await self._connection.channel(publisher_confirms=True, on_return_raises=True)
            self._publish_channel = channel
            if await self._topology_exists():
                # only named, which needs no permission: a gateway's broker user may not declare what
                # the engine owns (the engine declares it all again in consume_commands)
                self._commands_exchange = await channel.get_exchange(self.commands_exchange_name, ensure=False)
                self._events_exchange = await channel.get_exchange(self.events_exchange_name, ensure=False)
                self._dead_queue = await channel.get_queue(self.dead_queue_name, ensure=False)
            else:
                self._commands_exchange, self._events_exchange, self._dead_queue = \
                    await self._declare_topology(channel)
        except aiormq.exceptions.ChannelAccessRefused as error:
            await self._connection.close()
            self._connection = None
            raise TopologyMissing(f"{self.prefix}.* is not declared yet and this user may not declare it "
                                  f"(the engine, or `avalon broker-users`, does): {error}") from None
        except BaseException:
            await self._connection.close()
            self._connection = None
            raise

    async def _topology_exists(self) -> bool:
        """Whether every exchange and queue the engine owns is there: asked passively (which needs no
        permission) on a channel of its own, since the broker closes a channel that names a missing one."""
        assert self._connection is not None and self._connection.transport is not None
        channel = await self._connection.transport.connection.channel()
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

    async def _declare_topology(self, channel: AbstractRobustChannel
                                ) -> tuple[AbstractExchange, AbstractExchange, AbstractQueue]:
        """Declares (and binds) everything the engine owns: the dead letters, the commands exchange and
        queue, the events exchange. Returns the commands and events exchanges and the dead queue."""
        dlx = await channel.declare_exchange(self.dlx_name, aio_pika.ExchangeType.FANOUT, durable=True)
        dead = await channel.declare_queue(self.dead_queue_name, durable=True)
        await dead.bind(dlx, routing_key="")
        commands_exchange = await channel.declare_exchange(
            self.commands_exchange_name, aio_pika.ExchangeType.DIRECT, durable=True,
        )
        commands = await channel.declare_queue(
            self.commands_queue_name, durable=True, arguments=self._command_queue_arguments(),
        )
        await commands.bind(commands_exchange, routing_key=COMMAND_ROUTING_KEY)
        events_exchange = await channel.declare_exchange(
            self.events_exchange_name, aio_pika.ExchangeType.TOPIC, durable=True,
        )
        return commands_exchange, events_exchange, dead

    async def close(self) -> None:
        if self._connection is None:
            return
        self._closing = True  # our own close is no loss to report
        # while the robust connection is reconnecting, every channel operation would wait for it:
        # then skip straight to closing the connection (the broker has dropped the consumers already)
        connected = self._connection.connected.is_set()  # type: ignore[attr-defined]
        # 1. no new deliveries
        for queue, cancel in self._consumers if connected else ():
            try:
                await asyncio.wait_for(cancel(), _CLOSE_TIMEOUT)
            except Exception:  # the channel may be gone already; closing it below cancels too
                log.warning("could not cancel the consumer on %s", queue, exc_info=True)
        self._consumers.clear()
        # 2. let the handlers in flight finish (and ack) for a while, then cancel them: a message
        #    left unacked goes back to its queue when the channel closes
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=self.shutdown_grace)
        for task in list(self._inflight):
            task.cancel()
        await asyncio.gather(*self._inflight, return_exceptions=True)
        self._inflight.clear()
        for acker in self._ackers if connected else ():
            await acker.flush()
        self._ackers.clear()
        # 3. channels, then the connection
        connected = connected and self._connection.connected.is_set()  # type: ignore[attr-defined]
        channels = [*self._consume_channels, self._publish_channel] if connected else []
        for channel in channels:
            if channel is not None and not channel.is_closed:
                try:
                    await asyncio.wait_for(channel.close(), _CLOSE_TIMEOUT)
                except Exception:
                    log.warning("could not close a channel cleanly", exc_info=True)
        self._consume_channels.clear()
        self._publish_channel = None
        self._commands_exchange = self._events_exchange = self._dead_queue = None
        connection, self._connection = self._connection, None
        await connection.close()

    async def __aenter__(self) -> "RabbitBus":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _require_started(self) -> AbstractRobustConnection:
        if self._connection is None:
            raise RuntimeError("RabbitBus is not started: await bus.start() first")
        return self._connection

    # -- publishing -------------------------------------------------------------------

    async def _publish(self, exchange: AbstractExchange | None, key: str, body: bytes, message_id: str | None,
                       user_id: str | None = None) -> None:
        self._require_started()
        assert exchange is not None and self._publish_channel is not None
        # while the robust connection reconnects, wait for it (and this channel's restored topology)
        # instead of failing at once; a publish that was in flight when the connection dropped
        # still fails: retrying it is the caller's call (it may duplicate, message_id dedupes).
        # When all is well nothing here yields (publish_events relies on that for the order).
        if not self._ready():
            await asyncio.wait_for(self._publish_channel.ready(), self.publish_timeout)
        if self._publish_channel.is_closed:
            raise ChannelInvalidStateError(f"{self._publish_channel!r} closed")
        # straight to aiormq: aio-pika's Message (and its validation) was 7% of the engine's CPU
        channel = await self._publish_channel.get_underlay_channel()
        properties = aiormq.spec.Basic.Properties(delivery_mode=2, content_type="application/json",
                                                  message_id=message_id, user_id=user_id)
        try:
            result = await channel.basic_publish(body, exchange=exchange.name, routing_key=key, properties=properties,
                                                 mandatory=True, timeout=self.publish_timeout)
        except PublishError as e:  # basic.return: no queue is bound for this key
            raise Unroutable(f"{exchange.name}/{key}: {e}") from e
        except DeliveryError as e:  # basic.nack: the broker did not take it (e.g. a queue over its limit)
            raise Unroutable(f"{exchange.name}/{key}: the broker refused the message: {e}") from e
        if not isinstance(result, aiormq.spec.Basic.Ack):  # a return handed back instead of raised
            raise Unroutable(f"{exchange.name}/{key}: {result!r}")

    def _ready(self) -> bool:
        connection, channel = self._connection, self._publish_channel
        return (connection is not None and connection.connected.is_set()  # type: ignore[attr-defined]
                and channel is not None and not channel.is_closed)

    async def send_command(self, envelope: CommandEnvelope) -> None:
        await self._publish(
            self._commands_exchange, COMMAND_ROUTING_KEY, envelope.model_dump_json().encode(), envelope.message_id,
            self.user,
        )

    async def send_raw_command(self, body: bytes) -> None:
        await self._publish(self._commands_exchange, COMMAND_ROUTING_KEY, body, _message_id_of(body), self.user)

    async def publish_event(self, envelope: EventEnvelope, channel: str) -> None:
        key = routing_key(channel, envelope.audience.kind.value, envelope.game_id)
        await self._publish(self._events_exchange, key, envelope.model_dump_json().encode(), envelope.message_id)

    async def publish_events(self, envelopes: list[EventEnvelope], channel: str, *,
                             bodies: list[str] | None = None) -> None:
        """Several events, each game's in order, in as few messages as keep that order.

        Each game's events are cut into runs (consecutive events with one audience kind); the
        k-th runs of every game with the same audience kind travel together as one message whose
        body is a JSON array, and round k is published before round k + 1. A message holding one
        game's events has the key ``<channel>.<audience>.<game>``, one holding several games'
        ``<channel>.<audience>._``."""
        if bodies is None:
            bodies = [e.model_dump_json() for e in envelopes]
        runs: dict[str, list[tuple[str, list[tuple[EventEnvelope, str]]]]] = {}  # game -> its runs
        for envelope, body in zip(envelopes, bodies):
            game_runs = runs.setdefault(envelope.game_id, [])
            kind = envelope.audience.kind.value
            if game_runs and game_runs[-1][0] == kind:
                game_runs[-1][1].append((envelope, body))
            else:
                game_runs.append((kind, [(envelope, body)]))
        rounds: list[dict[str, list[tuple[EventEnvelope, str]]]] = []
        for game_runs in runs.values():
            for k, (kind, run) in enumerate(game_runs):
                if k == len(rounds):
                    rounds.append({})
                rounds[k].setdefault(kind, []).extend(run)
        # Every message is handed to the channel now, in round order, and the confirms are awaited
        # together: each publish is a task started in this order, and none yields before taking the
        # channel's (first come, first served) write lock, so the broker receives them in this order.
        tasks = [asyncio.ensure_future(self._publish_run(channel, kind, run))
                 for messages in rounds for kind, run in messages.items()]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        unroutable = [str(r) for r in results if isinstance(r, Unroutable)]  # others may still have subscribers
        failed = next((r for r in results if isinstance(r, BaseException) and not isinstance(r, Unroutable)), None)
        if failed is not None:
            raise failed
        if unroutable:
            raise Unroutable("; ".join(unroutable))

    async def _publish_run(self, channel: str, kind: str, run: list[tuple[EventEnvelope, str]]) -> None:
        first = run[0][0]
        several = any(envelope.game_id != first.game_id for envelope, _ in run)
        key = routing_key(channel, kind, None if several else first.game_id)
        if len(run) == 1:
            body, message_id = run[0][1].encode(), first.message_id
        else:
            body = ("[" + ",".join(b for _, b in run) + "]").encode()
            message_id = f"{first.message_id}+{len(run) - 1}"
        await self._publish(self._events_exchange, key, body, message_id)

    # -- consuming ----------------------------------------------------------------------

    def _new_acker(self) -> Acker:
        acker = Acker(self._spawn)
        self._ackers.append(acker)
        return acker

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = asyncio.create_task(coro)
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return task

    async def consume_commands(self, handler: CommandHandler, *, prefetch: int = 64) -> None:
        """Commands are consumed with aiormq directly: aio-pika's consumer wraps each delivery in an
        IncomingMessage and one more task, ~8% of the engine's CPU. The robust channel comes back
        after a reconnect (with its QoS); the consumer is registered on it again here."""
        connection = self._require_started()
        channel = await connection.channel()
        self._consume_channels.append(channel)
        await channel.set_qos(prefetch_count=prefetch)  # the broker keeps at most `prefetch` unacked here
        await self._declare_topology(channel)  # the commands' consumer (the engine) owns it all
        acker = self._new_acker()
        tags: list[str] = []  # the consumer's tag on the current underlying channel

        async def on_delivery(delivered: aiormq.abc.DeliveredMessage) -> None:
            # aiormq runs this in a task per delivery, created in delivery order; starting the
            # handler's task here, without awaiting anything first, keeps the arrival order. The
            # handler needs a task of its own: aiormq cancels its tasks when the connection drops,
            # and a command being decided must still finish (its ack then goes nowhere).
            message = _Delivery(delivered)
            acker.delivered(message)
            acker.watch(message, self._spawn(self._handle_command(handler, message, acker)))

        async def consume() -> None:
            underlay = await channel.get_underlay_channel()
            result = await underlay.basic_consume(self.commands_queue_name, on_delivery)
            tags[:] = [result.consumer_tag]

        async def cancel() -> None:
            if tags and not channel.is_closed:
                underlay = await channel.get_underlay_channel()
                await underlay.basic_cancel(tags[0])

        async def consume_again(*_: Any) -> None:  # aio-pika gathers reopen callbacks' errors silently
            try:
                await consume()
            except Exception:
                log.exception("could not consume %s again after reconnecting", self.commands_queue_name)
                raise

        await consume()
        channel.reopen_callbacks.add(consume_again)
        self._consumers.append((self.commands_queue_name, cancel))

    def _on_connection_lost(self, _sender=None, error: BaseException | None = None, *_args) -> None:
        if not self._lost and not self._closing:
            self._lost = True
            why = f" ({' '.join(str(error).split())[:200]})" if error else ""
            log.warning("RabbitMQ connection lost%s: reconnecting every %s s (commands in flight are "
                        "delivered again)", why, RECONNECT_INTERVAL)

    def _on_reconnected(self, *_args) -> None:
        if self._lost:
            log.info("RabbitMQ connection back")
        self._lost = False

    def _connection_trouble(self, error: BaseException) -> bool:
        """A handler failed because the broker connection went away under it (an expected event,
        told once by _on_connection_lost): no line per command; the broker delivers it again."""
        if not (self._lost or isinstance(error, CONNECTION_ERRORS)):
            return False
        log.debug("a command in flight was cut off by the connection's loss: %r", error)
        return True

    async def _handle_command(self, handler: CommandHandler, message: "_Delivery", acker: Acker) -> None:
        COMMAND_SENDER.set(message.user_id)  # this task's context: the handler reads who sent it
        try:
            await handler(message.body)
        except PoisonMessage as e:
            log.warning("poison command %s dead-lettered: %s", message.message_id, e)
            await acker.reject(message, requeue=False)
        except asyncio.CancelledError:
            raise  # shutting down: left unacked (abandoned, see Acker.watch), the broker delivers it again
        except Exception as error:
            if not self._connection_trouble(error):
                log.exception("command handler failed (delivery count %s)", delivery_count(message))
            await acker.reject(message, requeue=True)
        else:
            acker.ack(message)

    async def subscribe_events(self, name: str, pattern: str, handler: EventHandler, *,
                               by_game: bool = False) -> None:
        connection = self._require_started()
        # a channel of its own: delivery tags (and so bulk acks) are per channel, and one slow
        # subscription must not hold back another's acknowledgements
        channel = await connection.channel()
        self._consume_channels.append(channel)
        await channel.set_qos(prefetch_count=self.game_prefetch if by_game else self.event_prefetch)
        queue = await channel.declare_queue(
            self.event_queue_name(name), durable=True, arguments=self._quorum_arguments(),
        )
        await queue.bind(self.events_exchange_name, routing_key=pattern)
        self._subscriptions.add(name)
        # one subscription's events are handled one at a time, in arrival order; by_game: each game's
        locks = GameLocks() if by_game else OneLock()
        acker = self._new_acker()

        async def on_message(message: AbstractIncomingMessage) -> None:
            acker.delivered(message)
            acker.watch(message, self._spawn(self._handle_event(handler, message, locks, acker)))

        tag = await queue.consume(on_message)
        self._consumers.append((queue.name, lambda: queue.cancel(tag)))

    async def _handle_event(self, handler: EventHandler, message: AbstractIncomingMessage, locks: OneLock,
                            acker: Acker) -> None:
        try:
            if message.body[:1] == b"[":
                envelopes = _BATCH.validate_json(message.body)
            else:
                envelopes = [EventEnvelope.model_validate_json(message.body)]
        except ValidationError as e:
            log.error("malformed event %s on %s dead-lettered: %s; body %r",
                      message.message_id, message.routing_key, e, message.body[:500])
            async with locks.held(()):  # settled in its turn, like any other
                await acker.reject(message, requeue=False)
            return
        # taken before this task's first wait: the tasks queue for a game in delivery order
        async with locks.held(sorted({e.game_id for e in envelopes})):
            EVENT_REDELIVERED.set(bool(message.redelivered))  # this task's context: the handler reads it
            try:
                await self._handle_waiting_for_database(handler, envelopes)
            except asyncio.CancelledError:
                raise  # abandoned, see Acker.watch
            except Exception:
                log.exception("event handler failed (delivery count %s)", delivery_count(message))
                await acker.reject(message, requeue=True)
            else:
                acker.ack(message)

    async def _handle_waiting_for_database(self, handler: EventHandler, envelopes: list[EventEnvelope]) -> None:
        """Hand each envelope to the handler. One that failed because the database is unreachable is
        tried again in place, with backoff, until the database answers: rejecting it would count a
        delivery each time, and five quick ones dead-letter an event a player is waiting for. The
        message stays unacknowledged meanwhile (the broker keeps it); one line when it starts, one
        when it is over."""
        lost_at: float | None = None
        for envelope in envelopes:
            delay = 0.2
            while True:
                try:
                    await handler(envelope)
                    break
                except Exception as error:
                    if not (database_down(error) and raised_by_database(error)):
                        raise
                    if lost_at is None:
                        lost_at = time.monotonic()
                        if not self._database_lost:
                            log.warning("database unreachable (%s): events wait until it answers",
                                        " ".join(str(error).split())[:200] or type(error).__name__)
                        self._database_lost = True
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
        if lost_at is not None and self._database_lost:
            self._database_lost = False
            log.info("database back after %.1f s: events flow again", time.monotonic() - lost_at)

    # -- dead letters ---------------------------------------------------------------------

    async def dead_letters(self) -> list[bytes]:
        self._require_started()
        assert self._dead_queue is not None
        bodies: list[bytes] = []
        while True:
            message = await self._dead_queue.get(no_ack=False, fail=False)
            if message is None:
                return bodies
            bodies.append(message.body)
            await message.ack()

    # -- tests ----------------------------------------------------------------------------

    async def delete_everything(self, *subscriptions: str) -> None:
        """Delete every queue and exchange under this prefix (tests). Works whether or not the bus is
        started; event queues are known by the names this bus subscribed plus ``subscriptions``."""
        queues = [self.commands_queue_name, self.dead_queue_name,
                  *(self.event_queue_name(n) for n in sorted({*self._subscriptions, *subscriptions}))]
        exchanges = [self.commands_exchange_name, self.events_exchange_name, self.dlx_name]
        connection = await aio_pika.connect(self.url)
        async with connection:
            channel = await connection.channel()
            for queue in queues:
                # quorum queues refuse if_unused/if_empty (aio-pika's defaults) with a *connection* error
                await channel.queue_delete(queue, if_unused=False, if_empty=False)
            for exchange in exchanges:
                await channel.exchange_delete(exchange, if_unused=False)


class TopologyMissing(ConnectionError):
    """The engine's exchanges and queues are not there yet and this broker user may not declare them (a
    gateway started before the engine ever did): a ConnectionError, so start-up waits and tries again."""


_BATCH = TypeAdapter(list[EventEnvelope])


class _Delivery:
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


def _message_id_of(body: bytes) -> str | None:
    """The envelope's message_id when the raw body is one (and fits AMQP's 255 bytes); None for anything
    else, garbage nested deeper than the parser goes included."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    value = data.get("message_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) and len(value.encode("utf-8", "replace")) <= 255 else None


__all__ = ["RabbitBus", "TopologyMissing"]
