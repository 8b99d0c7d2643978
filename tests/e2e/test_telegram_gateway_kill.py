"""SIGKILL of the Telegram gateway (`avalon telegram`, a real process) at random moments of a
whole game over the real broker, restarted each time: every message the group and each player
should read arrives, checked against the engine's own event log rendered independently;
duplicates (bounded: what was in flight at a kill) are counted and printed."""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.shared.bus.rabbit import RabbitBus
from avalon.shared.narration.render import Context, Narrator, Recipient
from tests.fakes.telegram_api import FakeTelegram
from tests.fakes.telegram_markup import parse_html
from tests.integration.conftest import amqp_url, rabbit_prefix, require_rabbitmq  # noqa: F401
from tests.integration.engine_support import create_pg_database, drop_pg_database

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve"]
QUIET = {"player_voted", "player_played_card", "board_shown"}


class Gateway:
    def __init__(self, tmp_path: Path, fake: FakeTelegram, amqp: str, prefix: str, *,
                 database_url: str | None = None) -> None:
        self.env = {**os.environ, "DATABASE_URL": database_url or f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
                    "AMQP_URL": amqp, "BUS_PREFIX": prefix, "TELEGRAM_BOT_TOKEN": fake.token,
                    "TELEGRAM_API_URL": fake.base_url, "TELEGRAM_LIMITS": "0,100000,100000", "OPS_LISTEN": "off",
                    "LOG_LEVEL": "INFO", "PYTHONPATH": str(ROOT)}
        self.log = tmp_path / "gateway.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    async def start(self) -> None:
        self.starts += 1
        with self.log.open("a") as out:
            out.write(f"--- start {self.starts}\n")
            out.flush()
            self.proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", "telegram"], cwd=ROOT, env=self.env,
                                         stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while self.log.read_text().count("telegram gateway ready") < self.starts:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, self.log.read_text()[-3000:]
            await asyncio.sleep(0.05)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


def plain(html: str) -> str:
    return parse_html(html)[0]


def expected_messages(log, names: dict[str, str], chat_of) -> list[tuple[int, str]]:
    """What the gateway must have sent for these events: (chat, text), rendered here on our own."""
    narrator, out = Narrator(), []
    for envelope in log:
        e = envelope.event
        if e.type in QUIET:
            continue
        if e.type == "choices_offered" and {c.kind.value for c in e.choices} <= {"propose_team", "cast_vote"}:
            continue  # chosen with the group's buttons
        readers = [None] if envelope.audience.kind.value == "public" else list(envelope.audience.players)
        for reader in readers:
            html = narrator.render(envelope, Recipient(reader, ("en",)), "telegram", Context(names)).html
            out.append((chat_of(reader), plain(html)))
    return out


async def play(fake, group, users, until_over, act_hook) -> None:
    """The players press what they are shown (the leader picks the first seats; all approve)."""
    by_name = {u.first_name: u for u in users}
    acted: set = set()
    deadline = time.monotonic() + 120
    while not until_over():
        assert time.monotonic() < deadline, "the game did not end; the group's last messages:\n" + "\n".join(
            repr(m) for m in fake.messages(group)[-6:]) + "\n" + "\n".join(
            repr(m) for u in users for m in fake.messages(u.private_chat)[-2:])
        await act_hook()
        pickers = [m for m in fake.messages(group) if m.callback_data and m.callback_data[0].startswith("p:")]
        for message in fake.messages(group):
            data = message.callback_data
            # a picker is pressed again whenever it is redrawn: two presses on the same seat (one on a
            # copy sent twice after a kill, one on the newest) toggle it back to what it showed before
            key = (group.id, message.message_id, len(message.history) if data and data[0].startswith("p:") else 0,
                   ",".join(data))
            if not data or key in acted:
                continue
            if data[0].startswith("p:") and message is not pickers[-1]:
                continue  # a picker sent twice (in flight at a kill): the leader uses the newest
            if data[0].startswith("p:"):
                leader = by_name[re.match(r"👑 (\w+):", message.text).group(1)]
                size = int(re.search(r"pick (\d+)", message.text).group(1))
                picked = int(re.search(r"(\d+) selected", message.text).group(1))
                await leader.press(message, data[picked] if picked < size else data[-1])
            elif data[0].startswith("v:"):
                for user in users:
                    await user.press(message, data[0])
            acted.add(key)
        for user in users:
            for message in fake.messages(user.private_chat):
                data = message.callback_data
                key = (user.id, message.message_id, ",".join(data))
                if data and key not in acted:
                    await user.press(message, data[0])
                    acted.add(key)
        await asyncio.sleep(0.05)


