"""The record of finished games: a projection of the event log, kept as games end.

A game's ``game_ended`` is committed together with its record (``finished_games``, one row, and
``seat_records``, one per seat), in the same transaction (``Store.commit_many``: SQLAlchemy on SQLite,
the batch's own asyncpg transaction on PostgreSQL). The record is keyed by the game: an end that
comes again (a replay, a rebuild over a kept record) is counted once. ``rebuild`` makes it again from
the log alone (``avalon stats rebuild``), and must give what the incremental one gave.

What is kept of a game: its code (``shared.game.codes``), its table (``CreateGame.table``, else the
host), host, size, winner, cause and end; of each seat: the person, their role, their team at the end,
whether they won. A person who asked to be forgotten has no seat records of a game that ended up to
that moment (and a rebuild leaves them out too); games ending later count again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol

from sqlalchemy import delete, insert, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from avalon.shared.game.codes import game_code
from avalon.shared.protocol import EventEnvelope

from .rows import EventRow, FinishedGameRow, SeatRecordRow, StatsPersonRow

KEY_LENGTH = 200  # the columns' width: a table key or a person id is cut there


@dataclass(frozen=True)
class Created:
    """What the record needs of a game's ``game_created``."""

    host: str
    table: str


def created_of(body: str) -> Created:
    event = EventEnvelope.model_validate_json(body).event
    return Created(event.host, event.table)


def game_rows(ended: EventEnvelope, created: Created | None,
              forgotten: dict[str, datetime]) -> tuple[dict, list[dict]]:
    """A finished game's row and its seats' rows, from its ``game_ended`` and ``game_created``.
    ``forgotten``: person -> the moment up to which they asked their records to be forgotten."""
    e = ended.event
    host = created.host if created else ""
    table = ((created.table if created else "") or host or ended.game_id)[:KEY_LENGTH]
    size, at = len(e.roles), ended.occurred_at
    game = dict(game_id=ended.game_id, code=game_code(ended.game_id), table_key=table, host=host[:KEY_LENGTH],
                size=size, winner=e.winner.value, cause=e.cause.value, ended_at=at)
    teams = dict(e.teams)
    seats = []
    for seat, (person, role) in enumerate(e.roles):
        until = forgotten.get(person)
        if until is not None and at <= until:
            continue
        team = teams.get(person, role.team)
        seats.append(dict(game_id=ended.game_id, person=person[:KEY_LENGTH], seat=seat, role=role.value,
                          team=team.value, won=team is e.winner, size=size, cause=e.cause.value, table_key=table,
                          host=game["host"], ended_at=at))
    return game, seats


class RecordWriter(Protocol):
    """The four statements the projection needs, in the transaction of the caller's choice."""

    async def created(self, game_ids: list[str]) -> dict[str, str]: ...  # game -> game_created's JSON
    async def forgotten(self, people: list[str]) -> dict[str, datetime]: ...
    async def insert_games(self, rows: list[dict]) -> set[str]: ...  # the games not recorded before
    async def insert_seats(self, rows: list[dict]) -> None: ...


async def project(writer: RecordWriter, ended: list[EventEnvelope]) -> int:
    """Record these games' ends (each ``game_ended``); returns how many were new."""
    if not ended:
        return 0
    created = await writer.created([e.game_id for e in ended])
    people = sorted({person for e in ended for person, _ in e.event.roles})
    forgotten = await writer.forgotten(people)
    games, seats = [], []
    for envelope in ended:
        body = created.get(envelope.game_id)
        game, rows = game_rows(envelope, created_of(body) if body else None, forgotten)
        games.append(game)
        seats.extend(rows)
    new = await writer.insert_games(games)
    await writer.insert_seats([s for s in seats if s["game_id"] in new])
    return len(new)


