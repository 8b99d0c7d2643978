"""The bus interface shared by the in-process and RabbitMQ implementations."""

from __future__ import annotations

import re
import zlib
from contextvars import ContextVar
from typing import Awaitable, Callable, Iterable, Protocol

from avalon.shared.protocol import CommandEnvelope, EventEnvelope

CommandHandler = Callable[[bytes], Awaitable[None]]
EventHandler = Callable[[EventEnvelope], Awaitable[None]]

#: While a command handler runs: the broker user that published the command, as the broker verified it
#: (RabbitMQ refuses a ``user_id`` other than the connection's own); None on the in-process bus.
COMMAND_SENDER: ContextVar[str | None] = ContextVar("COMMAND_SENDER", default=None)

#: While an event handler runs: False when the broker says this message was never delivered before (so
#: no earlier run of the subscriber can have handled it); True when it may have been (and on buses that
#: cannot tell).
EVENT_REDELIVERED: ContextVar[bool] = ContextVar("EVENT_REDELIVERED", default=True)


def partition_of(game_id: str, partitions: int) -> int:
    """The command partition a game's commands go to: the same in every process, whatever the machine."""
    return zlib.crc32(game_id.encode("utf-8")) % partitions if partitions > 1 else 0


#: While a command handler runs: the command partition it came from (0 on a bus with one).
COMMAND_PARTITION: ContextVar[int] = ContextVar("COMMAND_PARTITION", default=0)


class PartitionWatch(Protocol):
    """What a commands' consumer tells of the partitions it serves (``consume_commands(watch=)``).

    A partition is served by one consumer at a time (RabbitMQ's single active consumer); the bus learns
    that this consumer serves one when a delivery (a command, or a probe it sends every little while to
    the partitions it does not serve) comes from it."""

    def serving(self, partition: int) -> Awaitable[None] | None:
        """A delivery came from ``partition``. None when it was served already; otherwise the takeover's
        work, which this delivery and every later one of the partition wait for before they are handled."""

    def lost(self, partitions: Iterable[int]) -> None:
        """These partitions are no longer served here (the connection or their channel was lost, or they
        were handed to another consumer): a command of theirs still in flight may yet be committed."""


class PoisonMessage(Exception):
    """A message that can never be handled (malformed, unknown version): dead-letter it."""


class Unroutable(Exception):
    """An event was published that no queue is bound to receive."""


class Bus(Protocol):
    delivery_limit: int
    #: the names' prefix on a broker, whose per-service users are ``<prefix>-<role>`` (the engine checks a
    #: command's publisher by it); None on a bus that has no broker users (the in-process bus)
    prefix: str | None

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def send_command(self, envelope: CommandEnvelope) -> None: ...

    async def send_raw_command(self, body: bytes) -> None:
        """Put raw bytes on the command queue (tests of poison messages)."""

    #: the command partitions (1: one queue; a broker's count, read on start)
    partitions: int

    async def consume_commands(self, handler: CommandHandler, *, prefetch: int = 64,
                               watch: PartitionWatch | None = None) -> None:
        """Start consuming; returns once the consumer is registered. ``watch`` is told which partitions
        this consumer serves, and when it no longer does."""

    async def publish_event(self, envelope: EventEnvelope, channel: str) -> None: ...

    async def publish_events(self, envelopes: list[EventEnvelope], channel: str, *,
                             bodies: list[str] | None = None) -> None:
        """Several events, each game's in order (the bus may carry them in fewer messages).
        ``bodies``: the envelopes already serialized to JSON, if the caller has them."""

    async def subscribe_events(self, name: str, pattern: str, handler: EventHandler, *,
                               by_game: bool = False) -> None:
        """A durable subscription ``name`` receiving events whose key matches ``pattern``. Its events
        are handled one at a time, in arrival order; ``by_game``: each game's one at a time, in
        arrival order, different games' side by side."""

    async def dead_letters(self) -> list[bytes]:
        """Drain and return the dead-lettered commands (for operators and tests)."""


_WORD = re.compile(r"[^.]+")


#: The routing key's third word for a message carrying several games' events.
MANY_GAMES = "_"


def routing_key(channel: str, audience_kind: str, game_id: str | None) -> str:
    """``<channel>.<audience kind>.<game>``; ``game_id`` None: a message with several games' events."""
    return f"{channel}.{audience_kind}.{MANY_GAMES if game_id is None else _safe(game_id)}"


def _safe(word: str) -> str:
    word = word.replace(".", "_")
    return word + "_" if word.strip("_") == "" else word  # never MANY_GAMES (nor empty)


def topic_matches(pattern: str, key: str) -> bool:
    """AMQP topic matching: ``*`` is exactly one word, ``#`` zero or more."""
    return _match(pattern.split("."), key.split("."))


def _match(p: list[str], k: list[str]) -> bool:
    if not p:
        return not k
    head, rest = p[0], p[1:]
    if head == "#":
        return any(_match(rest, k[i:]) for i in range(len(k) + 1))
    if not k:
        return False
    return (head == "*" or head == k[0]) and _match(rest, k[1:])
