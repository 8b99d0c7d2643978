"""Webhook mode: Telegram posts updates with the secret token; anything else is turned away."""

from __future__ import annotations

import aiohttp

from avalon.services.telegram_gateway.main import WEBHOOK_PATH, TelegramRunner
from avalon.shared.bus import InProcessBus
from avalon.shared.config import Settings
from tests.fakes.telegram_api import FakeTelegram


async def test_webhook_mode_registers_with_a_secret_and_refuses_posts_without_it(unused_tcp_port, tmp_path):
    fake = await FakeTelegram().start()
    settings = Settings(telegram_bot_token=fake.token, telegram_api_url=fake.base_url,
                        database_url=f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",  # not ./avalon.db
                        telegram_webhook_url="https://narrator.example", telegram_webhook_secret="s3cret",
                        telegram_webhook_listen=f"127.0.0.1:{unused_tcp_port}")
    runner = TelegramRunner(settings, InProcessBus())
    await runner.start()
    try:
        assert fake.webhook["url"] == "https://narrator.example" + WEBHOOK_PATH
        assert fake.webhook.get("secret_token") == "s3cret"
        ann = fake.user(7, "Ann")
        await ann.start_private()  # she opened the chat (the fake keeps that update: webhook mode)
        update = {"update_id": 1, "message": {
            "message_id": 1, "date": 0, "chat": {"id": 7, "type": "private", "first_name": "Ann"},
            "from": ann.json(), "text": "/help", "entities": [{"type": "bot_command", "offset": 0, "length": 5}]}}
        url = f"http://127.0.0.1:{unused_tcp_port}{WEBHOOK_PATH}"
        async with aiohttp.ClientSession() as http:
            async with http.post(url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "wrong"}) as r:
                assert r.status == 401
            assert not fake.messages(ann.private_chat)
            async with http.post(url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret"}) as r:
                assert r.status == 200
        await fake.wait_for_message(ann.private_chat, "/newgame", timeout=10)
    finally:
        await runner.stop()
        await fake.stop()
