"""`avalon run` killed right after it told players their votes counted: after each restart on the
same database every confirmed vote is counted, and the votes revealed in the group show them all.

The embedded narrator (engine and Telegram gateway in one process, in-process bus, SQLite) runs as
a subprocess against the fake Bot API. Five players reach the first vote; the narrator is killed
(SIGKILL) three times, each at another moment: right after one player's "✅", right after two
players pressing at once got theirs, and a little later (the engine has committed, the inbox has
not deleted the row yet: the command comes again and is dropped as a duplicate)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time

from sqlalchemy import text

from avalon.services.engine.store import Store
from tests.fakes.telegram_api import FakeTelegram

NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve"]


class Narrator:
    """`avalon run` as a subprocess, started again on the same database after each kill."""

    def __init__(self, tmp_path, fake: FakeTelegram) -> None:
        self.tmp_path = tmp_path
        self.url = f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}"
        self.env = {**os.environ, "DATABASE_URL": self.url, "TELEGRAM_BOT_TOKEN": fake.token,
                    "TELEGRAM_API_URL": fake.base_url, "LOG_LEVEL": "INFO", "OPS_LISTEN": "off"}
        self.fake = fake
        self.runs = 0
        self.proc: subprocess.Popen | None = None

    @property
    def log(self):
        return self.tmp_path / f"run{self.runs}.log"

    async def start(self) -> None:
        self.runs += 1
        with self.log.open("w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", "run"], cwd=self.tmp_path,
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT)
        await self.fake.wait_for(lambda: "telegram gateway ready" in self.log.read_text() or self.proc.poll(),
                                 timeout=30, what="the narrator to start")
        assert self.proc.poll() is None, self.log.read_text()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    async def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.to_thread(self.proc.wait, 20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def logs(self) -> str:
        return "\n".join(f"--- run {i} ---\n" + (self.tmp_path / f"run{i}.log").read_text()
                         for i in range(1, self.runs + 1))


async def counted_votes(url: str) -> dict[str, bool]:
    """The votes the engine has committed (its event log), by player name."""
    store = Store(url)
    try:
        async with store.engine.connect() as conn:
            game_ids = [row[0] for row in await conn.execute(text("SELECT id FROM games"))]
        assert len(game_ids) == 1, game_ids
        votes = {}
        for envelope in await store.event_log(game_ids[0], include_internal=True):
            event = envelope.event
            if event.type == "vote_cast":
                votes[event.player] = event.approve
        return votes
    finally:
        await store.close()


def texts(fake, chat) -> list[str]:
    return [m.text for m in fake.messages(chat)]


async def reach_the_first_vote(fake, group, users):
    by_name = dict(zip(NAMES, users))
    host = users[0]
    for user in users:
        await user.start_private()
    await host.send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=20)
    for user in users[1:]:
        await user.press(lobby, button="Join")
    await fake.wait_for(lambda: sum(t.count("joined the game") for t in texts(fake, group)) == len(users), timeout=20,
                        what="everyone to join")
    await host.send(group, "/startgame")
    for user in users:
        await fake.wait_for_message(user.private_chat, "Your role", timeout=20)
    deadline = time.monotonic() + 60
    pressed: set[tuple[int, str]] = set()
    while True:
        assert time.monotonic() < deadline, "no vote:\n" + "\n".join(texts(fake, group)[-10:])
        for message in fake.messages(group):
            data = message.callback_data
            if data and data[0].startswith("v:"):
                return message
            if data and data[0].startswith("p:") and (message.message_id, message.text) not in pressed:
                pressed.add((message.message_id, message.text))
                leader = by_name[re.match(r"👑 (\w+):", message.text).group(1)]
                size = int(re.search(r"pick (\d+)", message.text).group(1))
                picked = int(re.search(r"(\d+) selected", message.text).group(1))
                await leader.press(message, data[picked] if picked < size else data[-1])
        await asyncio.sleep(0.05)


async def approve(fake, user, vote) -> dict:
    """``user`` presses Approve; returns once the narrator answered the press (✅ or an alert)."""
    query = await user.press(vote, vote.callback_data[0])
    answer = await fake.wait_for(lambda: next((a for a in fake.callback_answers if a.query_id == query["id"]), None),
                                 timeout=20, what=f"{user.first_name}'s press to be answered")
    return {"query": query, "answer": answer}


def forget_presses(fake, queries: list[dict]) -> None:
    """Telegram forgets an update once the bot asked for the next ones: a confirmed press must not
    come again after the restart (it would hide a lost vote)."""
    ids = {q["id"] for q in queries}
    fake._pending = [u for u in fake._pending if u.get("callback_query", {}).get("id") not in ids]


async def test_every_vote_confirmed_before_a_kill_is_counted_after_the_restart(tmp_path):
    fake = await FakeTelegram().start()
    narrator = Narrator(tmp_path, fake)
    users = [fake.user(2000 + i, name) for i, name in enumerate(NAMES)]
    group = fake.group(-4242, "Camelot", members=users)
    confirmed: list[str] = []
    report: list[str] = []

    async def restart_and_check(kill_moment: str) -> None:
        await narrator.start()
        deadline = time.monotonic() + 30
        while True:
            counted = await counted_votes(narrator.url)
            missing = [name for name in confirmed if player(name) not in counted]
            if not missing:
                break
            assert time.monotonic() < deadline, (
                f"after the kill {kill_moment}, confirmed votes not counted: {missing} (counted: {counted})\n"
                + narrator.logs())
            await asyncio.sleep(0.1)
        again = re.search(r"(\d+) commands left in the inbox", narrator.log.read_text())
        report.append(f"killed {kill_moment}: {len(confirmed)} votes confirmed, {len(counted)} counted; "
                      f"{again.group(1) if again else 0} commands delivered again from the inbox")

    def player(name: str) -> str:
        return f"tg:{users[NAMES.index(name)].id}"

    try:
        await narrator.start()
        vote = await reach_the_first_vote(fake, group, users)
        await asyncio.sleep(2.5)  # the gateway's memory (the open vote) is saved once a second

        # 1. killed right after the first player's ✅
        pressed = await approve(fake, users[0], vote)
        narrator.kill()
        assert pressed["answer"].text == "✅", pressed["answer"]
        confirmed.append(users[0].first_name)
        forget_presses(fake, [pressed["query"]])
        await restart_and_check("right after one ✅")

        # 2. two players press at once; killed right after both got their ✅
        both = await asyncio.gather(approve(fake, users[1], vote), approve(fake, users[2], vote))
        narrator.kill()
        for user, pressed in zip(users[1:3], both):
            assert pressed["answer"].text == "✅", pressed["answer"]
            confirmed.append(user.first_name)
        forget_presses(fake, [p["query"] for p in both])
        await restart_and_check("right after two ✅ at once")

        # 3. killed a little after the ✅: committed by the engine, not yet deleted from the inbox
        pressed = await approve(fake, users[3], vote)
        await asyncio.sleep(0.05)
        narrator.kill()
        assert pressed["answer"].text == "✅", pressed["answer"]
        confirmed.append(users[3].first_name)
        forget_presses(fake, [pressed["query"]])
        await restart_and_check("50 ms after one ✅")

        # the last player votes with the narrator up: the votes are revealed in the group
        pressed = await approve(fake, users[4], vote)
        assert pressed["answer"].text == "✅", pressed["answer"]
        confirmed.append(users[4].first_name)
        revealed = await fake.wait_for_message(group, "The team is approved", timeout=20)
        assert "5 for, 0 against" in revealed.text, revealed.text
        for name in confirmed:
            assert f"👍 {name}" in revealed.text, (name, revealed.text)
        assert await counted_votes(narrator.url) == {player(name): True for name in NAMES}
        print("\n".join(report))
    finally:
        code = await narrator.stop()
        await fake.stop()
    assert code == 0, narrator.logs()
