"""Configuration from environment variables and ``.env`` (pydantic-settings)."""

from __future__ import annotations

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
    telegram_bot_token: str | None = None
    telegram_api_url: str | None = None  # a custom Bot API server (self-hosted, or a test stand-in)
    #: Webhook mode instead of long polling: the public URL Telegram posts to, with a secret token.
    telegram_webhook_url: str | None = None
    telegram_webhook_secret: str | None = None
    telegram_webhook_listen: str = "0.0.0.0:8080"
