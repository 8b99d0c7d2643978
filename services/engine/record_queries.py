"""What the record of finished games answers (``records.py`` keeps it): a person's stats, a table's
leaderboard and its last games; and what a person may ask of their records: hide them from others,
or have them forgotten.

Each query is one or two statements on the indexes of ``seat_records`` and ``finished_games``
(``bench/stats_bench.py`` measures them with 10,000 games in the store).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone

from sqlalchemy import case, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from avalon.shared.game.model import WinCause

from .rows import FinishedGameRow, PlayerRow, SeatRecordRow, StatsPersonRow

#: The ends where the Assassin shot (or could have): Merlin survived the last two.
SHOT = {WinCause.MERLIN_ASSASSINATED.value, WinCause.ASSASSIN_MISSED.value, WinCause.SHOT_FORFEITED.value}
MIN_GAMES, LEADERS, HISTORY = 3, 10, 10


@dataclass(frozen=True)
class Tally:
    key: str
    games: int
    wins: int


@dataclass
class PersonStats:
    person: str
    games: int = 0
    wins: int = 0
    by_role: list[Tally] = field(default_factory=list)
    by_team: list[Tally] = field(default_factory=list)
    by_size: list[Tally] = field(default_factory=list)
    merlin_shot_at: int = 0  # games as Merlin that came to the Assassin's shot
    merlin_survived: int = 0  # ... and the shot missed or was never taken
    assassin_shots: int = 0  # games as the Assassin that came to the shot
    assassin_hits: int = 0  # ... and Merlin was shot


@dataclass(frozen=True)
class Leader:
    person: str
    games: int
    wins: int


@dataclass(frozen=True)
class PastGame:
    game_id: str
    code: str
    ended_at: datetime
    size: int
    winner: str
    cause: str
    roles: tuple[tuple[str, str], ...]  # (person, role) by seat; a forgotten person is not there


@dataclass(frozen=True)
class Privacy:
    hidden: bool = False
    forgotten_at: datetime | None = None


def _wins():
    return func.sum(case((SeatRecordRow.won.is_(True), 1), else_=0))


def _tallies(counts: dict[str, list[int]], order=None) -> list[Tally]:
    keys = sorted(counts, key=order) if order else sorted(counts, key=lambda k: (-counts[k][0], k))
    return [Tally(k, *counts[k]) for k in keys]


async def person_stats(engine: AsyncEngine, person: str) -> PersonStats:
    """Every count of a person's finished games, in one grouped statement."""
    async with engine.connect() as conn:
        rows = (await conn.execute(
            select(SeatRecordRow.role, SeatRecordRow.team, SeatRecordRow.size, SeatRecordRow.cause,
                   func.count(), _wins())
            .where(SeatRecordRow.person == person)
            .group_by(SeatRecordRow.role, SeatRecordRow.team, SeatRecordRow.size, SeatRecordRow.cause))).all()
    out = PersonStats(person)
    roles: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    teams: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    sizes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for role, team, size, cause, games, wins in rows:
        wins = int(wins or 0)
        out.games += games
        out.wins += wins
        for counts, key in ((roles, role), (teams, team), (sizes, str(size))):
            counts[key][0] += games
            counts[key][1] += wins
        if cause in SHOT and role == "merlin":
            out.merlin_shot_at += games
            out.merlin_survived += games if cause != WinCause.MERLIN_ASSASSINATED.value else 0
        if cause in SHOT and role == "assassin":
            out.assassin_shots += games
            out.assassin_hits += games if cause == WinCause.MERLIN_ASSASSINATED.value else 0
    out.by_role = _tallies(roles)
    out.by_team = _tallies(teams, order=lambda k: (k != "good", k))
    out.by_size = _tallies(sizes, order=int)
    return out


