"""Long polling as `avalon telegram` runs it (TelegramRunner against the fake Bot API over HTTP): a
clean stop says nothing alarming, and a press in hand at a stop is handled after the restart."""

from __future__ import annotations

import asyncio
import logging

from avalon.services.telegram_gateway.main import TelegramRunner
from avalon.shared.bus import InProcessBus
from avalon.shared.config import Settings
from tests.fakes.telegram_api import FakeTelegram


def settings_for(fake: FakeTelegram, tmp_path) -> Settings:
    return Settings(telegram_bot_token=fake.token, telegram_api_url=fake.base_url,
                    database_url=f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}")


async def test_a_clean_stop_of_long_polling_logs_no_error(tmp_path, caplog):
    """aiogram's polling outlived the bot's session at a stop and logged "Failed to fetch updates ...
    ServerDisconnectedError" as an ERROR each time: an operator reading the log saw a fault where
    there was none."""
    caplog.set_level(logging.INFO)
    fake = await FakeTelegram().start()
    try:
        for round_ in range(3):  # stopped while a long poll waits, after answering, and again
            bus = InProcessBus()  # the test's own, closed by the test (the runner closes what it opened)
            runner = TelegramRunner(settings_for(fake, tmp_path), bus)
            await runner.start()
            ann = fake.user(7, "Ann")
            await ann.send(None, "/help")
            await fake.wait_for(lambda: len([m for m in fake.messages(ann.private_chat) if "/newgame" in m.text])
                                > round_, timeout=15, what="the answer to /help")
            await runner.stop()
            await bus.close()
    finally:
        await fake.stop()
    errors = [f"{r.name}: {r.getMessage()[:200]}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors
    assert sum("telegram gateway ready" in r.getMessage() for r in caplog.records) == 3


async def test_a_stop_right_after_the_start_stops_cleanly(tmp_path, caplog):
    """Stopped as soon as it is ready (a host's quick restart, a deploy that is rolled back): no
    error, no polling left running on a closed session."""
    caplog.set_level(logging.INFO)
    fake = await FakeTelegram().start()
    try:
        for _ in range(3):
            bus = InProcessBus()  # the test's own, closed by the test (the runner closes what it opened)
            runner = TelegramRunner(settings_for(fake, tmp_path), bus)
            await runner.start()
            await runner.stop()
            await bus.close()
        calls = len(fake.calls("getUpdates"))
        await asyncio.sleep(1.5)
        assert len(fake.calls("getUpdates")) == calls, "nobody polls once every runner is stopped"
    finally:
        await fake.stop()
    errors = [f"{r.name}: {r.getMessage()[:200]}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors
