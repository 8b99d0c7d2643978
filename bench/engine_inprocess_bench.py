"""The engine service alone, without a broker: N concurrent games on PostgreSQL, commands per second.

Compare with bench/engine_bench.py (the same engine over RabbitMQ): the difference is the broker path.

    python bench/engine_inprocess_bench.py [--games 100]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from avalon.services.channels import channel_map  # noqa: E402
from avalon.services.engine.service import EngineService  # noqa: E402
from avalon.services.engine.simulate import random_command  # noqa: E402
from avalon.services.engine.store import Store  # noqa: E402
from avalon.shared.bus import InProcessBus  # noqa: E402
from avalon.shared.protocol import from_core_command  # noqa: E402
from tests.integration.engine_support import create_pg_database, drop_pg_database, lobby_commands  # noqa: E402


async def main(games: int) -> None:
    logging.disable(logging.WARNING)  # no subscriber: the outbox warns for every event
    url, name = await create_pg_database()
    store = Store(url)
    engine = EngineService(store, InProcessBus(), channels=channel_map())
    await engine.start(consume=False)

    async def play(g: int) -> int:
        count = 0
        for envelope in lobby_commands(f"g{g}", 5):
            await engine.handle_raw(envelope.model_dump_json().encode())
            count += 1
        rng = random.Random(g)
        while not (state := engine.games.peek(f"g{g}").state).over:
            envelope = from_core_command(random_command(state, rng), f"g{g}")
            await engine.handle_raw(envelope.model_dump_json().encode())
            count += 1
        return count

    try:
        start = time.perf_counter()
        total = sum(await asyncio.gather(*(play(g) for g in range(games))))
        elapsed = time.perf_counter() - start
        print(f"{games} concurrent games, {total} commands in {elapsed:.1f} s = {total / elapsed:.0f} commands/s "
              "(in-process bus, PostgreSQL, batches)")
    finally:
        await engine.stop()
        await store.close()
        await drop_pg_database(name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=100)
    asyncio.run(main(parser.parse_args().games))
