"""Consuming the command partitions (the engine): each partition's commands handed to the handler in
arrival order, each in a task of its own, and settled by what the handler did: acknowledged,
dead-lettered as poison, or returned to be delivered again."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from typing import Any, Awaitable

import aiormq

from avalon.shared import ops

from ..base import COMMAND_PARTITION, COMMAND_SENDER, CommandHandler, PartitionWatch, PoisonMessage
from .acks import Acker, delivery_count
from .consumers import Consumers
from .link import CONNECTION_ERRORS, BrokerLink, close_channel
from .publisher import PROBE_HEADER
from .topology import Topology

log = logging.getLogger(__package__)  # the bus speaks under one name, "avalon.shared.bus.rabbit", whichever piece


class CommandConsumer:
    """The consumer of the command partitions (the engine's bus has one), a channel for each partition.

    Every engine consumes every partition; RabbitMQ's single active consumer hands each partition's
    commands to one of them at a time, in order, and to the next in line when that one's connection
    closes (a crash included). A consumer learns that it serves a partition from the partition's first
    delivery to it: a command, or one of the probes it sends every ``PROBE_EVERY`` seconds to the
    partitions it does not serve. ``watch`` (the engine) is told, and that delivery and the partition's
    next ones wait for its takeover work. Every ``BALANCE_EVERY`` seconds a consumer that serves more
    than its share (the partitions over the consumers registered on them) hands an idle one on: it
    closes that partition's channel, with nothing of it in flight, and subscribes again at the back
    of the line. The consumers it shares with are the senders of the probes it received lately."""

    PROBE_EVERY = 0.5
    BALANCE_EVERY = 2.0
    REVIVE_AFTER = 3  # probe rounds in a row a partition's subscription was found without its consumer

    def __init__(self, link: BrokerLink, topology: Topology, consumers: Consumers, publisher) -> None:
        self._link = link
        self._topology = topology
        self._consumers = consumers
        self._publisher = publisher
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.served = Served()  # the partitions this consumer serves, as far as it knows
        self.revived = 0  # partitions subscribed again after a reconnect left them without a consumer
        self._subscriptions: dict[int, _Subscription] = {}
        self._inflight: dict[int, int] = {}  # partition -> deliveries being handled
        self._handler: CommandHandler | None = None
        self._prefetch = 64
        self._loops: list[asyncio.Task] = []

    async def consume(self, handler: CommandHandler, *, prefetch: int = 64,
                      watch: PartitionWatch | None = None) -> None:
        """Commands are consumed with aiormq directly: aio-pika's consumer wraps each delivery in an
        IncomingMessage and one more task, ~8% of the engine's CPU. The robust channels come back
        after a reconnect (with their QoS); the consumers are registered on them again here."""
        connection = self._link.require()
        await self._topology.check_partitions(connection)
        self._handler, self._prefetch, self.served.watch = handler, prefetch, watch
        for partition in range(self._topology.partitions):
            await self._subscribe(partition, declare=partition == 0)
        self._link.on_lost.append(lambda: self.served.lose(set(self.served)))
        self._loops = [asyncio.create_task(self._probe_loop())]
        if self._topology.partitions > 1:
            self._loops.append(asyncio.create_task(self._balance_loop()))

    async def stop(self) -> None:
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops.clear()

    async def _subscribe(self, partition: int, *, declare: bool = False) -> None:
        connection = self._link.require()
        channel = await self._consumers.open_channel(connection, self._prefetch)
        if declare:
            await self._topology.declare(channel, connection)  # the commands' consumer (the engine) owns it all
        acker = self._consumers.acker()
        queue = self._topology.command_queue(partition)
        sub = _Subscription(channel, acker)
        tags: list[str] = []  # the consumer's tag on the current underlying channel

        async def on_delivery(delivered: aiormq.abc.DeliveredMessage) -> None:
            # aiormq runs this in a task per delivery, created in delivery order; starting the
            # handler's task here, without awaiting anything first, keeps the arrival order. The
            # handler needs a task of its own: aiormq cancels its tasks when the connection drops,
            # and a command being decided must still finish (its ack then goes nowhere).
            message = Delivery(delivered)
            acker.delivered(message)
            if sub.closed:  # handed on: its channel's close gives it back to the queue
                acker.abandon(message)
                return
            self._inflight[partition] = self._inflight.get(partition, 0) + 1
            ticket = self.served.ticket(partition)
            acker.watch(message, self._consumers.spawn(self._handle(message, acker, partition, ticket)))

        async def consume() -> None:
            underlay = await channel.get_underlay_channel()
            result = await underlay.basic_consume(queue, on_delivery)
            tags[:] = [result.consumer_tag]

        async def cancel() -> None:
            if tags and not channel.is_closed:
                underlay = await channel.get_underlay_channel()
                await underlay.basic_cancel(tags[0])

        async def consume_again(*_: Any) -> None:  # aio-pika gathers reopen callbacks' errors silently
            if sub.closed:
                return
            self.served.lose({partition})  # back in the line: another consumer may serve it now
            try:
                await consume()
            except (aiormq.exceptions.AMQPConnectionError, aiormq.exceptions.ChannelInvalidStateError,
                    ConnectionError) as error:  # the new connection dropped too (or, a queue's leader moving,
                # the broker refused the consume): the next connection consumes, or the watch (``_revive``)
                log.warning("could not consume %s again: the connection dropped again (%s)", queue, error)
                raise
            except Exception:
                log.exception("could not consume %s again after reconnecting", queue)
                raise

        async def alive() -> bool:
            if channel.is_closed:
                return False
            underlay = await asyncio.wait_for(channel.get_underlay_channel(), 1)
            return not underlay.is_closed and bool(tags) and tags[0] in underlay.consumers

        sub.cancel, sub.alive = cancel, alive
        await consume()
        channel.reopen_callbacks.add(consume_again)
        self._consumers.consuming(queue, cancel)
        self._subscriptions[partition] = sub

    async def _handle(self, message: "Delivery", acker: Acker, partition: int, ticket: int) -> None:
        COMMAND_SENDER.set(message.user_id)  # this task's context: the handler reads who sent it
        COMMAND_PARTITION.set(partition)
        try:
            await self.served.turn(partition, ticket)
            sender = (message.headers or {}).get(PROBE_HEADER)
            if sender is not None:
                if sender != self.name:  # its own, sent before it served this partition
                    self.served.heard(sender)
                await acker.ack_now(message)
                return
            assert self._handler is not None
            await self._handler(message.body)
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
        finally:
            self._inflight[partition] -= 1

    async def _probe_loop(self) -> None:
        while True:
            try:
                await self._revive()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the connection is away again: the next round looks again
                log.debug("command subscriptions not checked: %r", error)
            for partition in range(self._topology.partitions):
                if partition not in self.served and self._link.connected:
                    try:
                        await self._publisher.probe(partition, self.name)
                    except Exception as error:  # the connection is away: the next round tries again
                        log.debug("probe of partition %d not sent: %r", partition, error)
            await asyncio.sleep(self.PROBE_EVERY)

    async def _revive(self) -> None:
        """Subscribe again to a partition left without this consumer's subscription after a reconnect:
        on a cluster, a node stopping can refuse the restored consume (its queue's leader moving) while
        the connection itself stays up, and nothing would restore it. A few checks in a row first:
        a restore may be under way."""
        if not self._link.connected:
            return
        for partition in range(self._topology.partitions):
            if partition not in self._subscriptions:  # its subscribing again failed (the connection dropped)
                await self._subscribe(partition)
        for partition, sub in list(self._subscriptions.items()):
            try:
                alive = sub.closed or await sub.alive()
            except Exception:  # noqa: BLE001 - the connection is away again: the next round looks again
                alive = True
            sub.dead = 0 if alive else sub.dead + 1
            if sub.dead >= self.REVIVE_AFTER and self._subscriptions.get(partition) is sub:
                log.warning("command partition %d had no consumer here after the reconnect: subscribing again",
                            partition)
                self.revived += 1
                await self._resubscribe(partition)

    async def _balance_loop(self) -> None:
        while True:
            await asyncio.sleep(self.BALANCE_EVERY)
            try:
                await self._balance()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the connection is away: the next round looks again
                log.debug("partition balance skipped: %r", error, exc_info=True)

    async def _balance(self) -> None:
        """Hand one idle partition on when this consumer serves more than its share."""
        if not self._link.connected or self.served.taking_over:
            return
        # the other consumers: each probes the partitions it does not serve, so whoever serves one hears
        # from all of them (RabbitMQ counts only the active consumer of a single-active-consumer queue)
        partitions = self._topology.partitions
        share = -(-partitions // (1 + self.served.peers(within=4 * self.PROBE_EVERY)))
        if len(self.served) <= share:
            return
        idle = [p for p in sorted(self.served, reverse=True) if not self._inflight.get(p)]
        if idle:
            await self.hand_on(idle[0])

    async def hand_on(self, partition: int) -> None:
        """Stop serving ``partition``: its channel closes (anything delivered and not begun goes back to
        the queue, to the next consumer in line) and this consumer subscribes again, last in line."""
        ops.PARTITIONS_HANDED_ON.inc()
        log.info("command partition %d handed on to even the load", partition)
        await self._resubscribe(partition)

    async def _resubscribe(self, partition: int) -> None:
        sub = self._subscriptions.pop(partition)
        sub.closed = True  # no await before this: a delivery arriving now is left to the close
        self.served.lose({partition})
        self._consumers.drop(sub.channel, sub.cancel, sub.acker)
        await close_channel(sub.channel)
        await self._subscribe(partition)

    def _cut_off(self, error: BaseException) -> bool:
        """A handler failed because the broker connection went away under it (an expected event,
        told once by the link): no line per command; the broker delivers it again."""
        if not (self._link.lost or isinstance(error, CONNECTION_ERRORS)):
            return False
        log.debug("a command in flight was cut off by the connection's loss: %r", error)
        return True


class Served:
    """The partitions a consumer serves, as far as it knows, and the takeover each delivery of a
    partition waits for; ``watch`` (the engine) is told of each gain and loss. And the other consumers
    it shares them with: the senders of the probes it received lately."""

    def __init__(self) -> None:
        self.watch: PartitionWatch | None = None
        self._peers: dict[object, float] = {}  # the other consumers whose probes came lately -> when
        self._served: set[int] = set()
        self._gates: dict[int, asyncio.Future] = {}  # partition -> its takeover, while in progress
        self._issued: dict[int, int] = {}  # partition -> tickets given out
        self._next: dict[int, int] = {}  # partition -> the ticket whose turn it is
        self._waiting: dict[tuple[int, int], asyncio.Future] = {}  # (partition, ticket) -> its wake-up

    def __contains__(self, partition: int) -> bool:
        return partition in self._served

    def __iter__(self):
        return iter(self._served)

    def __len__(self) -> int:
        return len(self._served)

    def heard(self, peer: object) -> None:
        self._peers[peer] = asyncio.get_running_loop().time()

    def peers(self, *, within: float) -> int:
        """How many other consumers probed this one in the last ``within`` seconds."""
        now = asyncio.get_running_loop().time()
        self._peers = {peer: seen for peer, seen in self._peers.items() if now - seen < within}
        return len(self._peers)

    @property
    def taking_over(self) -> bool:
        return bool(self._gates)

    def ticket(self, partition: int) -> int:
        """A delivery's place in its partition's order, taken as it arrives."""
        issued = self._issued.get(partition, 0)
        self._issued[partition] = issued + 1
        return issued

    async def turn(self, partition: int, ticket: int) -> None:
        """Returns once this delivery may be handled: the partition's takeover done, and every delivery
        before it on its way (a takeover's waiters resume a few loop turns after it ends: a delivery
        arriving meanwhile must not pass them). Without a takeover nor anyone waiting, at once."""
        try:
            gate = self.gate(partition)
            if gate is not None:
                await gate
            if self._next.get(partition, 0) != ticket:
                waiting = self._waiting[(partition, ticket)] = asyncio.get_running_loop().create_future()
                await waiting
        finally:
            self._waiting.pop((partition, ticket), None)
            self._next[partition] = ticket + 1
            following = self._waiting.get((partition, ticket + 1))
            if following is not None and not following.done():
                following.set_result(None)

    def gate(self, partition: int) -> Awaitable[None] | None:
        """What a delivery of ``partition`` waits for before it is handled: the takeover in progress, or
        (the partition's first delivery here) the one it starts; None once the partition is served."""
        gate = self._gates.get(partition)
        if gate is not None:
            return asyncio.shield(gate)
        if partition in self._served:
            return None
        self._served.add(partition)
        work = self.watch.serving(partition) if self.watch is not None else None
        if work is None:
            return None
        gate = asyncio.ensure_future(work)
        self._gates[partition] = gate

        def done(finished: asyncio.Future) -> None:
            if self._gates.get(partition) is finished:
                del self._gates[partition]
            if not finished.cancelled() and finished.exception() is not None:
                self._served.discard(partition)  # its deliveries go back; the next one tries again

        gate.add_done_callback(done)
        return asyncio.shield(gate)

    def lose(self, partitions: set[int]) -> None:
        partitions = partitions & self._served
        if not partitions:
            return
        self._served -= partitions
        if self.watch is not None:
            self.watch.lost(partitions)


class _Subscription:
    __slots__ = ("channel", "acker", "cancel", "alive", "closed", "dead")

    def __init__(self, channel, acker: Acker) -> None:
        self.channel = channel
        self.acker = acker
        self.cancel: Any = None
        self.alive: Any = None  # whether its consumer is registered on the channel now
        self.closed = False
        self.dead = 0  # checks in a row that found it without its consumer


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
