"""Configuration from environment variables and ``.env`` (pydantic-settings)."""

from __future__ import annotations

import logging

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    # Each setting's description is what `avalon COMMAND --help` says of it.
    database_url: str = Field("sqlite+aiosqlite:///./avalon.db", description=(
        "SQLite (sqlite+aiosqlite:///PATH) or PostgreSQL (postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB)"))
    amqp_url: str = Field("amqp://guest:guest@127.0.0.1:5672/", description="RabbitMQ (the services on a broker)")
    bus_prefix: str = Field("avalon", description="prefix of every exchange and queue")
    delivery_limit: int = Field(5, description="deliveries of a failing command before it is dead-lettered")
    engine_partitions: int = Field(1, description=(
        "command partitions on the broker, shared by the engines running (at most 256; every service and "
        "`avalon broker-users` must agree; change it with `avalon partitions N`)"))
    log_level: str = Field("INFO", description="DEBUG, INFO, WARNING or ERROR")
    ops_listen: str = Field("127.0.0.1:9100", description="where /healthz, /readyz and /metrics are served; off: none")
    telegram_bot_token: str | None = Field(None, description="the bot's token from @BotFather")
    telegram_api_url: str | None = Field(None, description="a Bot API server of your own instead of Telegram's")
    telegram_webhook_url: str | None = Field(None, description="webhook mode: the public HTTPS base URL")
    telegram_webhook_secret: str | None = Field(None, description="webhook mode: the secret Telegram must send")
    telegram_webhook_listen: str = Field("0.0.0.0:8080", description="webhook mode: where its server listens")
    #: Raise them only for a Bot API server of your own that allows more.
    telegram_limits: str = Field("1,20,30", description=(
        "pacing: seconds between messages to a chat, messages a minute to a group, a second in all"))
    #: A token bucket per user (a Telegram user, a mail sender); the user is told once per refusal window
    #: (THROTTLE_BURST / THROTTLE_RATE seconds; by mail at most once an hour).
    throttle_rate: float = Field(1.0, description="commands a second one user may send over time (0: off)")
    throttle_burst: int = Field(20, description="commands one user may send at once")
    email_address: str | None = Field(None, description="the narrator's own address (no +tag)")
    email_name: str = Field("Avalon", description="the name its mail comes from")
    email_secret: str | None = Field(None, description="16+ random characters: signs each player's reply address")
    email_time_zone: str = Field("UTC", description="deadlines for players who set no time zone")
    smtp_host: str | None = Field(None, description="the server the narrator sends through (required)")
    smtp_port: int = Field(587, description="its port")
    smtp_security: str = Field("starttls", description="none, starttls or tls")
    smtp_user: str | None = Field(None, description="the SMTP login; empty: none")
    smtp_password: str | None = Field(None, description="its password")
    smtp_connections: int = Field(4, description="connections the narrator sends over side by side (mail to "
                                  "different players); 1: one mail at a time")
    email_synchronous_commit: bool = Field(True, description=(
        "PostgreSQL only: whether the email gateway waits for the disk at each commit; false: it does not "
        "(as SQLite does here), mail goes out much faster, and a crash of the PostgreSQL server itself may "
        "lose its last fraction of a second of writes (mail then not sent); the engine always waits"))
    imap_host: str | None = Field(None, description="the mailbox the narrator reads (required)")
    imap_port: int = Field(993, description="its port")
    imap_security: str = Field("tls", description="none, starttls or tls")
    imap_user: str | None = Field(None, description="the mailbox login (required)")
    imap_password: str | None = Field(None, description="its password (required)")
    imap_folder: str = Field("INBOX", description="the folder it reads")
    imap_done_folder: str | None = Field(None, description="move handled mail there; empty: flag it and leave it")
    imap_poll_interval: float = Field(60.0, description="seconds between checks when the server has no IDLE")
    email_linger: float = Field(1.0, description="seconds to wait for the rest of a batch before sending a mail")

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level == "WARN":
            level = "WARNING"
        if not isinstance(logging.getLevelName(level), int):
            raise ValueError("expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        return level

    @field_validator("telegram_bot_token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        bot, colon, secret = value.strip().partition(":")
        if not colon or not bot.isdigit() or not secret or any(c.isspace() for c in secret):
            raise ValueError("expected a bot token as @BotFather gives it, like 123456:ABC-DEF...")
        return value.strip()

    @field_validator("smtp_host", "imap_host", "smtp_user", "imap_done_folder", "telegram_api_url",
                     "telegram_webhook_url", "telegram_webhook_secret")
    @classmethod
    def _empty_is_unset(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("smtp_security", "imap_security")
    @classmethod
    def _security(cls, value: str) -> str:
        value = value.strip().lower()
        if value not in ("none", "starttls", "tls"):
            raise ValueError("expected none, starttls or tls")
        return value

    @field_validator("email_address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip().lower()
        local, at, domain = value.partition("@")
        if not at or not local or "." not in domain or "+" in local or " " in value:
            raise ValueError("expected the narrator's address, like narrator@example.org (no +tag)")
        return value

    @field_validator("throttle_rate", "throttle_burst")
    @classmethod
    def _not_negative(cls, value):
        if value < 0:
            raise ValueError("must be 0 (off) or more")
        return value

    @field_validator("engine_partitions")
    @classmethod
    def _partitions(cls, value: int) -> int:
        if not 1 <= value <= 256:
            raise ValueError("must be between 1 and 256")
        return value

    @field_validator("delivery_limit", "smtp_connections")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be at least 1")
        return value

    @field_validator("telegram_limits")
    @classmethod
    def _three_numbers(cls, value: str) -> str:
        parts = [p.strip() for p in value.split(",")]
        try:
            ok = len(parts) == 3 and float(parts[0]) >= 0 and int(parts[1]) > 0 and int(parts[2]) > 0
        except ValueError:
            ok = False
        if not ok:
            raise ValueError("expected three numbers: seconds per chat, per minute per group, per second in all")
        return value