async def leaderboard(engine: AsyncEngine, table: str | None = None, *, host: str | None = None,
                      min_games: int = MIN_GAMES, limit: int = LEADERS) -> list[Leader]:
    """A table's players (or a host's: those of the games they hosted, at any table) with at least
    ``min_games`` finished games there, most wins first (then fewer games, then the id); who hid their
    stats is left out."""
    where = SeatRecordRow.table_key == table if host is None else SeatRecordRow.host == host
    hidden = select(StatsPersonRow.person).where(StatsPersonRow.hidden.is_(True))
    wins = _wins().label("wins")
    games = func.count().label("games")
    async with engine.connect() as conn:
        rows = (await conn.execute(
            select(SeatRecordRow.person, games, wins)
            .where(where, SeatRecordRow.person.not_in(hidden))
            .group_by(SeatRecordRow.person).having(func.count() >= min_games)
            .order_by(wins.desc(), games, SeatRecordRow.person).limit(limit))).all()
    return [Leader(person, games, int(wins or 0)) for person, games, wins in rows]


async def history(engine: AsyncEngine, table: str, *, count: int = HISTORY) -> list[PastGame]:
    """A table's last ``count`` finished games, the latest first, with the roles revealed at the end."""
    async with engine.connect() as conn:
        games = (await conn.execute(
            select(FinishedGameRow.game_id, FinishedGameRow.code, FinishedGameRow.ended_at, FinishedGameRow.size,
                   FinishedGameRow.winner, FinishedGameRow.cause)
            .where(FinishedGameRow.table_key == table)
            .order_by(FinishedGameRow.ended_at.desc(), FinishedGameRow.game_id).limit(count))).all()
        seats: dict[str, list[tuple[str, str]]] = defaultdict(list)
        if games:
            for game_id, person, role in await conn.execute(
                    select(SeatRecordRow.game_id, SeatRecordRow.person, SeatRecordRow.role)
                    .where(SeatRecordRow.game_id.in_([g[0] for g in games])).order_by(SeatRecordRow.seat)):
                seats[game_id].append((person, role))
    return [PastGame(game_id, code, _aware(at), size, winner, cause, tuple(seats[game_id]))
            for game_id, code, at, size, winner, cause in games]


async def games_by_code(engine: AsyncEngine, code: str) -> list[str]:
    """The finished games with this code (one, but for a rare clash), oldest first."""
    async with engine.connect() as conn:
        return list((await conn.execute(select(FinishedGameRow.game_id).where(FinishedGameRow.code == code)
                                        .order_by(FinishedGameRow.ended_at))).scalars())


async def privacy(engine: AsyncEngine, person: str) -> Privacy:
    async with engine.connect() as conn:
        row = (await conn.execute(select(StatsPersonRow.hidden, StatsPersonRow.forgotten_at)
                                  .where(StatsPersonRow.person == person))).first()
    return Privacy(bool(row[0]), _aware(row[1])) if row else Privacy()


async def known(engine: AsyncEngine, person: str) -> bool:
    """Whether the narrator knows this person: a profile, or a finished game."""
    async with engine.connect() as conn:
        if (await conn.execute(select(PlayerRow.id).where(PlayerRow.id == person))).first():
            return True
        return (await conn.execute(select(SeatRecordRow.game_id).where(SeatRecordRow.person == person)
                                   .limit(1))).first() is not None


async def set_hidden(engine: AsyncEngine, person: str, hidden: bool) -> None:
    await _remember(engine, person, hidden=hidden)


async def forget(engine: AsyncEngine, person: str, *, now: datetime | None = None) -> int:
    """Delete every record of the person's finished games (and keep the moment, so a rebuild leaves
    them out too); returns how many games they had."""
    now = now or datetime.now(timezone.utc)
    async with engine.begin() as conn:
        gone = (await conn.execute(delete(SeatRecordRow).where(SeatRecordRow.person == person))).rowcount
        await _remember(engine, person, conn=conn, forgotten_at=now)
    return int(gone or 0)


async def _remember(engine: AsyncEngine, person: str, *, conn=None, **values) -> None:
    now = datetime.now(timezone.utc)
    if conn is None:
        async with engine.begin() as conn:
            await _remember(engine, person, conn=conn, **values)
        return
    done = await conn.execute(update(StatsPersonRow).where(StatsPersonRow.person == person)
                              .values(updated_at=now, **values))
    if not done.rowcount:
        await conn.execute(StatsPersonRow.__table__.insert().values(
            person=person, hidden=values.get("hidden", False), forgotten_at=values.get("forgotten_at"),
            updated_at=now))


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=timezone.utc)
