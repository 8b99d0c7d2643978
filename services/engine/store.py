"""Persistence: one transaction per command (state, events, command id), and the outbox.

SQLite (aiosqlite, WAL) by default, PostgreSQL (asyncpg) when ``DATABASE_URL``
says so; the schema comes from the Alembic migrations in ``migrations/``.
The event log is the truth: a game's state is a snapshot for speed, rebuilt
from the log whenever the snapshot cannot be read.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from alembic import command as alembic_command
from alembic.config import Config
from sqlalchemy import event as sa_event
from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from shared.protocol import INTERNAL_EVENTS, EventEnvelope, to_core_event
from services.engine.rules import GameState, replay_events

from .tables import EventRow, GameRow, PlayerRow, ProcessedCommand

MIGRATIONS = Path(__file__).parent / "migrations"


KEEP = object()  # commit(deadline_at=KEEP): the open phase's deadline stays as it is


class Conflict(Exception):
    """The game changed under us (another engine instance): reload and decide again."""


class Duplicate(Exception):
    """This command id was processed already."""


@dataclass
class LoadedGame:
    state: GameState
    version: int
    seed: int
    origin_channel: str


@dataclass
class OpenDeadline:
    game_id: str
    phase_id: int
    deadline_at: datetime
    timeout_seconds: int


@dataclass
class Outgoing:
    id: int
    envelope: EventEnvelope
    channels: tuple[str, ...]


def aware(moment: datetime | None) -> datetime | None:
    """Datetimes are stored in UTC; a driver may hand them back without the zone."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=timezone.utc)


def make_engine(url: str) -> AsyncEngine:
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
    return create_async_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)


