"""`avalon run` with a bot token: the embedded narrator answers in a Telegram group."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

from tests.fakes.telegram_api import FakeTelegram


async def test_avalon_run_with_a_bot_token_opens_a_lobby_in_a_telegram_group(tmp_path):
    fake = await FakeTelegram().start()
    env = {**os.environ, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}",
           "TELEGRAM_BOT_TOKEN": fake.token, "TELEGRAM_API_URL": fake.base_url, "LOG_LEVEL": "INFO"}
    log = tmp_path / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", "run"], cwd=tmp_path, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        await fake.wait_for(lambda: "telegram gateway ready" in log.read_text(), timeout=30,
                            what="the gateway to start")
        ann, bob = fake.user(1, "Ann"), fake.user(2, "Bob")
        group = fake.group(-42, "Camelot", members=[ann, bob])
        await ann.start_private()
        await ann.send(group, "/newgame")
        lobby = await fake.wait_for_message(group, "A new game", timeout=20)
        assert lobby.button("Join")
        await bob.press(lobby, button="Join")
        await fake.wait_for_message(group, "Bob joined", timeout=20)
        await fake.wait_for_message(group, "open a private chat", timeout=20)  # Bob never started the bot
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.to_thread(proc.wait, 20)
        finally:
            if proc.poll() is None:
                proc.kill()
        await fake.stop()
    assert code == 0, log.read_text()
