"""Subscriptions to the events exchange (the gateways): each a durable queue of its own, its events
handed over one at a time in arrival order (``by_game``: each game's), a message of several events
(a JSON array) one envelope after another, and a database outage waited out in place."""

from __future__ import annotations

import asyncio
import logging
import time

from aio_pika.abc import AbstractIncomingMessage
from pydantic import TypeAdapter, ValidationError

from avalon.shared.db import database_down, raised_by_database
from avalon.shared.protocol import EventEnvelope

from ..base import EVENT_REDELIVERED, EventHandler
from .acks import Acker, delivery_count
from .consumers import Consumers
from .link import BrokerLink
from .ordering import GameLocks, OneLock
from .topology import Topology

log = logging.getLogger(__package__)  # the bus speaks under one name, "avalon.shared.bus.rabbit", whichever piece

_BATCH = TypeAdapter(list[EventEnvelope])


class EventSubscriptions:
    """``prefetch``: how many unacknowledged events a plain subscription has in hand; ``game_prefetch``:
    a ``by_game`` subscription's, more, as its games' events are handled side by side and committed
    together (bench/load_bench.py, 500 games: 70 s and 2.3 ms of the Telegram gateway's CPU a message
    with 256; 86 s and 3.0 ms with 64, a batch's acknowledgement held back by its oldest message).
    ``names``: every subscription made, so their queues can be deleted (tests)."""

    def __init__(self, link: BrokerLink, topology: Topology, consumers: Consumers, *, prefetch: int,
                 game_prefetch: int) -> None:
        self._link = link
        self._topology = topology
        self._consumers = consumers
        self.prefetch = prefetch
        self.game_prefetch = game_prefetch
        self.names: set[str] = set()
        self._database = DatabaseWait()

    async def subscribe(self, name: str, pattern: str, handler: EventHandler, *, by_game: bool = False) -> None:
        connection = self._link.require()
        # a channel of its own: delivery tags (and so bulk acks) are per channel, and one slow
        # subscription must not hold back another's acknowledgements
        channel = await self._consumers.open_channel(connection, self.game_prefetch if by_game else self.prefetch)
        queue = await self._topology.declare_event_queue(channel, name, pattern)
        self.names.add(name)
        # one subscription's events are handled one at a time, in arrival order; by_game: each game's
        locks = GameLocks() if by_game else OneLock()
        acker = self._consumers.acker()

        async def on_message(message: AbstractIncomingMessage) -> None:
            acker.delivered(message)
            acker.watch(message, self._consumers.spawn(self._handle(handler, message, locks, acker)))

        tag = await queue.consume(on_message)
        self._consumers.consuming(queue.name, lambda: queue.cancel(tag))

    async def _handle(self, handler: EventHandler, message: AbstractIncomingMessage, locks: OneLock,
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
                await self._database.hand_over(handler, envelopes)
            except asyncio.CancelledError:
                raise  # abandoned, see Acker.watch
            except Exception:
                log.exception("event handler failed (delivery count %s)", delivery_count(message))
                await acker.reject(message, requeue=True)
            else:
                acker.ack(message)


class DatabaseWait:
    """Hands events to a handler, waiting out a database outage in place; ``lost`` while one is on,
    so that every subscription's handlers together say so once."""

    def __init__(self) -> None:
        self.lost = False

    async def hand_over(self, handler: EventHandler, envelopes: list[EventEnvelope]) -> None:
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
                        if not self.lost:
                            log.warning("database unreachable (%s): events wait until it answers",
                                        " ".join(str(error).split())[:200] or type(error).__name__)
                        self.lost = True
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
        if lost_at is not None and self.lost:
            self.lost = False
            log.info("database back after %.1f s: events flow again", time.monotonic() - lost_at)
