"""The three-node cluster harness (tests/rabbit_cluster.py) for real: a quorum queue declared through
node 1 keeps its 100 persistent, confirmed messages when node 1 (the node it was declared on, most
likely its leader) stops, and they are all consumed through node 2; node 1 then comes back and the
cluster counts three running nodes again.

Needs RabbitMQ installed (rabbitmq-server; the cluster runs beside the default node, on ports
5701-5703 and 25701-25703). Without it the test skips, saying why, unless AVALON_REQUIRE_CLUSTER=1:
then a missing RabbitMQ is a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import aio_pika
import pytest

from tests.rabbit_cluster import RabbitCluster, missing_reason

pytestmark = pytest.mark.slow

MESSAGES = 100


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    problem = missing_reason()
    if problem:
        if os.environ.get("AVALON_REQUIRE_CLUSTER") == "1":
            pytest.fail(f"a RabbitMQ cluster is required here (AVALON_REQUIRE_CLUSTER=1) but {problem}",
                        pytrace=False)
        pytest.skip(f"the RabbitMQ cluster is not run: {problem}")
    c = RabbitCluster(tmp_path_factory.mktemp("rabbit-cluster"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


async def test_quorum_queue_survives_its_node(cluster: RabbitCluster):
    urls = cluster.urls()
    queue_name = f"test.cluster.{uuid.uuid4().hex[:8]}"
    bodies = [f"message {n}".encode() for n in range(MESSAGES)]

    connection = await aio_pika.connect(urls[0])
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        queue = await channel.declare_queue(queue_name, durable=True, arguments={"x-queue-type": "quorum"})
        for body in bodies:  # each publish awaits its confirm
            await channel.default_exchange.publish(
                aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT), routing_key=queue.name)
    listed = cluster.ctl(1, "list_queues", "name", "members", "leader", "--formatter", "json").stdout
    (row,) = [q for q in json.loads(listed[listed.index("["):]) if q["name"] == queue_name]
    assert sorted(row["members"]) == sorted(cluster.nodenames), f"not a replica on each node: {row}"

    await asyncio.to_thread(cluster.stop_node, 0)

    received: list[bytes] = []
    connection = await aio_pika.connect(urls[1])
    async with connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=50)
        queue = await channel.declare_queue(queue_name, passive=True)
        done = asyncio.Event()

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            received.append(message.body)
            await message.ack()
            if len(received) >= MESSAGES:
                done.set()

        await queue.consume(on_message)
        try:
            await asyncio.wait_for(done.wait(), timeout=60)
        except TimeoutError:
            pytest.fail(f"only {len(received)} of {MESSAGES} messages came through node 2 with node 1 down")
        await asyncio.sleep(0.5)  # nothing more than was published
        assert sorted(received) == sorted(bodies)
        await queue.delete(if_unused=False, if_empty=False)

    await asyncio.to_thread(cluster.start_node, 0)
    assert cluster.running_nodes(0) == sorted(cluster.nodenames)
