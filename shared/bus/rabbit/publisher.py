"""Publishing on the bus: commands to the commands exchange, events to the events exchange, each game's
events in order in as few messages as keep that order.

Every message is persistent JSON with its envelope's ``message_id``, published
with publisher confirms and ``mandatory``: a message no queue takes raises
``Unroutable`` instead of vanishing.
"""

from __future__ import annotations

import asyncio
import json
import logging

import aiormq
from aio_pika.abc import AbstractRobustChannel, AbstractRobustConnection
from aio_pika.exceptions import ChannelInvalidStateError, DeliveryError, PublishError

from avalon.shared.protocol import CommandEnvelope, EventEnvelope

from ..base import Unroutable, routing_key
from .link import BrokerLink, close_channel
from .topology import COMMAND_ROUTING_KEY, Topology

log = logging.getLogger(__package__)  # the bus speaks under one name, "avalon.shared.bus.rabbit", whichever piece

#: The header of a partition probe (its value: the consumer that sent it).
PROBE_HEADER = "x-avalon-probe"
#: seconds between a command's publish cut off by the connection and the next try (which first waits
#: for the connection to be back)
RESEND_PAUSE = 0.1


class Publisher:
    """Publishes on a channel of its own with confirms. ``user``: who this connection is to the broker;
    every command carries it as ``user_id``, which RabbitMQ checks against the login, so the engine
    knows which service's user sent it. ``timeout``: how long a publish may wait for a reconnection in
    progress, and then for the broker's confirm."""

    def __init__(self, link: BrokerLink, topology: Topology, *, user: str, timeout: float) -> None:
        self._link = link
        self._topology = topology
        self.user = user
        self.timeout = timeout
        self._channel: AbstractRobustChannel | None = None

    async def open(self, connection: AbstractRobustConnection) -> AbstractRobustChannel:
        self._channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        return self._channel

    def ready(self) -> bool:
        """Connected, and this channel open: a publish now goes straight out."""
        return self._link.connected and self._channel is not None and not self._channel.is_closed

    async def close(self, *, connected: bool) -> None:
        """Close the channel (only asked of the broker while ``connected``) and forget it."""
        channel, self._channel = self._channel, None
        if connected:
            await close_channel(channel)

    async def send_command(self, envelope: CommandEnvelope) -> None:
        await self._command(self._topology.key_of(envelope.game_id), envelope.model_dump_json().encode(),
                            envelope.message_id)

    async def send_raw_command(self, body: bytes) -> None:
        """Raw bytes go to the partition of the game they name, if they name one (partition 0 if not)."""
        game_id = _field(body, "game_id")
        key = self._topology.key_of(game_id) if game_id else COMMAND_ROUTING_KEY
        await self._command(key, body, message_id_of(body))

    async def _command(self, key: str, body: bytes, message_id: str | None) -> None:
        """A command whose publish was in flight when the connection dropped (a RabbitMQ node stopping,
        the network cut) is published again once the connection is back, for ``timeout`` at most: it
        keeps its message id, and the engine applies a command id once, so a copy the broker had taken
        already changes nothing. Without it a player's press was lost with the connection (the Telegram
        gateway logs the update that failed and goes on)."""
        deadline = asyncio.get_running_loop().time() + self.timeout
        while True:
            try:
                await self._publish(self._topology.commands_exchange_name, key, body, message_id, self.user)
                return
            except (ConnectionError, ChannelInvalidStateError) as error:  # not a refusal (ChannelClosed)
                if self._link.connection is None or asyncio.get_running_loop().time() >= deadline:
                    raise  # the bus is closing, or the broker has stayed away too long
                log.info("command %s cut off with the connection (%r): sent again once it is back", message_id,
                         error)
                await asyncio.sleep(RESEND_PAUSE)

    async def probe(self, partition: int, consumer: str) -> None:
        """A probe to one command partition: whichever consumer serves it learns so (its first delivery
        may be long in coming). No expiry: an expired message would be dead-lettered; one is only sent
        while the sender consumes the partition too, so some consumer always takes it."""
        await self._publish(self._topology.commands_exchange_name, self._topology.command_key(partition), b"",
                            None, self.user, headers={PROBE_HEADER: consumer})

    async def publish_event(self, envelope: EventEnvelope, channel: str) -> None:
        key = routing_key(channel, envelope.audience.kind.value, envelope.game_id)
        await self._publish(self._topology.events_exchange_name, key, envelope.model_dump_json().encode(),
                            envelope.message_id)

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
        await self._publish(self._topology.events_exchange_name, key, body, message_id)

    async def _publish(self, exchange: str, key: str, body: bytes, message_id: str | None,
                       user_id: str | None = None, *, headers: dict | None = None) -> None:
        self._link.require()
        assert self._channel is not None
        # while the robust connection reconnects, wait for it (and this channel's restored topology)
        # instead of failing at once; a publish that was in flight when the connection dropped
        # still fails: retrying it is the caller's call (it may duplicate, message_id dedupes).
        # When all is well nothing here yields (publish_events relies on that for the order).
        if not self.ready():
            await asyncio.wait_for(self._channel.ready(), self.timeout)
        if self._channel.is_closed:
            raise ChannelInvalidStateError(f"{self._channel!r} closed")
        # straight to aiormq: aio-pika's Message (and its validation) was 7% of the engine's CPU
        channel = await self._channel.get_underlay_channel()
        properties = aiormq.spec.Basic.Properties(delivery_mode=2, content_type="application/json",
                                                  message_id=message_id, user_id=user_id, headers=headers)
        try:
            result = await channel.basic_publish(body, exchange=exchange, routing_key=key, properties=properties,
                                                 mandatory=True, timeout=self.timeout)
        except PublishError as e:  # basic.return: no queue is bound for this key
            raise Unroutable(f"{exchange}/{key}: {e}") from e
        except DeliveryError as e:  # basic.nack: the broker did not take it (e.g. a queue over its limit)
            raise Unroutable(f"{exchange}/{key}: the broker refused the message: {e}") from e
        if not isinstance(result, aiormq.spec.Basic.Ack):  # a return handed back instead of raised
            raise Unroutable(f"{exchange}/{key}: {result!r}")


def message_id_of(body: bytes) -> str | None:
    """The envelope's message_id when the raw body is one (and fits AMQP's 255 bytes); None for anything
    else, garbage nested deeper than the parser goes included."""
    value = _field(body, "message_id")
    return value if value and len(value.encode("utf-8", "replace")) <= 255 else None


def _field(body: bytes, name: str) -> str | None:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
