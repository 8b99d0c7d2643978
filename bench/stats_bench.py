"""The record of finished games under load: N finished games in the store (SQLite and PostgreSQL), then
the cost of each query a player's /stats, a group's leaderboard and its /history make.

    python bench/stats_bench.py [--games 10000] [--queries 300] [--database sqlite|postgres|both]

The games are random legal games (the rules core, 5 to 10 players, among 20 tables of about 12
regulars drawn from 200 people), committed through the real store, ten whole games a commit, so the
record is kept by the same commit path as the engine's. It prints how long filling took, what
``avalon stats rebuild`` takes over the same log, and for each query the wall and CPU milliseconds
per call (median, p90). CPU is this process's (the database server's own work is not in it on
PostgreSQL: wall is what a player waits). The machine is shared: take ranges over several runs.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text  # noqa: E402

from avalon.services.engine import record_queries as q  # noqa: E402
from avalon.services.engine.records import rebuild  # noqa: E402
from avalon.services.engine.store import Store  # noqa: E402
from tests.integration.engine_support import create_pg_database, drop_pg_database  # noqa: E402
from tests.integration.records_support import BASE, game_requests  # noqa: E402

PEOPLE = [f"tg:{100_000 + i}" for i in range(200)]
TABLES = 20


def pools(rng: random.Random) -> list[list[str]]:
    return [rng.sample(PEOPLE, 12) for _ in range(TABLES)]


async def fill(store: Store, games: int, rng: random.Random, chunk: int = 10) -> float:
    """``games`` random games, ``chunk`` whole games per commit (as an engine's batch holds many games'
    commands); returns the seconds it took, the games' play included."""
    regulars = pools(rng)
    started = time.perf_counter()
    requests: list[dict] = []
    for n in range(games):
        table = n % TABLES
        requests += game_requests(f"tg-{table}_{n}", n, regulars[table], table=f"tg-{table}",
                                  at=BASE + timedelta(minutes=n))
        if (n + 1) % chunk == 0 or n + 1 == games:
            await store.commit_many(requests)
            requests = []
        if n and n % 2000 == 0:
            print(f"  {n} games ({time.perf_counter() - started:.0f} s)", flush=True)
    return time.perf_counter() - started


async def measure(name: str, call, count: int) -> None:
    walls, cpus = [], []
    for _ in range(count):
        w, c = time.perf_counter(), time.process_time()
        await call()
        cpus.append((time.process_time() - c) * 1000)
        walls.append((time.perf_counter() - w) * 1000)
    print(f"  {name:<28} wall ms: median {statistics.median(walls):6.2f}  p90 {p90(walls):6.2f}   "
          f"CPU ms: median {statistics.median(cpus):6.2f}  p90 {p90(cpus):6.2f}")


def p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9)]


async def run(url: str, games: int, queries: int) -> None:
    store = Store(url)
    await store.migrate()
    rng = random.Random(7)
    try:
        took = await fill(store, games, rng)
        print(f"  filled: {games} finished games in {took:.0f} s (the record kept as each game ended)")
        started = time.perf_counter()
        count = await rebuild(store.engine)
        print(f"  avalon stats rebuild: {count} games in {time.perf_counter() - started:.1f} s")
        if url.startswith("postgresql"):  # what autovacuum does after a while: the planner's statistics
            async with store.engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.execute(text("VACUUM ANALYZE seat_records, finished_games, stats_people"))
        db = store.engine
        await q.person_stats(db, PEOPLE[0])  # the pool's connections opened
        people = iter(rng.choices(PEOPLE, k=queries * 2))
        tables = iter(rng.choices([f"tg-{t}" for t in range(TABLES)], k=queries * 3))
        await measure("stats of a person", lambda: q.person_stats(db, next(people)), queries)
        await measure("privacy + known (refusals)", lambda: _checks(db, next(people)), queries)
        await measure("leaderboard of a table", lambda: q.leaderboard(db, next(tables)), queries)
        await measure("history of a table (10)", lambda: q.history(db, next(tables)), queries)
        await measure("game by code", lambda: q.games_by_code(db, "7KQ2-M9XD"), queries)
    finally:
        await store.close()


async def _checks(db, person: str) -> None:
    await q.known(db, person)
    await q.privacy(db, person)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    args = parser.parse_args()
    if args.database in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            print(f"SQLite ({args.games} games)")
            await run(f"sqlite+aiosqlite:///{tmp}/stats.db", args.games, args.queries)
    if args.database in ("postgres", "both"):
        url, name = await create_pg_database()
        try:
            print(f"PostgreSQL ({args.games} games)")
            await run(url, args.games, args.queries)
        finally:
            await drop_pg_database(name)


if __name__ == "__main__":
    asyncio.run(main())
