"""A partition's deliveries reach the handler in arrival order across a takeover: those that waited
for it resume a few loop turns after it ends, and one arriving meanwhile must not pass them (found by
the several-engines benchmark: a start_game decided before the joins it followed)."""

from __future__ import annotations

import asyncio

from avalon.shared.bus.rabbit.commands import Served


class Watch:
    def serving(self, partition):
        async def takeover():
            await asyncio.sleep(0.01)  # the takeover's reading of the database
        return takeover()

    def lost(self, partitions):
        pass


async def test_deliveries_keep_their_order_through_the_end_of_a_takeover():
    served = Served()
    served.watch = Watch()
    order: list[int] = []

    async def handle(i: int, ticket: int) -> None:
        await served.turn(0, ticket)
        order.append(i)

    tasks = []
    for i in range(3000):  # deliveries come in bursts: a few new tasks every loop turn
        tasks.append(asyncio.create_task(handle(i, served.ticket(0))))
        if i % 7 == 0:
            await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == list(range(3000))


async def test_a_failed_takeover_lets_the_next_deliveries_through_to_try_again():
    served = Served()

    class Failing(Watch):
        def serving(self, partition):
            async def takeover():
                raise ConnectionError("database away")
            return takeover()

    served.watch = Failing()
    first, second = served.ticket(3), served.ticket(3)
    results = await asyncio.gather(served.turn(3, first), served.turn(3, second), return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)
    assert 3 not in served  # the next delivery takes the partition over again
    served.watch = Watch()
    await asyncio.wait_for(served.turn(3, served.ticket(3)), 5)
    assert 3 in served
