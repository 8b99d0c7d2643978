"""Persistence: one transaction per command (state, events, command id), and the outbox.

SQLite (aiosqlite, WAL) by default, PostgreSQL (asyncpg) when ``DATABASE_URL``
says so; the schema comes from the Alembic migrations in ``migrations/``.
The event log is the truth: a game's state is a snapshot for speed, rebuilt
from the log whenever the snapshot cannot be read.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from datetime import datetime, timezone

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import async_sessionmaker

from avalon.shared import snapshots
from avalon.shared.db import make_engine, migrate
from avalon.shared.protocol import INTERNAL_EVENTS, EventEnvelope, to_core_event
from avalon.services.engine.rules import GameState, replay_events

from .conflicts import Conflict, Duplicate
from .pg_batch import PgBatchWriter
from .records import SqlWriter, project
from .rows import EventRow, GameRow, PlayerAddressRow, PlayerRow, ProcessedCommand

KEEP = object()  # commit(deadline_at=KEEP): the open phase's deadline stays as it is


@dataclass
class LoadedGame:
    state: GameState
    version: int
    seed: int
    origin_channel: str
    deadline_at: datetime | None = None  # the open phase's deadline
    #: channel -> the seq of the last of this game's events sent to it (EventEnvelope.prev_seq)
    sent: dict[str, int] = field(default_factory=dict)


@dataclass
class _GameWrite:
    """A game's row in a batch: the first command's expected version, the last one's state."""

    expected: int
    version: int = 0
    state: GameState | None = None
    seed: int | None = None  # a new game
    origin_channel: str = "test"
    deadline_at: object = KEEP


@dataclass
class _Rows:
    """What one batch writes: command ids, new games, game updates (with and without a new
    deadline) and events, as column dicts."""

    processed: list[dict]
    new_games: list[dict]
    updates: list[dict]
    keep_deadline: list[dict]
    events: list[dict]
    ended: list[EventEnvelope] = field(default_factory=list)  # game_ended: recorded in the same transaction


@dataclass
class OpenDeadline:
    game_id: str
    phase_id: int
    deadline_at: datetime
    timeout_seconds: int


@dataclass(frozen=True)
class StoredPlayer:
    """A person as the players table has them, with every address their profiles gave (channel ->
    address)."""

    display_name: str | None
    language: str
    time_zone: str | None
    addresses: dict[str, str]


@dataclass
class Outgoing:
    id: int
    envelope: EventEnvelope
    channels: tuple[str, ...]
    body: str  # the envelope as JSON, as stored (and published)


def _snapshot(blob: bytes | None) -> GameState | None:
    """A game's pickled state as stored, or None when there is none or it cannot be read (then the
    caller rebuilds it from the event log)."""
    if blob is None:
        return None
    try:
        state = snapshots.loads(blob)
    except Exception:
        return None
    return state if isinstance(state, GameState) else None