class Store:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    async def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent)."""
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))

        def upgrade(connection) -> None:
            config.attributes["connection"] = connection
            alembic_command.upgrade(config, "head")

        async with self.engine.begin() as conn:
            await conn.run_sync(upgrade)

    async def close(self) -> None:
        await self.engine.dispose()

    # -- commands --------------------------------------------------------------

    async def seen(self, message_id: str) -> bool:
        async with self.sessions() as session:
            return await session.get(ProcessedCommand, message_id) is not None

    async def load(self, game_id: str) -> LoadedGame | None:
        async with self.sessions() as session:
            row = await session.get(GameRow, game_id)
            if row is None:
                return None
            state = None
            if row.state is not None:
                try:
                    state = pickle.loads(row.state)  # noqa: S301 - our own snapshot
                except Exception:
                    state = None
            if not isinstance(state, GameState):
                state = await self._rebuild(session, game_id)
            return LoadedGame(state, row.version, row.seed, row.origin_channel)

    async def _rebuild(self, session, game_id: str) -> GameState:
        rows = await session.execute(
            select(EventRow.body).where(EventRow.game_id == game_id, EventRow.seq.is_not(None)).order_by(EventRow.seq))
        core = []
        for (body,) in rows:
            envelope = EventEnvelope.model_validate_json(body)
            if hasattr(type(envelope.event), "core"):
                core.append(to_core_event(envelope.event))
        return replay_events(core)

    async def commit(
        self,
        *,
        game_id: str,
        message_id: str,
        outcome: str,
        events: list[tuple[EventEnvelope, tuple[str, ...]]],
        state: GameState | None = None,
        expected_version: int | None = None,
        new_game_seed: int | None = None,
        origin_channel: str = "test",
        deadline_at: datetime | None | object = KEEP,
    ) -> list[Outgoing]:
        """Everything a command did, in one transaction; raises Duplicate or Conflict.

        Returns the events still to publish (those with a channel), with their outbox ids.
        Three statements: the command id (its primary key catches a duplicate), the game
        (its version catches a concurrent change), the events.
        """
        now = datetime.now(timezone.utc)
        bodies = [envelope.model_dump_json() for envelope, _ in events]
        async with self.engine.begin() as conn:
            try:
                await conn.execute(insert(ProcessedCommand).values(
                    message_id=message_id, game_id=game_id, outcome=outcome, processed_at=now))
            except IntegrityError as error:
                raise Duplicate(message_id) from error
            if state is not None:
                version = events[-1][0].seq if events and events[-1][0].seq else expected_version or 0
                values = dict(version=version, phase=state.phase.value if state.phase else None,
                              phase_id=state.phase_id, timeout_seconds=state.timeout_seconds,
                              state=pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), updated_at=now)
                if deadline_at is not KEEP or new_game_seed is not None:
                    values["deadline_at"] = None if deadline_at is KEEP else deadline_at
                if new_game_seed is not None:
                    try:
                        await conn.execute(insert(GameRow).values(
                            id=game_id, seed=new_game_seed, origin_channel=origin_channel, created_at=now, **values))
                    except IntegrityError as error:
                        raise Conflict(game_id) from error
                else:
                    result = await conn.execute(
                        update(GameRow).where(GameRow.id == game_id, GameRow.version == expected_version)
                        .values(**values))
                    if result.rowcount != 1:
                        raise Conflict(game_id)
            if not events:
                return []
            rows = [dict(game_id=envelope.game_id, seq=envelope.seq or None, type=envelope.event.type,
                         audience=envelope.audience.kind.value, channels=",".join(channels), body=body,
                         published=not channels, created_at=now)
                    for (envelope, channels), body in zip(events, bodies)]
            ids = (await conn.execute(insert(EventRow).returning(EventRow.id, sort_by_parameter_order=True),
                                      rows)).scalars().all()
        return [Outgoing(i, envelope, channels) for i, (envelope, channels) in zip(ids, events) if channels]

    # -- the outbox ----------------------------------------------------------------

    async def unpublished(self, limit: int = 500, game_id: str | None = None) -> list[Outgoing]:
        async with self.sessions() as session:
            query = select(EventRow).where(EventRow.published.is_(False))
            if game_id is not None:
                query = query.where(EventRow.game_id == game_id)
            rows = (await session.execute(query.order_by(EventRow.id).limit(limit))).scalars().all()
            return [Outgoing(r.id, EventEnvelope.model_validate_json(r.body), tuple(filter(None, r.channels.split(","))))
                    for r in rows]

    async def mark_published(self, ids: list[int]) -> None:
        if not ids:
            return
        async with self.sessions() as session, session.begin():
            await session.execute(update(EventRow).where(EventRow.id.in_(ids)).values(published=True))

    # -- queries ---------------------------------------------------------------------

    async def open_deadlines(self) -> list[OpenDeadline]:
        async with self.sessions() as session:
            rows = (await session.execute(select(GameRow).where(GameRow.deadline_at.is_not(None)))).scalars().all()
            return [OpenDeadline(r.id, r.phase_id, aware(r.deadline_at), r.timeout_seconds) for r in rows]

    async def event_log(self, game_id: str, *, include_internal: bool = False) -> list[EventEnvelope]:
        async with self.sessions() as session:
            rows = await session.execute(
                select(EventRow.body).where(EventRow.game_id == game_id, EventRow.seq.is_not(None))
                .order_by(EventRow.seq))
            out = [EventEnvelope.model_validate_json(body) for (body,) in rows]
        return out if include_internal else [e for e in out if e.event.type not in INTERNAL_EVENTS]

    async def players(self, ids: list[str]) -> dict[str, PlayerRow]:
        if not ids:
            return {}
        async with self.sessions() as session:
            rows = (await session.execute(select(PlayerRow).where(PlayerRow.id.in_(ids)))).scalars().all()
            return {r.id: r for r in rows}

    async def upsert_player(self, player_id: str, **fields) -> PlayerRow:
        now = datetime.now(timezone.utc)
        async with self.sessions() as session, session.begin():
            row = await session.get(PlayerRow, player_id)
            if row is None:
                row = PlayerRow(id=player_id, created_at=now, updated_at=now)
                session.add(row)
            for key, value in fields.items():
                if value is not None:
                    setattr(row, key, value)
            row.updated_at = now
        return row
