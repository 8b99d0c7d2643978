"""The project's database, as every service opens it: one SQLAlchemy engine per URL (SQLite in
WAL mode by default, PostgreSQL in compose) and one schema history (the Alembic migrations in
shared/migrations, which carry every service's tables), migrated under a lock."""

from __future__ import annotations

import asyncio
import time
from importlib import resources
from typing import Awaitable, TypeVar

from alembic import command as alembic_command
from alembic.config import Config
from sqlalchemy import event as sa_event
from sqlalchemy import exc, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

T = TypeVar("T")

#: PostgreSQL advisory lock held while migrating: services that start together do not race.
MIGRATION_LOCK = 0x4A7A10


def upsert(engine: AsyncEngine, table, keys: list[str], columns: list[str]):
    """``INSERT ... ON CONFLICT (keys) DO UPDATE`` of ``columns`` in this engine's dialect (PostgreSQL or
    SQLite), each row's new values taking the old ones' place; executed with one row's values or many."""
    insert = (postgresql if engine.dialect.name == "postgresql" else sqlite).insert(table)
    return insert.on_conflict_do_update(index_elements=keys, set_={c: insert.excluded[c] for c in columns})


async def to_the_end(write: Awaitable[T]) -> T:
    """Run a database write (a transaction) to its end even when the task awaiting it is cancelled
    meanwhile: the cancellation is raised once the write has committed or rolled back.

    A task cancelled in the middle of a statement makes SQLAlchemy close its connection at once. On
    SQLite, while that statement's cursor is still referenced (by the cancelled task's traceback, a
    cycle only the garbage collector frees), the connection is only half closed and keeps its write
    transaction: the whole file stays locked, every other writer waits out its 30 s busy timeout and
    fails with "database is locked". Background writers (the outbox's marks, the gateway's memory,
    the inboxes) are cancelled when a service stops; each of their writes goes through here."""
    task = asyncio.ensure_future(write)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if not task.done():
            await asyncio.wait([task])
        raise


#: PostgreSQL connections every service keeps open (its base: a service's own batches and reads, the
#: delivery pipeline's commits, the outbox's marks and its records of failed attempts), and how many
#: more a busy moment may open for a while: each of those is closed again after one use, and opening
#: one costs the server a new process, so a steady load must fit in the connections kept.
POOL_BASE, POOL_BURST = 10, 10
#: Seconds a PostgreSQL connection may rest in the pool and be used again without asking the server
#: first whether it is still there (a ping is a round trip: asking at every use doubled the wait
#: for a short query on the busy machine, 12 ms against 5.5 ms).
REST_BEFORE_PING = 1.0


def make_engine(url: str, *, concurrency: int = 0) -> AsyncEngine:
    """The engine of the database at ``url``. ``concurrency``: the service's tasks that each hold a
    connection at once beyond its base (the email gateway's mails in flight in the IMAP watcher): on
    PostgreSQL the pool keeps that many more open."""
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30})

        @sa_event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record) -> None:  # pragma: no cover - driver hook
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        return engine
    # a stalled server fails a connection attempt or a statement instead of hanging it for hours
    engine = create_async_engine(url, pool_size=POOL_BASE + concurrency, max_overflow=POOL_BURST,
                                 connect_args={"timeout": 10, "command_timeout": 60})
    ping_rested(engine)
    return engine


def ping_rested(engine: AsyncEngine) -> None:
    """A connection that rested in the pool longer than REST_BEFORE_PING is pinged before use, and
    replaced if the server is gone (a restart, a dropped connection); one used again at once is not."""

    @sa_event.listens_for(engine.sync_engine, "checkin")
    def _rests(_dbapi_connection, record) -> None:  # pragma: no cover - pool hook
        record.info["rests_since"] = time.monotonic()

    @sa_event.listens_for(engine.sync_engine, "checkout")
    def _ping(dbapi_connection, record, _proxy) -> None:  # pragma: no cover - pool hook
        since = record.info.get("rests_since")
        if since is not None and time.monotonic() - since > REST_BEFORE_PING:
            try:
                engine.dialect.do_ping(dbapi_connection)
            except Exception as error:  # noqa: BLE001 - the pool opens a new connection instead
                raise exc.DisconnectionError(str(error)) from error


def _alembic() -> Config:
    config = Config()
    config.set_main_option("script_location", str(resources.files("avalon.shared") / "migrations"))
    return config


async def revisions(engine: AsyncEngine) -> tuple[str | None, str, frozenset[str]]:
    """The schema's revision in this database (None: no schema of ours), the newest this version has,
    and every one it knows. Reads only: it creates and changes nothing."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_alembic())
    async with engine.connect() as conn:
        current = await conn.run_sync(lambda sync: MigrationContext.configure(sync).get_current_revision())
    return current, script.get_current_head(), frozenset(s.revision for s in script.walk_revisions())


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest migration (idempotent; one migration at a time on PostgreSQL)."""
    config = _alembic()

    def upgrade(connection) -> None:
        config.attributes["connection"] = connection
        alembic_command.upgrade(config, "head")

    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        await conn.run_sync(upgrade)


def database_down(error: BaseException) -> bool:
    """Whether ``error`` says the database server cannot be reached right now (refused, reset, timed
    out, shutting down, a connection that died under a query), as opposed to a statement it refused.
    Waiting and trying again is the answer to the first; failing the request, to the second.
    SQLite has none of these: a file either opens or not."""
    import asyncio

    import asyncpg
    from sqlalchemy import exc

    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, (OSError, asyncio.TimeoutError, asyncpg.PostgresConnectionError,
                              asyncpg.ConnectionDoesNotExistError, asyncpg.CannotConnectNowError,
                              asyncpg.AdminShutdownError, asyncpg.CrashShutdownError, exc.TimeoutError)):
            return True
        if isinstance(error, asyncpg.InterfaceError) and "connection" in str(error).lower():
            return True  # "connection is closed", "cannot perform operation: connection is closed"
        if isinstance(error, exc.DBAPIError) and error.connection_invalidated:
            return True
        error = getattr(error, "orig", None) or error.__cause__
    return False


def raised_by_database(error: BaseException) -> bool:
    """Whether the database driver raised ``error`` (a frame of asyncpg, SQLAlchemy or aiosqlite in
    its traceback): an OSError from talking to Telegram or SMTP is not the database being down."""
    tb = error.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "/asyncpg/" in name or "/sqlalchemy/" in name or "/aiosqlite/" in name:
            return True
        tb = tb.tb_next
    return False
