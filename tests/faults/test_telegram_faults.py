"""Twelve Telegram games at once (5-6 players each, a group each) played to their end by players
pressing the buttons they are shown, while the Telegram gateway (``avalon telegram``) is SIGKILLed
three times and the engine (``avalon engine``, on a fresh PostgreSQL database) twice, each started
again at once: three kills fall right after a burst of presses across the games (presses and
commands in flight), and the engine's second spans the deadlines of the games whose sleeper lets a
vote run out.

Afterwards, from the engine's own event log: every game ended; every press the gateway answered as
taken was applied exactly once (a press Telegram delivers again after a kill, as it does for
updates never confirmed, may be answered twice but is not applied twice); every message each chat
should have received (the group and each private chat) arrived at least once (duplicates counted);
no private text reached another chat; every timeout came after its deadline and not long after it.

Real parts: RabbitMQ, PostgreSQL (the engine's; the gateway keeps its memory and outbox in SQLite),
both services as processes of the real CLI; Telegram is the fake Bot API (tests/fakes/telegram_api.py)
in this process, which keeps unconfirmed updates as Telegram does. Neither service logs an error
the faults do not explain.
"""

from __future__ import annotations

import asyncio
import os
import random
import time

import pytest

from avalon.services.engine.store import Store
from avalon.shared.bus.rabbit import RabbitBus
from tests.fakes.telegram_api import FakeTelegram
from tests.faults.ledger import record
from tests.faults.telegram_accounting import Accounting, expected, missing
from tests.faults.telegram_table import TelegramTable
from tests.faults.world import ServiceProcess
from tests.integration.conftest import amqp_url, rabbit_prefix, require_rabbitmq  # noqa: F401
from tests.integration.engine_support import create_pg_database, drop_pg_database

pytestmark = pytest.mark.faults

GAMES = 12
DEADLINE_GAMES = 4  # the fast timers (a 60 s vote: the shortest the /settings buttons offer) and a sleeper
SEED = int(os.environ.get("FAULT_SEED", "13"))


class Faults:
    """The kills, at random moments (seeded) of the games' progress; engine outages are remembered."""

    def __init__(self, table: TelegramTable, engine: ServiceProcess, gateway: ServiceProcess, store: Store) -> None:
        self.table, self.engine, self.gateway, self.store = table, engine, gateway, store
        self.rng = random.Random(SEED)
        self.outages: list[tuple[float, float]] = []  # engine down: (killed, ready again), wall clock
        self.in_flight = 0  # kills that came right after a burst of presses
        self.started = time.monotonic()
        self.timeline: list[str] = []  # "gateway 25-31" (seconds since the start: killed, back)
        self.restart = 0.0  # how long the gateway's last restart took

    async def after_burst(self, within: float = 10, *, unconfirmed: bool = False) -> None:
        """Right after the next burst of presses across games (if one comes ``within`` seconds):
        once the gateway has fetched them, while it handles them. ``unconfirmed``: once the burst
        has begun, the gateway's next getUpdates fail (502s), so it has not confirmed the presses it
        fetched last when it dies, right after answering them: Telegram delivers them again."""
        fake, table = self.table.fake, self.table
        failed = len(fake.calls("getUpdates", ok=False))
        table.unconfirmed = unconfirmed
        try:
            await asyncio.wait_for(table.burst.wait(), within)
        except asyncio.TimeoutError:
            return
        if unconfirmed:
            await fake.wait_for(lambda: len(fake.calls("getUpdates", ok=False)) > failed, timeout=10)
            fetched = next(c.result for c in reversed(fake.calls("getUpdates", ok=True)) if c.result)
            held = {u["update_id"] for u in fake.pending_updates}
            queries = [u["callback_query"]["id"] for u in fetched if u["update_id"] in held and "callback_query" in u]
            try:  # before aiogram tries again (a second after the 502)
                await fake.wait_for(lambda: table.answered(queries), timeout=0.8)
            except AssertionError:
                pass  # some are still being handled: they are in flight
        else:
            await fake.wait_delivered(timeout=10)
            await asyncio.sleep(self.rng.uniform(0, 0.03))
        self.in_flight += 1

    async def kill_gateway(self, down: float = 0.0) -> None:
        killed = time.monotonic()
        self.gateway.kill()
        await asyncio.sleep(down)
        await self.gateway.start()
        self.restart = time.monotonic() - killed
        self.timeline.append(f"gateway {killed - self.started:.0f}-{time.monotonic() - self.started:.0f}")

    async def kill_engine(self, down: float) -> None:
        killed, at = time.time(), time.monotonic()
        self.engine.kill()
        await asyncio.sleep(down)
        await self.engine.start()
        self.outages.append((killed, time.time()))
        self.timeline.append(f"engine {at - self.started:.0f}-{time.monotonic() - self.started:.0f}")

    async def first_deadline(self) -> float:
        """When the first of the sleepers' votes is due (wall clock), once they are all open."""
        deadlines = []
        for game in self.table.games[:DEADLINE_GAMES]:
            while game.first_vote is None:
                await asyncio.sleep(0.2)
            log = await self.store.event_log(game.id)
            deadlines += [e.deadline_at.timestamp() for e in log
                          if e.event.type == "phase_opened" and e.event.phase_id == game.first_vote]
        return min(deadlines)

    async def run(self) -> None:
        """Two gateway kills and one engine kill while most games are on, each right after a burst of
        presses (the second gateway's presses delivered again to the next); a third gateway kill at
        a random moment; then the engine again as the sleepers'
        votes come due: the deadlines pass while it is down (starting takes seconds) and fire when it
        is back."""
        rng = self.rng
        await asyncio.sleep(rng.uniform(0.5, 2))
        await self.after_burst()
        await self.kill_gateway()
        await asyncio.sleep(rng.uniform(1, 3))
        await self.after_burst()
        await self.kill_engine(rng.uniform(0, 1))
        await asyncio.sleep(rng.uniform(1, 3))
        await self.after_burst(unconfirmed=True)
        await self.kill_gateway()
        due = await self.first_deadline()
        room = due - 1 - time.time() - 2 * self.restart  # a gateway kill fits in before the deadlines?
        if room > 0:
            await asyncio.sleep(rng.uniform(0, room))
            await self.kill_gateway(rng.uniform(0, 1))
        await asyncio.sleep(max(0.0, due - 1 - time.time()))
        await self.kill_engine(0)
        if room <= 0:  # the machine is slow today: the third gateway kill comes after the deadlines
            await self.after_burst()
            await self.kill_gateway()