async def test_sigkills_of_the_telegram_gateway_lose_no_message_of_a_whole_game(tmp_path, amqp_url, rabbit_prefix):
    await require_rabbitmq(amqp_url)
    fake = await FakeTelegram().start()
    engine_bus = RabbitBus(amqp_url, prefix=rabbit_prefix)
    await engine_bus.start()
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}")
    engine = EngineService(store, engine_bus, DeadlineScheduler(engine_bus), channels=channel_map())
    await engine.start()
    gateway = Gateway(tmp_path, fake, amqp_url, rabbit_prefix)
    await gateway.start()
    rng = random.Random(int(os.environ.get("KILL_SEED", "5")))
    kills = 0
    sent = lambda: sum(c.method != "getUpdates" for c in fake.sent_log)  # noqa: E731 - the game's progress
    next_kill = rng.randint(3, 15)  # kills fall at random points of the game's progress, not of the clock
    users = [fake.user(500 + i, name) for i, name in enumerate(NAMES)]
    group = fake.group(-900, "Camelot", members=users)
    try:
        for user in users:
            await user.start_private()
        await users[0].send(group, "/newgame")
        lobby = await fake.wait_for_message(group, "A new game", timeout=30)
        for user in users[1:]:
            await user.press(lobby, button="Join")
        await fake.wait_for(lambda: sum(m.text.count("joined the game") for m in fake.messages(group)) >= 5,
                            timeout=30)
        await users[0].send(group, "/startgame")

        next_kill += sent()

        async def maybe_kill() -> None:
            nonlocal kills, next_kill
            if kills < 5 and sent() >= next_kill:
                gateway.kill()
                kills += 1
                await asyncio.sleep(rng.uniform(0.0, 0.5))
                await gateway.start()
                next_kill = sent() + rng.randint(5, 40)

        ended = lambda: any(m.text.startswith("🏁") for m in fake.messages(group))  # noqa: E731
        await play(fake, group, users, ended, maybe_kill)
        assert kills >= 3, f"only {kills} kills happened before the game ended"
        game_id = lobby.callback_data[0].split(":", 1)[1]  # the Join button names the game
        log = await store.event_log(game_id)
        assert log and log[-1].event.type == "game_ended", [e.event.type for e in log[-3:]]
        names = {f"tg:{u.id}": u.first_name for u in users}
        chats = {f"tg:{u.id}": u.private_chat for u in users}
        wanted = expected_messages(log, names, lambda reader: group.id if reader is None else chats[reader].id)

        def missing() -> list[tuple[int, str]]:
            sent = {chat: [m.text for m in fake.messages(chat)] for chat in {c for c, _ in wanted}}
            return [(chat, text) for chat, text in wanted if not any(text in got for got in sent[chat])]

        try:
            await fake.wait_for(lambda: not missing(), timeout=60, what="every message of the game")
        except AssertionError:
            raise AssertionError(f"{len(missing())} of {len(wanted)} messages never arrived: {missing()[:5]}"
                                 ) from None
        expected = Counter(wanted)  # the same words may be due more than once ("Your vote is in: Approve.")
        duplicates = sum(max(0, sum(m.text.count(text) for m in fake.messages(chat)) - n)
                         for (chat, text), n in expected.items())
        print(f"\n{kills} SIGKILLs of the gateway; {len(wanted)} messages expected, 0 lost, {duplicates} duplicated")
        assert duplicates <= 10 * kills, "duplicates are bounded by what was in flight at each kill"
    except BaseException:
        print("gateway log:\n" + "\n".join(gateway.log.read_text().splitlines()[-60:]))
        raise
    finally:
        gateway.stop()
        await engine.stop()
        await engine_bus.close()
        await engine_bus.delete_everything("telegram")
        await store.close()
        await fake.stop()


