"""The bus: commands in, events out. One interface, two implementations.

- ``InProcessBus``: asyncio queues in one process, for the embedded default
  (``avalon run``) and unit tests.
- ``RabbitBus``: RabbitMQ through aio-pika (``shared.bus.rabbit``).

Semantics both keep:

- Commands go to one queue, consumed in order. The handler gets the raw bytes;
  it raises ``PoisonMessage`` for a message that can never be handled (it is
  dead-lettered at once); any other exception is a transient failure and the
  message is delivered again, up to ``delivery_limit`` times, then
  dead-lettered. A message is acknowledged only after the handler returns.
- Events are published with a routing key ``<channel>.<audience>.<game_id>``
  (``telegram.public.g1``, ``email.players.g1``); a subscriber binds a
  pattern with AMQP topic wildcards (``*`` one word, ``#`` any number).
  Publishing an event no subscriber can receive raises ``Unroutable``.
"""

from __future__ import annotations

from .base import Bus, CommandHandler, EventHandler, PoisonMessage, Unroutable, routing_key, topic_matches
from .memory import InProcessBus

__all__ = [
    "Bus", "CommandHandler", "EventHandler", "PoisonMessage", "Unroutable", "routing_key", "topic_matches",
    "InProcessBus",
]