def unexpected_errors(log: str) -> list[str]:
    """The gateway's ERROR lines, but for the faults' own: the 502s, and answering a press that
    Telegram delivered again ("query is too old", as Telegram says)."""
    lines = log.splitlines()
    return [line for line, after in zip(lines, lines[1:] + [""])
            if (" ERROR " in line or "exception was never retrieved" in line)
            and "Failed to fetch updates - TelegramServerError" not in line
            and not ("Cause exception while process update" in line and "query is too old" in after)]


async def test_telegram_gateway_and_engine_sigkills_lose_no_press_and_no_message(tmp_path, amqp_url,
                                                                                rabbit_prefix):
    await require_rabbitmq(amqp_url)
    db_url, db_name = await create_pg_database()
    fake = await FakeTelegram().start()
    common = {"AMQP_URL": amqp_url, "BUS_PREFIX": rabbit_prefix, "DATABASE_URL": db_url}
    engine = ServiceProcess("engine", common, tmp_path / "engine.log", "engine ready")
    gateway = ServiceProcess("telegram", {  # its own memory and outbox in SQLite (on PostgreSQL: twice as slow here)
        **common, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}", "TELEGRAM_BOT_TOKEN": fake.token,
        "TELEGRAM_API_URL": fake.base_url, "TELEGRAM_LIMITS": "0,100000,100000"}, tmp_path / "gateway.log",
        "telegram gateway ready")
    store = Store(db_url)
    table = TelegramTable(fake, gateway, games=GAMES, deadline_games=DEADLINE_GAMES, seed=SEED)
    faults = Faults(table, engine, gateway, store)
    started = faults.started
    chaos = playing = None
    try:
        await asyncio.gather(engine.start(), gateway.start())
        playing = asyncio.create_task(table.play(timeout=240))
        await asyncio.gather(*(table.open(game) for game in table.games[:DEADLINE_GAMES]))  # their clocks first
        await asyncio.gather(*(table.open(game) for game in table.games[DEADLINE_GAMES:]))
        opened = time.monotonic() - started
        chaos = asyncio.create_task(faults.run())
        await playing
        await asyncio.wait_for(chaos, 60)
        assert gateway.kills >= 3 and engine.kills >= 2, (gateway.kills, engine.kills)

        accounting = Accounting("telegram gateway + engine SIGKILL", gateway.kills + engine.kills, faults.outages)
        logs = {game.id: await store.event_log(game.id) for game in table.games}
        due = {game.id: expected(game, logs[game.id]) for game in table.games}
        try:  # the outbox may still be sending the last messages
            await fake.wait_for(lambda: not any(missing(g, due[g.id], fake) for g in table.games), timeout=60,
                                what="every message of every game")
        except AssertionError:
            pass  # counted as lost below
        for game in table.games:
            accounting.game(game, logs[game.id], [p for p in table.presses if game.id in p.data], fake)
        tally = accounting.tally
        record(tally)
        twice = sum("too old" in (c.description or "") for c in fake.calls("answerCallbackQuery", ok=False))
        print(f"\n{tally.suite}: {tally.line()}; down (s): {', '.join(faults.timeline)}; "
              f"{faults.in_flight} kills right after a burst of presses, "
              f"{sum(p.answer is None for p in table.presses)} presses never answered (pressed again), "
              f"{twice} answered twice (delivered again after a kill), "
              f"{time.monotonic() - started:.0f} s (games open after {opened:.0f} s, ended after "
              f"{sorted(round(g.ended_at - started) for g in table.games)} s)")
        assert not accounting.problems, "\n".join(accounting.problems[:20])
        assert (tally.moves_lost, tally.moves_doubled, tally.events_lost, tally.deadlines_missed, tally.leaks) \
            == (0, 0, 0, 0, 0), tally
        assert tally.deadlines >= DEADLINE_GAMES, tally  # every sleeper's vote ran out, across the kills
        assert not engine.errors(), "\n".join(engine.errors()[:20])
        assert not unexpected_errors(gateway.text()), "\n".join(unexpected_errors(gateway.text())[:20])
    except BaseException:
        print("gateway log:\n" + "\n".join(gateway.text().splitlines()[-40:]))
        print("engine log:\n" + "\n".join(engine.text().splitlines()[-20:]))
        raise
    finally:
        for task in (chaos, playing):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await gateway.stop()
        await engine.stop()
        await store.close()
        await fake.stop()
        await RabbitBus(amqp_url, prefix=rabbit_prefix).delete_everything("telegram")
        await drop_pg_database(db_name)