class SqlWriter:
    """The projection through SQLAlchemy, on a connection inside a transaction (SQLite's commit, and a
    rebuild on either database)."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def created(self, game_ids: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for chunk in _chunks(game_ids):
            rows = await self.conn.execute(select(EventRow.game_id, EventRow.body).where(
                EventRow.game_id.in_(chunk), EventRow.type == "game_created"))
            out.update((game_id, body) for game_id, body in rows)
        return out

    async def forgotten(self, people: list[str]) -> dict[str, datetime]:
        out: dict[str, datetime] = {}
        for chunk in _chunks(people):
            rows = await self.conn.execute(select(StatsPersonRow.person, StatsPersonRow.forgotten_at).where(
                StatsPersonRow.person.in_(chunk), StatsPersonRow.forgotten_at.is_not(None)))
            out.update((person, _aware(at)) for person, at in rows)
        return out

    async def insert_games(self, rows: list[dict]) -> set[str]:
        known: set[str] = set()
        for chunk in _chunks([r["game_id"] for r in rows]):
            known |= set((await self.conn.execute(
                select(FinishedGameRow.game_id).where(FinishedGameRow.game_id.in_(chunk)))).scalars())
        new = {}
        for row in rows:
            if row["game_id"] not in known:
                new.setdefault(row["game_id"], row)
        if new:
            await self.conn.execute(insert(FinishedGameRow), list(new.values()))
        return set(new)

    async def insert_seats(self, rows: list[dict]) -> None:
        if rows:
            await self.conn.execute(insert(SeatRecordRow), rows)


_PG_CREATED = "SELECT game_id, body FROM events WHERE game_id = ANY($1::text[]) AND type = 'game_created'"
_PG_FORGOTTEN = ("SELECT person, forgotten_at FROM stats_people WHERE person = ANY($1::text[]) "
                 "AND forgotten_at IS NOT NULL")
_PG_GAMES = """
INSERT INTO finished_games (game_id, code, table_key, host, size, winner, cause, ended_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[],
                     $8::timestamptz[])
ON CONFLICT (game_id) DO NOTHING RETURNING game_id
"""
_PG_SEATS = """
INSERT INTO seat_records (game_id, person, seat, role, team, won, size, cause, table_key, host, ended_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::bool[], $7::int[],
                     $8::text[], $9::text[], $10::text[], $11::timestamptz[])
"""
_GAME_COLUMNS = ("game_id", "code", "table_key", "host", "size", "winner", "cause", "ended_at")
_SEAT_COLUMNS = ("game_id", "person", "seat", "role", "team", "won", "size", "cause", "table_key", "host",
                 "ended_at")


class PgWriter:
    """The projection on the batch's own asyncpg connection, inside its transaction (``pg_batch.py``)."""

    def __init__(self, conn) -> None:
        self.conn = conn

    async def created(self, game_ids: list[str]) -> dict[str, str]:
        return {r["game_id"]: r["body"] for r in await self.conn.fetch(_PG_CREATED, game_ids)}

    async def forgotten(self, people: list[str]) -> dict[str, datetime]:
        return {r["person"]: r["forgotten_at"] for r in await self.conn.fetch(_PG_FORGOTTEN, people)}

    async def insert_games(self, rows: list[dict]) -> set[str]:
        found = await self.conn.fetch(_PG_GAMES, *([r[c] for r in rows] for c in _GAME_COLUMNS))
        return {r["game_id"] for r in found}

    async def insert_seats(self, rows: list[dict]) -> None:
        if rows:
            await self.conn.execute(_PG_SEATS, *([r[c] for r in rows] for c in _SEAT_COLUMNS))


async def rebuild(engine: AsyncEngine, *, batch: int = 500) -> int:
    """The record made again from the event log alone, in one transaction; returns the games recorded.
    Who asked to be hidden or forgotten stays so (``stats_people`` is what people asked, not a
    projection). The engine may run meanwhile: a game that ends during the rebuild is recorded once it
    is done (PostgreSQL: its commit waits for the rebuild's lock; SQLite: for its write)."""
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # a game ending meanwhile waits, then is recorded after
            await conn.execute(text("LOCK TABLE finished_games, seat_records IN SHARE ROW EXCLUSIVE MODE"))
        await conn.execute(delete(SeatRecordRow))
        await conn.execute(delete(FinishedGameRow))
        writer = SqlWriter(conn)
        count, after = 0, 0
        while True:  # a page at a time, by the log's order
            page = (await conn.execute(
                select(EventRow.id, EventRow.body)
                .where(EventRow.type == "game_ended", EventRow.seq.is_not(None), EventRow.id > after)
                .order_by(EventRow.id).limit(batch))).all()
            if not page:
                break
            after = page[-1][0]
            count += await project(writer, [EventEnvelope.model_validate_json(body) for _, body in page])
    return count


def _chunks(items: list[str], size: int = 500):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