#: Seeds of the killed-press runs: each picks the leader's seat pressed and how long after Telegram was
#: told of the press the kill falls (before or after the press's row is committed, its handling ends).
PRESS_SEEDS = [1, 2, 3, 4]


@pytest.fixture(params=["sqlite", "postgres"])
async def gateway_db(request, tmp_path):
    """The gateway's database: a SQLite file, or a scratch PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
        return
    url, name = await create_pg_database()
    yield url
    await drop_pg_database(name)


@pytest.mark.parametrize("seed", PRESS_SEEDS)
async def test_a_press_the_gateway_was_killed_handling_counts_once_after_the_restart(tmp_path, amqp_url, rabbit_prefix,
                                                                                    gateway_db, seed):
    """Killed in the middle of the leader's pick (its answer to the press held at the Bot API), after it
    had already asked Telegram for more updates (which confirms the press: Telegram forgets it): the
    pick is not lost, since it was kept in the gateway's database first, and the restarted gateway
    applies it once (twice would toggle the seat back)."""
    await require_rabbitmq(amqp_url)
    rng = random.Random(seed)
    fake = await FakeTelegram().start()
    engine_bus = RabbitBus(amqp_url, prefix=rabbit_prefix)
    await engine_bus.start()
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}")
    engine = EngineService(store, engine_bus, DeadlineScheduler(engine_bus), channels=channel_map())
    await engine.start()
    gateway = Gateway(tmp_path, fake, amqp_url, rabbit_prefix, database_url=gateway_db)
    await gateway.start()
    users = [fake.user(500 + i, name) for i, name in enumerate(NAMES)]
    group = fake.group(-900, "Camelot", members=users)
    try:
        for user in users:
            await user.start_private()
        await users[0].send(group, "/newgame")
        lobby = await fake.wait_for_message(group, "A new game", timeout=30)
        for user in users[1:]:
            await user.press(lobby, button="Join")
        await fake.wait_for(lambda: sum(m.text.count("joined the game") for m in fake.messages(group)) >= 5,
                            timeout=30)
        await users[0].send(group, "/startgame")
        picker = await fake.wait_for_message(group, "0 selected", timeout=30)
        await asyncio.sleep(0.5)  # the picker is marked sent: an edit finds it after the restart
        leader = next(u for u in users if picker.text.startswith(f"👑 {u.first_name}:"))

        fake.hold("answerCallbackQuery")
        await leader.press(picker, picker.callback_data[rng.randrange(len(picker.callback_data) - 1)])
        press = max(u["update_id"] for u in fake.pending_updates)
        await fake.wait_for(lambda: fake.calls("answerCallbackQuery"), timeout=30, what="the press being handled")
        await fake.wait_for(lambda: any((c.params.get("offset") or 0) > press for c in fake.calls("getUpdates")),
                            timeout=30, what="Telegram told the press arrived (a getUpdates past it)")
        await asyncio.sleep(rng.uniform(0.0, 0.3))
        gateway.kill()
        fake.release("answerCallbackQuery")  # the dead gateway's answer reaches Telegram after all
        await fake.wait_for(lambda: all(c.ok is not None for c in fake.calls("answerCallbackQuery")), timeout=10)
        assert "0 selected" in picker.text, "the pick was drawn before the kill: nothing left to lose"
        assert not [u for u in fake.pending_updates if u["update_id"] <= press], "Telegram forgot the press"

        await gateway.start()
        await fake.wait_for(lambda: "1 selected" in picker.text, timeout=30, what="the pick, applied after the restart")
        await users[0].send(group, "/status")  # a later update, handled after the one from before the kill
        await fake.wait_for_message(group, "📋", timeout=30)
        assert "1 selected" in picker.text, f"the pick was applied twice (toggled back): {picker.text!r}"
    except BaseException:
        print("gateway log:\n" + "\n".join(gateway.log.read_text().splitlines()[-60:]))
        raise
    finally:
        gateway.stop()
        await engine.stop()
        await engine_bus.close()
        await engine_bus.delete_everything("telegram")
        await store.close()
        await fake.stop()
