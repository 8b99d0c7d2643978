"""Three engines share the games (issue 23) while engines are SIGKILLed at random: every game still
ends, every confirmed move is applied exactly once and in order, every event this gateway was sent
arrives, and every deadline fires exactly once, on time or soon after the engine that held it died.

The parts are real: the suite's own RabbitMQ node (tests/faults/world.py), three ``avalon engine``
processes on six command partitions, PostgreSQL; the players are the suite's own gateway
(tests/faults/bus_table.py). Each engine serves the partitions RabbitMQ gives it; a killed engine's
partitions are served by the others at once (their commands, their outbox, their deadlines), and it
takes its share back when it returns."""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid

import pytest

from tests.faults.bus_table import VOTE_SECONDS, BusTable
from tests.faults.ledger import record
from tests.faults.world import PrivateRabbit, ServiceProcess, require_private_rabbit
from tests.integration.engine_support import create_pg_database, drop_pg_database

pytestmark = pytest.mark.faults

GAMES = 48
SLEEPERS = 12  # games whose first vote runs out: deadlines across the kills
ENGINES = 3
PARTITIONS = 6


class Engines:
    """Three engines on one broker (one node, or a cluster's nodes in ``url``) and one database."""

    def __init__(self, url: str, tmp_path, db_url: str) -> None:
        self.prefix = f"f{uuid.uuid4().hex[:6]}"
        self.db_url = db_url
        env = {"AMQP_URL": url, "BUS_PREFIX": self.prefix, "DATABASE_URL": db_url,
               "ENGINE_PARTITIONS": str(PARTITIONS)}
        self.engines = [ServiceProcess("engine", env, tmp_path / f"engine{i}.log", "engine ready")
                        for i in range(ENGINES)]
        self.table = BusTable(url, self.prefix, seed=11)
        self.outages: list[tuple[float, float]] = []
        self.faults = 0
        self.started = time.monotonic()

    async def start(self) -> None:
        for engine in self.engines:
            await engine.start()
        await self.table.start()
        await self.table.open_games(GAMES, sleepers=SLEEPERS)

    async def kill_one(self, rng: random.Random, down: float) -> None:
        """SIGKILL a running engine at random; ``down`` seconds later start it again. The games it
        served are the others' meanwhile: an outage for no deadline (``outages`` stays for broker
        faults), but the deadline check allows the takeover's slack all the same."""
        engine = rng.choice([e for e in self.engines if e.proc is not None and e.proc.poll() is None])
        self.faults += 1
        start = time.time()
        engine.kill()
        await asyncio.sleep(down)
        await engine.start()
        self.outages.append((start, start + 1.0))  # the partitions are served again within a second or so

    async def finish(self, suite: str, timeout: float = 180):
        try:
            await self.table.wait_all_over(timeout)
        except AssertionError as stuck:
            raise AssertionError(f"{stuck}\n" + "\n".join(e.tail(30) for e in self.engines)) from None
        tally = await self.table.account(self.db_url, suite, faults=self.faults, outages=self.outages)
        record(tally)
        print(f"\n{suite}: {tally.line()}; sends retried {self.table.send_retries}; "
              f"{time.monotonic() - self.started:.0f} s; takeovers "
              f"{[e.text().count(' served here') for e in self.engines]}")
        return tally

    def assert_clean(self, tally) -> None:
        problems = self.table.problems
        assert not problems, "\n".join(problems[:20]) + "\n" + "\n".join(e.tail(30) for e in self.engines)
        assert (tally.moves_lost, tally.moves_doubled, tally.events_lost, tally.deadlines_missed) == (0, 0, 0, 0)
        assert tally.deadlines >= SLEEPERS, tally
        errors = [line for e in self.engines for line in e.errors()]
        assert not errors, "\n".join(errors[:20])

    async def close(self) -> None:
        await self.table.close()
        for engine in self.engines:
            await engine.stop()


@pytest.fixture(scope="module")
def rabbit(tmp_path_factory):
    require_private_rabbit()
    node = PrivateRabbit(tmp_path_factory.mktemp("engines"))
    asyncio.run(node.start())
    try:
        yield node
    finally:
        asyncio.run(node.close())


@pytest.fixture
async def engines(rabbit, tmp_path):
    db_url, name = await create_pg_database()
    world = Engines(rabbit.url, tmp_path, db_url)
    try:
        yield world
    finally:
        await world.close()
        await drop_pg_database(name)


async def test_three_engines_sigkilled_at_random_mid_game(engines):
    """Eight SIGKILLs of an engine chosen at random, each back after 0.3 to 2 s, some while the sleepers'
    votes come due (their deadlines are then armed again by whichever engine took their partition)."""
    await engines.start()
    rng = random.Random(23)
    kills = 0
    while kills < 8:
        await asyncio.sleep(rng.uniform(0.5, 3.0))
        await engines.kill_one(rng, rng.uniform(0.3, 2.0))
        kills += 1
        if kills == 5:  # the next kills fall around the sleepers' deadlines
            await asyncio.sleep(max(0.0, engines.started + VOTE_SECONDS - 4 - time.monotonic()))
    tally = await engines.finish("three engines, SIGKILL at random")
    engines.assert_clean(tally)
    assert sum(e.kills for e in engines.engines) == 8


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.rabbit_cluster import RabbitCluster, missing_reason

    why = missing_reason()
    if why is not None:
        if os.environ.get("AVALON_REQUIRE_CLUSTER") == "1":
            pytest.fail(f"a RabbitMQ cluster is required here (AVALON_REQUIRE_CLUSTER=1) but {why}", pytrace=False)
        pytest.skip(f"a three-node RabbitMQ cluster cannot run here: {why}")
    nodes = RabbitCluster(tmp_path_factory.mktemp("cluster"), first_port=5741, name="avalonfc")
    nodes.start()  # ~20-40 s: once for the module
    try:
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture
async def clustered(cluster, tmp_path):
    db_url, name = await create_pg_database()
    world = Engines(",".join(cluster.urls()), tmp_path, db_url)
    try:
        yield world
    finally:
        await world.close()
        await drop_pg_database(name)


async def test_three_engines_on_a_three_node_cluster_with_a_node_stopped_then_crashed(cluster, clustered):
    """Every service is given the three nodes. One node is stopped as an operator would (and started
    again), later another is SIGKILLed (and started again), and two engines are SIGKILLed between:
    the quorum queues stay available on the two nodes left, every connection moves to a node that
    runs, and every game ends with nothing lost or doubled and every deadline fired once."""
    world = clustered
    await world.start()
    rng = random.Random(41)

    async def node_outage(i: int, kill: bool, seconds: float) -> None:
        world.faults += 1
        start = time.time()
        await asyncio.to_thread(cluster.stop_node, i, kill=kill)
        await asyncio.sleep(seconds)
        await asyncio.to_thread(cluster.start_node, i)
        world.outages.append((start, time.time()))

    await asyncio.sleep(2)
    await node_outage(0, False, 4)  # the node every service connected to first
    await world.kill_one(rng, 0.5)
    await asyncio.sleep(max(0.0, world.started + VOTE_SECONDS - 6 - time.monotonic()))
    await node_outage(1, True, 3)  # a crash while the sleepers' votes come due
    await world.kill_one(rng, 1.0)
    tally = await world.finish("three engines on a 3-node cluster, node stop/crash + engine SIGKILL")
    world.assert_clean(tally)
    for engine in world.engines:  # each engine moved to another node, and said so once per loss
        assert "RabbitMQ connection lost" in engine.text()
