"""The embedded bus hands an event on as "published" only once its subscribers have handled it
(as RabbitMQ's durable queues keep it), so the engine never marks published an event that a kill
could still take away; a subscriber that hangs holds the engine back a bounded time only."""

from __future__ import annotations

import asyncio
import time

from avalon.shared.bus import InProcessBus
from avalon.shared.protocol import EventEnvelope


def envelope(seq: int) -> EventEnvelope:
    return EventEnvelope.model_validate({"message_id": f"g:{seq}", "game_id": "g", "seq": seq,
                                         "occurred_at": "2026-01-01T20:00:00Z", "audience": {"kind": "public"},
                                         "event": {"type": "player_joined", "player": "test:1"}})


async def test_publishing_returns_once_every_subscriber_has_handled_the_events():
    bus = InProcessBus(confirm_events=5.0)
    handled: list[int] = []

    async def slow(e) -> None:
        await asyncio.sleep(0.1)
        handled.append(e.seq)

    await bus.subscribe_events("a", "test.#", slow)
    await bus.subscribe_events("b", "test.#", slow)
    await bus.publish_events([envelope(1), envelope(2)], "test")
    assert sorted(handled) == [1, 1, 2, 2]
    await bus.close()


async def test_a_hanging_subscriber_holds_publishing_back_only_until_the_timeout():
    bus = InProcessBus(confirm_events=0.3)
    never = asyncio.Event()

    async def stuck(e) -> None:
        await never.wait()

    await bus.subscribe_events("a", "test.#", stuck)
    started = time.monotonic()
    await bus.publish_event(envelope(1), "test")
    assert 0.25 <= time.monotonic() - started < 3
    await bus.close()


async def test_without_confirmation_publishing_does_not_wait():
    bus = InProcessBus()
    never = asyncio.Event()

    async def stuck(e) -> None:
        await never.wait()

    await bus.subscribe_events("a", "test.#", stuck)
    started = time.monotonic()
    await bus.publish_event(envelope(1), "test")
    assert time.monotonic() - started < 0.2
    await bus.close()


async def test_idle_waits_for_the_event_and_the_command_being_handled_not_only_for_the_queues():
    """`avalon demo` waits for the bus to be idle before it stops: an event taken off its queue and
    still being handled (its messages not staged yet) is work, or the game's last message was lost."""
    bus = InProcessBus(confirm_events=None)
    handled: list[str] = []

    async def slow_event(e) -> None:
        await asyncio.sleep(0.2)
        handled.append(f"event {e.seq}")

    async def slow_command(body) -> None:
        await asyncio.sleep(0.3)
        handled.append("command")

    await bus.subscribe_events("a", "test.#", slow_event)
    await bus.consume_commands(slow_command)
    await bus.publish_event(envelope(1), "test")
    await bus.send_raw_command(b"{}")
    await asyncio.sleep(0.05)  # both taken off their queues, both still being handled
    await bus.idle()
    assert sorted(handled) == ["command", "event 1"]
    await bus.close()
