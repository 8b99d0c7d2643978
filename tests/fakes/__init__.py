"""In-process fakes of external services for the tests (real protocols on 127.0.0.1, no internet)."""

from .telegram_api import (
    ApiCall,
    CallbackAnswer,
    FakeChat,
    FakeTelegram,
    FakeUser,
    SentMessage,
    TelegramError,
    WaitTimeout,
)

__all__ = [
    "ApiCall",
    "CallbackAnswer",
    "FakeChat",
    "FakeTelegram",
    "FakeUser",
    "SentMessage",
    "TelegramError",
    "WaitTimeout",
]
