"""Games over the bus while the engine is SIGKILLed, the broker is stopped (and crashed) and
restarted, and PostgreSQL is unreachable or stalled: every game still ends, every confirmed move is
applied exactly once, every event the engine sent this gateway arrives (duplicates counted), and
every deadline is kept, including those that came due while the engine could not act.

The parts are real: a RabbitMQ node of the suite's own (so stopping it disturbs nothing else), the
engine as its own process (``avalon engine``), PostgreSQL behind a loopback proxy that can refuse or
stall connections. The players are the suite's own gateway on channel ``test`` (tests/faults/bus_table.py).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from datetime import datetime

import pytest

from tests.faults.bus_table import VOTE_SECONDS, BusTable
from tests.faults.ledger import record
from tests.faults.world import PrivateRabbit, ServiceProcess, TcpProxy, require_private_rabbit
from tests.integration.engine_support import create_pg_database, drop_pg_database

pytestmark = pytest.mark.faults

GAMES = 64  # per test: three tests, 192 games; the Telegram (12) and mail (6) fault tests add theirs
SLEEPERS = 10  # games whose first vote runs out (deadlines across the faults)


@pytest.fixture(scope="module")
def rabbit(tmp_path_factory):
    require_private_rabbit()
    node = PrivateRabbit(tmp_path_factory.mktemp("faults"))
    asyncio.run(node.start())  # ~6 s: once for the module's tests
    try:
        yield node
    finally:
        asyncio.run(node.close())


class World:
    """One engine on PostgreSQL (through the proxy) and the private broker, and the players."""

    def __init__(self, rabbit: PrivateRabbit, tmp_path, db_url: str, proxy: TcpProxy) -> None:
        self.rabbit, self.proxy = rabbit, proxy
        self.prefix = f"f{uuid.uuid4().hex[:6]}"
        self.db_url = db_url  # direct, for the accounting
        proxied = db_url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
        self.engine = ServiceProcess("engine", {"AMQP_URL": rabbit.url, "BUS_PREFIX": self.prefix,
                                                "DATABASE_URL": proxied}, tmp_path / "engine.log", "engine ready")
        self.table = BusTable(rabbit.url, self.prefix, seed=7)
        self.outages: list[tuple[float, float]] = []
        self.faults = 0
        self.started = time.monotonic()

    async def start(self) -> None:
        await self.engine.start()
        await self.table.start()
        await self.table.open_games(GAMES, sleepers=SLEEPERS)

    async def outage(self, seconds: float, begin, end) -> None:
        """One fault: ``begin()``, ``seconds`` later ``end()``; its wall-clock span is remembered."""
        self.faults += 1
        start = time.time()
        await begin()
        await asyncio.sleep(seconds)
        await end()
        self.outages.append((start, time.time()))

    async def finish(self, suite: str, timeout: float = 150):
        try:
            await self.table.wait_all_over(timeout)
        except AssertionError as stuck:
            raise AssertionError(f"{stuck}\n{await self.where_stuck()}\n{self.engine.text()[-3000:]}") from None
        tally = await self.table.account(self.db_url, suite, faults=self.faults, outages=self.outages)
        record(tally)
        spans = ", ".join(f"{time.strftime('%H:%M:%S', time.localtime(a))}+{b - a:.1f}s" for a, b in self.outages)
        print(f"\n{suite}: {tally.line()}; sends retried {self.table.send_retries}; "
              f"{time.monotonic() - self.started:.0f} s; outages {spans}")
        return tally


    async def where_stuck(self) -> str:
        """For a failure's message: where the first games that did not end stand in the engine's log."""
        from avalon.services.engine.store import Store

        store = Store(self.db_url)
        lines = []
        try:
            for game in [g for g in self.table.games.values() if not g.over][:4]:
                log = await store.event_log(game.id, include_internal=True)
                offered = sorted(k for k in game.answered)[-3:]
                sent = sorted(m for m in self.table.moves if m.startswith(game.id + "/"))[-3:]
                lines.append(f"{game.id}: last events {[(e.seq, e.event.type) for e in log[-4:]]}; "
                             f"received up to seq {max((q for g, q in self.table.received if g == game.id), default=0)}; "
                             f"answered {offered}; last moves {sent}")
        finally:
            await store.close()
        return "\n".join(lines)


@pytest.fixture
async def world(rabbit, tmp_path):
    db_url, name = await create_pg_database()
    proxy = await TcpProxy("127.0.0.1", 5432).start()
    w = World(rabbit, tmp_path, db_url, proxy)
    try:
        yield w
    finally:
        await w.table.close()
        await w.engine.stop()
        await proxy.close()
        await drop_pg_database(name)


def assert_clean(world: World, tally) -> None:
    problems = world.table.problems
    assert not problems, "\n".join(problems[:20]) + "\n" + world.engine.text()[-3000:]
    assert (tally.moves_lost, tally.moves_doubled, tally.events_lost, tally.deadlines_missed) == (0, 0, 0, 0)
    assert tally.deadlines >= SLEEPERS, tally  # every sleeper's vote ran out, across the faults
    assert not world.engine.errors(), "\n".join(world.engine.errors()[:20])


async def test_engine_sigkilled_mid_game_with_commands_in_flight(world):
    """Three SIGKILLs: one early (the lobbies' commands in flight), one mid-game, one while the
    sleepers' votes come due (their deadlines pass while the engine is dead: they time out at restart)."""
    await world.start()
    rng = random.Random(3)

    async def kill():
        world.engine.kill()

    for pause in (0.5 + rng.random(), 3 + rng.random() * 2):
        await asyncio.sleep(pause)
        await world.outage(0.3, kill, world.engine.start)
    await asyncio.sleep(max(0.0, world.started + VOTE_SECONDS - 2 - time.monotonic()))
    await world.outage(4, kill, world.engine.start)  # dead across the sleepers' deadlines
    assert_clean(world, await world.finish("engine SIGKILL"))
    assert world.engine.kills == 3


async def test_broker_stopped_and_restarted_mid_game(world):
    """RabbitMQ shut down cleanly for a few seconds, then killed outright (SIGKILL of the node) and
    started again: connections drop on both sides, queues and confirmed messages survive."""
    await world.start()
    await asyncio.sleep(2)
    await world.outage(3, world.rabbit.stop, world.rabbit.start)

    async def crash():
        world.rabbit.crash()

    await asyncio.sleep(max(5.0, world.started + VOTE_SECONDS - 3 - time.monotonic()))
    await world.outage(2, crash, world.rabbit.start)
    tally = await world.finish("RabbitMQ stop/crash + restart")
    assert_clean(world, tally)
    # the engine serves again soon after the broker is back (aio-pika's default waited 5 s a try)
    backs = [datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
             for line in world.engine.text().splitlines() if "RabbitMQ connection back" in line]
    delays = [min((b - end for b in backs if b >= end - 0.5), default=float("inf")) for _, end in world.outages]
    print(f"engine back on the bus {', '.join(f'{d:.2f}' for d in delays)} s after the broker")
    assert all(d < 5 for d in delays), (delays, world.engine.text()[-2000:])


async def test_database_unreachable_then_stalled(world):
    """PostgreSQL refuses every connection for 6 s (its server away), later the network to it stalls
    for 6 s (connections open, nothing passes): commands wait, none is dead-lettered or lost."""

    async def refuse():
        world.proxy.refuse()

    async def stall():
        world.proxy.stall()

    async def restore():
        world.proxy.restore()

    await world.start()
    await asyncio.sleep(2)
    await world.outage(6, refuse, restore)
    await asyncio.sleep(max(0.0, world.started + VOTE_SECONDS - 1 - time.monotonic()))
    await world.outage(6, stall, restore)  # while the sleepers' deadlines come due
    assert_clean(world, await world.finish("PostgreSQL unreachable/stalled"))
    told = world.engine.text().count("database unreachable")
    assert 1 <= told <= 2, world.engine.text()[-3000:]  # one line per outage, not one per command
