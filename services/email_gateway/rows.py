"""The email gateway's own tables (migrations 0005, 0009): where it is in the mailbox, the mail it has
read, what it knows of each address, and the hosts' standby lists."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, DateTime, Text
from sqlmodel import Field, SQLModel


class MailboxRow(SQLModel, table=True):
    """The last mail handled in a mailbox folder (its UID), valid while UIDVALIDITY is unchanged."""

    __tablename__ = "email_mailbox"

    key: str = Field(primary_key=True, max_length=300)  # user@host/folder
    uidvalidity: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    last_uid: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class SeenMailRow(SQLModel, table=True):
    """A mail read once (by its Message-ID): the same mail delivered again changes nothing."""

    __tablename__ = "email_seen"

    message_id: str = Field(primary_key=True, max_length=300)
    sender: str | None = Field(default=None, max_length=320)
    outcome: str = Field(default="", max_length=40)
    seen_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class ContactRow(SQLModel, table=True):
    """An address: failing (it bounced), and when a stranger there was last answered."""

    __tablename__ = "email_contacts"

    address: str = Field(primary_key=True, max_length=320)
    failing: bool = False
    failure: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    answered_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class StandbyRow(SQLModel, table=True):
    """An address on a host's standby list (migration 0009): told when the host opens a game or a seat."""

    __tablename__ = "email_standby"

    host: str = Field(primary_key=True, max_length=320)  # the host's player id (mail:<address>)
    address: str = Field(primary_key=True, max_length=320)
    added_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
