"""The gateways' tables (migrations 0002 and 0004): owned by the channels, not by the engine."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, DateTime, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel


class OutboxRow(SQLModel, table=True):
    """A message rendered for one recipient on one channel, waiting to be sent (or sent, or dead)."""

    __tablename__ = "delivery_outbox"
    __table_args__ = (Index("ix_delivery_outbox_pending", "channel", "state", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    channel: str = Field(max_length=20)
    game_id: str = Field(max_length=100)
    event_id: str = Field(max_length=200)  # the envelope's message_id that asked for it
    recipient: str = Field(max_length=320)  # the channel's address: a chat id, a mail address
    body: str = Field(sa_column=Column(Text, nullable=False))  # JSON: what the channel's wire needs
    state: str = Field(default="pending", max_length=10)  # pending | sent | dead
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    done_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))


class HandledEvent(SQLModel, table=True):
    """An event a channel has handled: its messages are in the outbox (a redelivery is dropped)."""

    __tablename__ = "delivery_handled"

    channel: str = Field(primary_key=True, max_length=20)
    event_id: str = Field(primary_key=True, max_length=200)


class SlotRow(SQLModel, table=True):
    """A sent message a later one edits in place (a tally, a picker): its name and its id there."""

    __tablename__ = "delivery_slots"

    channel: str = Field(primary_key=True, max_length=20)
    slot: str = Field(primary_key=True, max_length=200)
    ref: str = Field(max_length=200)


class ChannelGameRow(SQLModel, table=True):
    """A channel's memory of one game, written with the outbox rows of each event."""

    __tablename__ = "delivery_games"

    channel: str = Field(primary_key=True, max_length=20)
    game_id: str = Field(primary_key=True, max_length=100)
    blob: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class GatewayStateRow(SQLModel, table=True):
    """A gateway's memory (the chats, names, languages it knows), as one snapshot per gateway."""

    __tablename__ = "gateway_state"

    key: str = Field(primary_key=True, max_length=100)
    blob: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
