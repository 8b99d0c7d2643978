"""PostgreSQL's hot path: a batch's commit in one statement, straight through asyncpg.

SQLAlchemy costs several round trips and milliseconds of Python per transaction;
under load every round trip also waits for a turn of a busy event loop. Here a
batch (command ids, new games, game updates guarded by their version, events)
is one statement of data-modifying CTEs over arrays (``unnest``): one round
trip, atomic on its own. A version that does not match makes the statement
fail, so nothing of the batch is written. The schema is the migrations'; the
SQLAlchemy path in ``store.py`` does the same for SQLite.
"""

from __future__ import annotations

import asyncio

import asyncpg
from sqlalchemy.engine import make_url

from avalon.shared import quiet

from .conflicts import Conflict, Duplicate
from .records import PgWriter, project

#: Raised by the statement itself when a game's version is not the one the batch was decided on.
_CONFLICT_MARK = "avalon: version conflict"

_COMMIT = f"""
WITH
processed AS (
    INSERT INTO processed_commands (message_id, game_id, outcome, processed_at)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
),
new_games AS (
    INSERT INTO games (id, seed, version, phase, phase_id, deadline_at, timeout_seconds, origin_channel, state,
                       created_at, updated_at)
    SELECT id, seed, version, phase, phase_id, deadline_at, timeout_seconds, origin_channel, state, at, at
    FROM unnest($5::text[], $6::bigint[], $7::int[], $8::text[], $9::int[], $10::timestamptz[], $11::int[],
                $12::text[], $13::bytea[], $14::timestamptz[])
        AS n(id, seed, version, phase, phase_id, deadline_at, timeout_seconds, origin_channel, state, at)
),
moved AS (
    UPDATE games SET version = u.version, phase = u.phase, phase_id = u.phase_id,
                     timeout_seconds = u.timeout_seconds, state = u.state, updated_at = u.at,
                     deadline_at = CASE WHEN u.keep THEN games.deadline_at ELSE u.deadline_at END
    FROM unnest($15::text[], $16::int[], $17::int[], $18::text[], $19::int[], $20::int[], $21::bytea[],
                $22::timestamptz[], $23::bool[], $24::timestamptz[])
        AS u(id, expected, version, phase, phase_id, timeout_seconds, state, at, keep, deadline_at)
    WHERE games.id = u.id AND games.version = u.expected
    RETURNING games.id
),
logged AS (
    INSERT INTO events (game_id, seq, type, audience, channels, body, published, created_at)
    SELECT game_id, seq, type, audience, channels, body, published, at
    FROM unnest($25::text[], $26::int[], $27::text[], $28::text[], $29::text[], $30::text[], $31::bool[],
                $32::timestamptz[]) WITH ORDINALITY AS e(game_id, seq, type, audience, channels, body, published, at, n)
    ORDER BY n
    RETURNING id
)
SELECT CASE WHEN (SELECT count(*) FROM moved) = $33::int THEN 0
            -- not a constant (the planner folds constants, and would raise on every batch)
            ELSE CAST('{_CONFLICT_MARK}: ' || (SELECT count(*) FROM moved) AS int) END AS guard,
       (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM logged) AS ids
"""

_MARK_PUBLISHED = "UPDATE events SET published = true WHERE id = ANY($1::bigint[])"


def asyncpg_dsn(url: str) -> str:
    """The plain ``postgresql://`` DSN behind a SQLAlchemy URL such as ``postgresql+asyncpg://``."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _reset(conn: asyncpg.Connection) -> None:
    """Before a connection goes back to the pool. asyncpg's default runs ``RESET ALL`` and the like: a
    round trip per batch (5% of the engine's CPU at 500 commands/s) for session state these single
    statements never leave. A transaction left open (an interrupted statement) is still rolled back."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


quiet.install()  # asyncpg's pool retrying its floor: no traceback every second while the database is away

#: seconds: connecting, and one statement (the batch commit takes milliseconds)
CONNECT_TIMEOUT, STATEMENT_TIMEOUT = 10, 60


class PgBatchWriter:
    def __init__(self, url: str) -> None:
        self.dsn = asyncpg_dsn(url)
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()

    async def _acquire_pool(self) -> asyncpg.Pool:
        async with self._opening:
            if self._pool is None:
                # a server that stops answering (a stalled network) fails the statement instead of hanging
                # it for the kernel's keepalive (hours): the engine then waits and tries again
                self._pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=4, reset=_reset,
                                                       timeout=CONNECT_TIMEOUT, command_timeout=STATEMENT_TIMEOUT)
        return self._pool

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def write(self, rows) -> list[int]:
        """Write a batch (``store._Rows``) in one statement; returns the events' ids in order."""
        p, g, u, e = rows.processed, rows.new_games, rows.updates + rows.keep_deadline, rows.events
        keep = [False] * len(rows.updates) + [True] * len(rows.keep_deadline)
        args = (
            [r["message_id"] for r in p], [r["game_id"] for r in p], [r["outcome"] for r in p],
            [r["processed_at"] for r in p],
            [r["id"] for r in g], [r["seed"] for r in g], [r["version"] for r in g], [r["phase"] for r in g],
            [r["phase_id"] for r in g], [r["deadline_at"] for r in g], [r["timeout_seconds"] for r in g],
            [r["origin_channel"] for r in g], [r["state"] for r in g], [r["created_at"] for r in g],
            [r["b_id"] for r in u], [r["b_expected"] for r in u], [r["version"] for r in u], [r["phase"] for r in u],
            [r["phase_id"] for r in u], [r["timeout_seconds"] for r in u], [r["state"] for r in u],
            [r["updated_at"] for r in u], keep, [r.get("deadline_at") for r in u],
            [r["game_id"] for r in e], [r["seq"] for r in e], [r["type"] for r in e], [r["audience"] for r in e],
            [r["channels"] for r in e], [r["body"] for r in e], [r["published"] for r in e],
            [r["created_at"] for r in e],
            len(u),
        )
        pool = await self._acquire_pool()
        try:
            async with pool.acquire() as conn:
                if rows.ended:  # a game ended: its record in the same transaction
                    async with conn.transaction():
                        row = await conn.fetchrow(_COMMIT, *args)
                        await project(PgWriter(conn), rows.ended)
                else:
                    row = await conn.fetchrow(_COMMIT, *args)
        except asyncpg.UniqueViolationError as error:
            if error.table_name == "processed_commands":
                raise Duplicate(p[0]["message_id"] if len(p) == 1 else "batch") from error
            raise Conflict(error.detail or "a game or an event seq is taken") from error  # games / events
        except asyncpg.InvalidTextRepresentationError as error:
            if _CONFLICT_MARK in str(error):
                raise Conflict("a game's version changed") from error
            raise
        return list(row["ids"])

    async def mark_published(self, ids: list[int]) -> None:
        pool = await self._acquire_pool()
        async with pool.acquire() as conn:
            await conn.execute(_MARK_PUBLISHED, ids)


__all__ = ["PgBatchWriter", "asyncpg_dsn"]
