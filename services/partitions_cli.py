"""``avalon partitions N``: change the number of command partitions on the broker, while nothing runs.

Every game's commands go to one partition (a hash of its id modulo the count), so the count can only
change while no command waits and no service runs: otherwise a game's older commands would sit in one
partition while its newer ones go to another. The command refuses unless every command queue is empty
and has no consumer; then it declares the partitions added, or deletes the ones taken away. Set
ENGINE_PARTITIONS to the same number for every service before starting them again (docs/operations.md).
"""

from __future__ import annotations

import asyncio
import logging


from avalon.shared.runtime import StartupError, configure_logging

log = logging.getLogger(__name__)


async def change(amqp_url: str, prefix: str, delivery_limit: int, count: int) -> str:
    """Make the broker hold ``count`` command partitions; what was done, in one line. Raises
    StartupError when a command queue is in use or holds commands."""
    from avalon.shared.bus.rabbit.link import connect_any
    from avalon.shared.bus.rabbit.topology import Topology

    topology = Topology(prefix, delivery_limit, count)
    connection = await connect_any(amqp_url, robust=True)
    async with connection:
        if not await topology.exists(connection):
            channel = await connection.channel()
            await topology.declare(channel, connection)
            return f"{prefix}.*: declared with {count} command partition(s)"
        found = await topology.discover(connection)
        if found == count:
            return f"{prefix}: {count} command partition(s) already"
        busy = [(topology.command_queue(p), messages, consumers)
                for p, (messages, consumers) in enumerate(await topology.depth(connection, found))
                if messages or consumers]
        if busy:
            raise StartupError("the command partitions are in use: " + "; ".join(
                f"{name} holds {m} command(s), {c} consumer(s)" for name, m, c in busy)
                + ": stop every service (the engines once the queues are empty) and run it again")
        channel = await connection.channel()
        for partition in range(found, count):
            await topology.declare_partition(channel, partition)
        for partition in range(count, found):
            await channel.queue_delete(topology.command_queue(partition), if_unused=False, if_empty=False)
        return f"{prefix}: {found} -> {count} command partition(s); set ENGINE_PARTITIONS={count} for every service"


def run(args) -> int:
    from avalon.services import settings_check

    settings = settings_check.load("partitions")
    configure_logging(settings.log_level)
    print(asyncio.run(change(settings.amqp_url, settings.bus_prefix, settings.delivery_limit, args.count)))
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("partitions", help="change the number of command partitions on RabbitMQ (several engines "
                       "share them), with every service stopped")
    p.add_argument("count", type=int, choices=range(1, 257), metavar="N", help="the new count (1-256)")
    p.set_defaults(run=run)


