"""Configuration from environment variables and ``.env`` (pydantic-settings)."""

from __future__ import annotations

import logging

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    #: SQLite by default (no server to install); PostgreSQL e.g.
    #: postgresql+asyncpg://avalon:avalon@db:5432/avalon
    database_url: str = "sqlite+aiosqlite:///./avalon.db"
    #: RabbitMQ for `avalon engine` (compose); `avalon run` uses the in-process bus.
    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    bus_prefix: str = "avalon"
    delivery_limit: int = 5
    log_level: str = "INFO"
    #: where /healthz, /readyz and /metrics are served ("off": not at all)
    ops_listen: str = "127.0.0.1:9100"
    telegram_bot_token: str | None = None
    telegram_api_url: str | None = None  # a custom Bot API server (self-hosted, or a test stand-in)
    #: Webhook mode instead of long polling: the public URL Telegram posts to, with a secret token.
    telegram_webhook_url: str | None = None
    telegram_webhook_secret: str | None = None
    telegram_webhook_listen: str = "0.0.0.0:8080"
    #: The gateway's own pacing, below Telegram's flood limits: seconds between messages to one
    #: chat, messages per minute to one group, messages per second in all ("1,20,30"). Raise them
    #: only for a Bot API server of your own that allows more.
    telegram_limits: str = "1,20,30"
    #: Flood throttling per user (a Telegram user, a mail sender): commands a second sustained, and
    #: at once (a token bucket). What goes past it is not acted on; the user is told once per
    #: refusal window (THROTTLE_BURST / THROTTLE_RATE seconds; by mail at most once an hour). 0: off.
    throttle_rate: float = 1.0
    throttle_burst: int = 20
    #: The email gateway: the narrator's address (with it set, `avalon run` starts the gateway), its
    #: SMTP server (out) and IMAP mailbox (in); security none | starttls | tls.
    email_address: str | None = None
    email_name: str = "Avalon"
    #: the key that signs each player's reply address (narrator+TOKEN@domain); at least 16 characters
    email_secret: str | None = None
    email_time_zone: str = "UTC"  # deadlines for players who set none
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 587
    smtp_security: str = "starttls"
    smtp_user: str | None = None
    smtp_password: str | None = None
    imap_host: str = "127.0.0.1"
    imap_port: int = 993
    imap_security: str = "tls"
    imap_user: str | None = None
    imap_password: str | None = None
    imap_folder: str = "INBOX"
    #: where handled mail is moved; empty: it stays, flagged \Seen and $AvalonDone
    imap_done_folder: str | None = None
    #: seconds between checks when the server has no IDLE
    imap_poll_interval: float = 60.0
    #: seconds the gateway waits for the rest of a batch before sending a mail
    email_linger: float = 1.0

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level == "WARN":
            level = "WARNING"
        if not isinstance(logging.getLevelName(level), int):
            raise ValueError("expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        return level

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

    @field_validator("delivery_limit")
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