def aware(moment: datetime | None) -> datetime | None:
    """Datetimes are stored in UTC; a driver may hand them back without the zone."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=timezone.utc)


def _update_game(with_deadline: bool):
    values = {name: bindparam(name) for name in ("version", "phase", "phase_id", "timeout_seconds", "state",
                                                  "updated_at")}
    if with_deadline:
        values["deadline_at"] = bindparam("deadline_at")
    return (update(GameRow)
            .where(GameRow.id == bindparam("b_id"), GameRow.version == bindparam("b_expected"))
            .values(**values))


class Store:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        #: PostgreSQL: the per-batch hot path (commit, outbox marks) goes straight to asyncpg
        self._pg = PgBatchWriter(url) if url.startswith("postgresql") else None

    async def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent)."""
        await migrate(self.engine)

    async def close(self) -> None:
        if self._pg is not None:
            await self._pg.close()
        await self.engine.dispose()

    # -- commands --------------------------------------------------------------

    async def seen(self, message_id: str) -> bool:
        return bool(await self.seen_many([message_id]))

    async def seen_many(self, message_ids: list[str]) -> set[str]:
        """The command ids among these that were processed already."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                select(ProcessedCommand.message_id).where(ProcessedCommand.message_id.in_(message_ids)))
            return {message_id for (message_id,) in rows}

    async def load(self, game_id: str) -> LoadedGame | None:
        async with self.sessions() as session:
            row = await session.get(GameRow, game_id)
            if row is None:
                return None
            state = _snapshot(row.state)
            if state is None:
                state = await self._rebuild(session, game_id)
            sent = (await self._sent_many(session, [game_id])).get(game_id, {})
            return LoadedGame(state, row.version, row.seed, row.origin_channel, aware(row.deadline_at), sent)

    async def load_many(self, game_ids: set[str]) -> dict[str, LoadedGame]:
        """The games among these that exist (one query; a snapshot that cannot be read is rebuilt)."""
        async with self.engine.connect() as conn:
            rows = (await conn.execute(
                select(GameRow.id, GameRow.version, GameRow.seed, GameRow.origin_channel, GameRow.state,
                       GameRow.deadline_at).where(GameRow.id.in_(list(game_ids))))).all()
        found: dict[str, LoadedGame] = {}
        if rows:
            async with self.engine.connect() as conn:
                sent = await self._sent_many(conn, [row[0] for row in rows])
        for game_id, version, seed, origin, blob, deadline_at in rows:
            if (state := _snapshot(blob)) is not None:
                found[game_id] = LoadedGame(state, version, seed, origin, aware(deadline_at), sent.get(game_id, {}))
            elif (loaded := await self.load(game_id)) is not None:
                found[game_id] = loaded
        return found

    @staticmethod
    async def _sent_many(conn, game_ids: list[str]) -> dict[str, dict[str, int]]:
        """game -> channel -> the seq of the last of its events routed to that channel."""
        rows = await conn.execute(
            select(EventRow.game_id, EventRow.channels, func.max(EventRow.seq))
            .where(EventRow.game_id.in_(game_ids), EventRow.seq.is_not(None), EventRow.channels != "")
            .group_by(EventRow.game_id, EventRow.channels))
        out: dict[str, dict[str, int]] = {}
        for game_id, channels, seq in rows:
            sent = out.setdefault(game_id, {})
            for channel in channels.split(","):
                if seq > sent.get(channel, 0):
                    sent[channel] = seq
        return out

    async def _rebuild(self, session, game_id: str) -> GameState:
        rows = await session.execute(
            select(EventRow.body).where(EventRow.game_id == game_id, EventRow.seq.is_not(None)).order_by(EventRow.seq))
        core = []
        for (body,) in rows:
            envelope = EventEnvelope.model_validate_json(body)
            if hasattr(type(envelope.event), "core"):
                core.append(to_core_event(envelope.event))
        return replay_events(core)

    async def commit(self, **request) -> list[Outgoing]:
        """Everything one command did, in one transaction; raises Duplicate or Conflict.

        Returns the events still to publish (those with a channel), with their outbox ids.
        """
        return (await self.commit_many([request]))[0]

    async def commit_many(self, requests: list[dict]) -> list[list[Outgoing]]:
        """Several commands' commits in one transaction (a batch): a handful of
        statements whatever the number of commands. A game with several commands in
        the batch gets one row write: its last state, guarded by the first command's
        expected version. Raises Duplicate or Conflict for the whole batch; the caller
        retries the commands one by one to single out the culprit.

        Each request: game_id, message_id, outcome, events [(envelope, channels)], and for a
        command that changed the game: state, expected_version, new_game_seed (a new game),
        origin_channel, deadline_at (KEEP: the open phase's deadline stays).
        """
        now = datetime.now(timezone.utc)
        processed, event_rows, owners = [], [], []
        games: dict[str, _GameWrite] = {}  # one row per game, whatever the number of its commands in the batch
        for index, r in enumerate(requests):
            processed.append(dict(message_id=r["message_id"], game_id=r["game_id"], outcome=r["outcome"],
                                  processed_at=now))
            state, events = r.get("state"), r["events"]
            if state is not None:
                expected = r.get("expected_version") or 0
                game = games.setdefault(r["game_id"], _GameWrite(expected))
                game.version = events[-1][0].seq if events and events[-1][0].seq else expected
                game.state = state
                if r.get("new_game_seed") is not None:
                    game.seed, game.origin_channel = r["new_game_seed"], r.get("origin_channel", "test")
                if r.get("deadline_at", KEEP) is not KEEP:
                    game.deadline_at = r["deadline_at"]
            for envelope, channels in events:
                body = envelope.model_dump_json()
                event_rows.append(dict(game_id=envelope.game_id, seq=envelope.seq or None, type=envelope.event.type,
                                       audience=envelope.audience.kind.value, channels=",".join(channels),
                                       body=body, published=not channels, created_at=now))
                owners.append((index, envelope, channels, body))
        new_games, updates, keep_deadline = [], [], []
        for game_id, game in games.items():
            state = game.state
            values = dict(version=game.version, phase=state.phase.value if state.phase else None,
                          phase_id=state.phase_id, timeout_seconds=state.timeout_seconds,
                          state=pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), updated_at=now)
            if game.seed is not None:
                new_games.append(dict(id=game_id, seed=game.seed, created_at=now, origin_channel=game.origin_channel,
                                      deadline_at=None if game.deadline_at is KEEP else game.deadline_at, **values))
            elif game.deadline_at is KEEP:
                keep_deadline.append(dict(b_id=game_id, b_expected=game.expected, **values))
            else:
                updates.append(dict(b_id=game_id, b_expected=game.expected, deadline_at=game.deadline_at, **values))
        rows = _Rows(processed, new_games, updates, keep_deadline, event_rows,
                     [envelope for _, envelope, _, _ in owners if envelope.event.type == "game_ended"])
        ids = await (self._pg.write(rows) if self._pg is not None else self._write(rows))
        out: list[list[Outgoing]] = [[] for _ in requests]
        for event_id, (index, envelope, channels, body) in zip(ids, owners):
            if channels:
                out[index].append(Outgoing(event_id, envelope, channels, body))
        return out

    async def _write(self, rows: "_Rows") -> list[int]:
        """The batch's rows in one transaction, through SQLAlchemy (SQLite); returns the event ids."""
        processed, new_games, updates, keep_deadline, event_rows = (
            rows.processed, rows.new_games, rows.updates, rows.keep_deadline, rows.events)
        async with self.engine.begin() as conn:
            try:
                await conn.execute(insert(ProcessedCommand), processed)
            except IntegrityError as error:
                raise Duplicate(processed[0]["message_id"] if len(processed) == 1 else "batch") from error
            try:
                if new_games:
                    await conn.execute(insert(GameRow), new_games)
            except IntegrityError as error:
                raise Conflict(new_games[0]["id"]) from error
            for params, with_deadline in ((updates, True), (keep_deadline, False)):
                if params:
                    await conn.execute(_update_game(with_deadline), params)
            changed = {row["b_id"]: row["version"] for row in updates + keep_deadline}
            if changed:  # the version guard: executemany cannot report rows per parameter set
                found = dict((await conn.execute(
                    select(GameRow.id, GameRow.version).where(GameRow.id.in_(list(changed))))).all())
                for game_id, version in changed.items():
                    if found.get(game_id) != version:
                        raise Conflict(game_id)
            ids = []
            if event_rows:
                try:
                    ids = (await conn.execute(insert(EventRow).returning(EventRow.id, sort_by_parameter_order=True),
                                              event_rows)).scalars().all()
                except IntegrityError as error:  # a (game, seq) taken: someone else moved the game
                    raise Conflict(event_rows[0]["game_id"]) from error
            await project(SqlWriter(conn), rows.ended)
        return ids

    # -- the outbox ----------------------------------------------------------------

    async def unpublished(self, limit: int = 500, game_id: str | None = None) -> list[Outgoing]:
        async with self.sessions() as session:
            query = select(EventRow).where(EventRow.published.is_(False))
            if game_id is not None:
                query = query.where(EventRow.game_id == game_id)
            rows = (await session.execute(query.order_by(EventRow.id).limit(limit))).scalars().all()
            return [Outgoing(r.id, EventEnvelope.model_validate_json(r.body), tuple(filter(None, r.channels.split(","))),
                             r.body) for r in rows]

    async def unpublished_games(self) -> set[str]:
        """The games with events committed and not yet published."""
        async with self.sessions() as session:
            query = select(EventRow.game_id).where(EventRow.published.is_(False)).distinct()
            return set((await session.execute(query)).scalars().all())

    async def mark_published(self, ids: list[int]) -> None:
        if not ids:
            return
        if self._pg is not None:
            await self._pg.mark_published(ids)
            return
        async with self.sessions() as session, session.begin():
            await session.execute(update(EventRow).where(EventRow.id.in_(ids)).values(published=True))

    # -- queries ---------------------------------------------------------------------

    async def open_deadlines(self) -> list[OpenDeadline]:
        async with self.sessions() as session:
            rows = (await session.execute(select(GameRow).where(GameRow.deadline_at.is_not(None)))).scalars().all()
            return [OpenDeadline(r.id, r.phase_id, aware(r.deadline_at), r.timeout_seconds) for r in rows]

    async def deadline_of(self, game_id: str) -> datetime | None:
        async with self.sessions() as session:
            row = await session.get(GameRow, game_id)
            return aware(row.deadline_at) if row is not None else None

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

    async def upsert_player(self, player_id: str, *, addresses: dict[str, str] | None = None,
                            **fields) -> StoredPlayer:
        """A person's profile: the fields given (None: as it was) and their address on each channel
        named (the others as they were)."""
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
            known = {a.channel: a for a in (await session.execute(
                select(PlayerAddressRow).where(PlayerAddressRow.player_id == player_id))).scalars()}
            for channel, address in (addresses or {}).items():
                if channel in known:
                    known[channel].address, known[channel].updated_at = address, now
                else:
                    known[channel] = PlayerAddressRow(player_id=player_id, channel=channel, address=address,
                                                      updated_at=now)
                    session.add(known[channel])
        return StoredPlayer(row.display_name, row.language, row.time_zone,
                            {channel: a.address for channel, a in sorted(known.items())})
