"""Database tables (SQLModel): games, the per-game event log, processed commands, players and where
each can be reached."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, DateTime, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


class GameRow(SQLModel, table=True):
    __tablename__ = "games"

    id: str = Field(primary_key=True, max_length=200)
    seed: int = Field(sa_column=Column(BigInteger, nullable=False))
    version: int = 0  # the last event's seq
    phase: str | None = Field(default=None, max_length=32)
    phase_id: int = 0
    deadline_at: datetime | None = Field(default=None, index=True, sa_type=DateTime(timezone=True))
    timeout_seconds: int = 0
    origin_channel: str = Field(default="test", max_length=32)
    state: bytes | None = Field(default=None, sa_column=Column(LargeBinary))  # snapshot; the log is the truth
    created_at: datetime = Field(sa_type=DateTime(timezone=True))
    updated_at: datetime = Field(sa_type=DateTime(timezone=True))


class EventRow(SQLModel, table=True):
    """The event log and the outbox: ``published`` is false until the bus confirmed it."""

    __tablename__ = "events"
    __table_args__ = (
        UniqueConstraint("game_id", "seq", name="uq_events_game_seq"),
        Index("ix_events_unpublished", "published", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    game_id: str = Field(max_length=200, index=True)
    seq: int | None = None  # None: a reply outside any game's stream (e.g. unknown game)
    type: str = Field(max_length=64)
    audience: str = Field(max_length=16)
    channels: str = Field(default="", max_length=200)  # comma separated routing channels
    body: str = Field(sa_column=Column(Text, nullable=False))  # the EventEnvelope as JSON
    published: bool = False
    created_at: datetime = Field(sa_type=DateTime(timezone=True))


class ProcessedCommand(SQLModel, table=True):
    __tablename__ = "processed_commands"

    message_id: str = Field(primary_key=True, max_length=200)
    game_id: str = Field(max_length=200, index=True)
    outcome: str = Field(max_length=16)  # accepted, rejected, ignored
    processed_at: datetime = Field(sa_type=DateTime(timezone=True))


class PlayerRow(SQLModel, table=True):
    """A person: how to name them, in which language and time zone."""

    __tablename__ = "players"

    id: str = Field(primary_key=True, max_length=200)
    display_name: str | None = Field(default=None, max_length=64)
    language: str = Field(default="en", max_length=8)
    time_zone: str | None = Field(default=None, max_length=64)
    created_at: datetime = Field(sa_type=DateTime(timezone=True))
    updated_at: datetime = Field(sa_type=DateTime(timezone=True))


class PlayerAddressRow(SQLModel, table=True):
    """Where a person can be reached on a channel (their profile said so): events they read go there too."""

    __tablename__ = "player_addresses"

    player_id: str = Field(primary_key=True, max_length=200)
    channel: str = Field(primary_key=True, max_length=32)
    address: str = Field(max_length=254)
    updated_at: datetime = Field(sa_type=DateTime(timezone=True))


class InboxRow(SQLModel, table=True):
    """The in-process bus's durable inbox (``shared/bus/inbox.py``, which reads it with Core): commands
    committed before their senders were told, not yet handled by the engine."""

    __tablename__ = "inbox"

    message_id: str = Field(primary_key=True, max_length=200)
    seq: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))  # the order they were sent in
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # the command envelope's JSON
    received_at: datetime = Field(sa_type=DateTime(timezone=True))


class FinishedGameRow(SQLModel, table=True):
    """A finished game as the record keeps it (``records.py``; a projection of the event log)."""

    __tablename__ = "finished_games"
    __table_args__ = (Index("ix_finished_games_table_ended", "table_key", "ended_at"),)

    game_id: str = Field(primary_key=True, max_length=200)
    code: str = Field(max_length=16, index=True)  # shared.game.codes.game_code(game_id)
    table_key: str = Field(max_length=200)  # the group the game was played in (CreateGame.table, else the host)
    host: str = Field(max_length=200)
    size: int
    winner: str = Field(max_length=8)
    cause: str = Field(max_length=32)
    ended_at: datetime = Field(sa_type=DateTime(timezone=True))


class SeatRecordRow(SQLModel, table=True):
    """One person's part in a finished game: role, final team, won or lost (with the game's facts the
    queries group by)."""

    __tablename__ = "seat_records"
    __table_args__ = (Index("ix_seat_records_person", "person", "role", "team", "size", "cause", "won"),
                      Index("ix_seat_records_table_person", "table_key", "person", "won"),
                      Index("ix_seat_records_host_person", "host", "person", "won"))

    game_id: str = Field(primary_key=True, max_length=200)
    person: str = Field(primary_key=True, max_length=200)
    seat: int
    role: str = Field(max_length=16)
    team: str = Field(max_length=8)
    won: bool
    size: int
    cause: str = Field(max_length=32)
    table_key: str = Field(max_length=200)
    host: str = Field(max_length=200)
    ended_at: datetime = Field(sa_type=DateTime(timezone=True))


class StatsPersonRow(SQLModel, table=True):
    """What a person asked of their records: hidden from others, or forgotten (every record of a game
    that ended up to ``forgotten_at`` deleted, and left out of a rebuild)."""

    __tablename__ = "stats_people"

    person: str = Field(primary_key=True, max_length=200)
    hidden: bool = False
    forgotten_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    updated_at: datetime = Field(sa_type=DateTime(timezone=True))
