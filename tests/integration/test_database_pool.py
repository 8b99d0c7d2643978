"""The PostgreSQL pool every service opens (shared.db.make_engine): a connection the server dropped
while it rested in the pool is replaced before use, so a service's next query after a database
restart works; the pool keeps a connection for each task of the service's concurrency."""

from __future__ import annotations

import asyncio

import asyncpg
from sqlalchemy import text

from avalon.shared.db import POOL_BASE, REST_BEFORE_PING, make_engine
from tests.integration.engine_support import PG_ADMIN, create_pg_database, drop_pg_database


async def drop_connections(name: str) -> int:
    """What a database restart does to a service's connections: the server ends them all."""
    admin = await asyncpg.connect(PG_ADMIN)
    try:
        return await admin.fetchval("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                    "WHERE datname = $1 AND pid <> pg_backend_pid()", name)
    finally:
        await admin.close()


async def test_a_connection_dropped_by_the_server_while_resting_is_replaced_before_the_next_query():
    url, name = await create_pg_database()
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        assert await drop_connections(name) == 1
        await asyncio.sleep(REST_BEFORE_PING + 0.2)  # the connection has rested: it is asked first
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT 41 + 1"))).scalar_one() == 42
    finally:
        await engine.dispose()
        await drop_pg_database(name)


async def test_the_pool_keeps_a_connection_for_each_task_of_the_services_concurrency():
    url, name = await create_pg_database()
    engine = make_engine(url, concurrency=6)
    try:
        async def hold(release: asyncio.Event) -> None:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
                await release.wait()

        release = asyncio.Event()
        holders = [asyncio.create_task(hold(release)) for _ in range(POOL_BASE + 6)]
        while engine.pool.checkedout() < POOL_BASE + 6:
            await asyncio.sleep(0.01)
        release.set()
        await asyncio.gather(*holders)
        assert engine.pool.checkedin() == POOL_BASE + 6  # all kept open for the next busy moment
    finally:
        await engine.dispose()
        await drop_pg_database(name)
