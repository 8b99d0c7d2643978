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


async def test_the_email_gateway_waits_for_the_disk_at_each_commit_unless_the_host_says_not_to(monkeypatch):
    """EMAIL_SYNCHRONOUS_COMMIT reaches the email gateway's PostgreSQL connections, and only them: the
    engine's store always waits for the disk."""
    from avalon.services.email_gateway.main import EmailRunner
    from avalon.services.engine.store import Store
    from avalon.shared.config import Settings

    url, name = await create_pg_database()
    for key, value in {"EMAIL_ADDRESS": "narrator@example.org", "EMAIL_SECRET": "s" * 20, "SMTP_HOST": "127.0.0.1",
                       "IMAP_HOST": "127.0.0.1", "IMAP_USER": "narrator", "IMAP_PASSWORD": "x"}.items():
        monkeypatch.setenv(key, value)
    engines = []
    try:
        for setting, expected in (("false", "off"), ("true", "on")):
            monkeypatch.setenv("EMAIL_SYNCHRONOUS_COMMIT", setting)
            runner = EmailRunner(Settings(database_url=url), bus=None)
            engines.append(runner.engine)
            async with runner.engine.connect() as conn:
                assert (await conn.execute(text("SHOW synchronous_commit"))).scalar_one() == expected, setting
        store = Store(url)
        engines.append(store.engine)
        async with store.engine.connect() as conn:
            assert (await conn.execute(text("SHOW synchronous_commit"))).scalar_one() == "on"
    finally:
        for engine in engines:
            await engine.dispose()
        await drop_pg_database(name)
