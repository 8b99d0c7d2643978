"""The order a ``by_game`` subscription hands events over in (shared/bus/rabbit/ordering.py, ``GameLocks``): each
game's messages one at a time in delivery order, other games' alongside, and a message carrying several
games' events waiting its turn in each of them."""

from __future__ import annotations

import asyncio
import random

import pytest

from avalon.shared.bus.rabbit.ordering import GameLocks


async def _run(messages: list[tuple[str, ...]], *, seed: int) -> tuple[list[tuple[int, str]], int]:
    """Each message a task started in delivery order, as the bus starts them; each handles its games for a
    random while. Returns (game, message index) in the order handled, and the most run at once."""
    locks, rng = GameLocks(), random.Random(seed)
    handled: list[tuple[int, str]] = []
    running = peak = 0

    async def handle(i: int, games: tuple[str, ...]) -> None:
        nonlocal running, peak
        async with locks.held(sorted(set(games))):
            running += 1
            peak = max(peak, running)
            for game in games:
                handled.append((i, game))
            await asyncio.sleep(rng.random() / 500)
            running -= 1

    await asyncio.gather(*(asyncio.ensure_future(handle(i, m)) for i, m in enumerate(messages)))
    return handled, peak


@pytest.mark.parametrize("seed", range(5))
async def test_each_games_messages_are_handled_in_delivery_order_with_batches_among_them(seed: int) -> None:
    rng = random.Random(seed)
    games = [f"g{n}" for n in range(6)]
    messages = [tuple(rng.sample(games, rng.choice((1, 1, 1, 2, 3)))) for _ in range(300)]
    handled, peak = await _run(messages, seed=seed)

    assert sorted(handled) == sorted((i, g) for i, m in enumerate(messages) for g in m)  # each once
    for game in games:
        order = [i for i, g in handled if g == game]
        assert order == sorted(order), f"{game}'s messages handled out of delivery order"
    assert peak > 1, "different games' messages never ran side by side"


async def test_one_game_waits_for_a_batch_holding_it_while_others_go_on() -> None:
    locks = GameLocks()
    log: list[str] = []
    release = asyncio.Event()

    async def batch() -> None:
        async with locks.held(["a", "b"]):
            log.append("batch")
            await release.wait()

    async def single(game: str) -> None:
        async with locks.held([game]):
            log.append(game)

    tasks = [asyncio.ensure_future(batch()), asyncio.ensure_future(single("b")), asyncio.ensure_future(single("c"))]
    await asyncio.sleep(0.01)
    assert log == ["batch", "c"]  # b's next message waits for the batch; c's does not
    release.set()
    await asyncio.gather(*tasks)
    assert log == ["batch", "c", "b"]
    assert not locks._lines  # nothing left behind


async def test_a_cancelled_waiter_does_not_block_the_game() -> None:
    locks = GameLocks()
    release = asyncio.Event()
    done: list[str] = []

    async def first() -> None:
        async with locks.held(["a"]):
            await release.wait()
            done.append("first")

    async def waiter(name: str) -> None:
        async with locks.held(["a"]):
            done.append(name)

    one = asyncio.ensure_future(first())
    two = asyncio.ensure_future(waiter("cancelled"))
    three = asyncio.ensure_future(waiter("third"))
    await asyncio.sleep(0.01)
    two.cancel()
    release.set()
    await asyncio.gather(one, three)
    assert done == ["first", "third"]
    assert not locks._lines
