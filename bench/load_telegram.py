"""The Telegram side of bench/load_bench.py, run in a process of its own: the fake Bot API
(tests/fakes/telegram_api.py, flood control off: it is never switched on) and the scripted Telegram
players of every game, who act on what the bot shows them the moment the fake stores it.

A table: five users (or fewer, with mail players invited from the group for a mixed game) in a
basic group. Each user opens a private chat with the bot (/start); once the bot has answered all of
them, the host sends /newgame; the others press Join; the host /invites the table's mail players,
and sends /startgame once the group has been told that everyone joined. Then the leader picks the
first seats in the picker and confirms, everyone presses approve, and every private keyboard gets
its first button pressed (a success card, the first target). A table is done when a keyboard of
phase ``phases`` or later appears (then nobody presses it), or, with ``phases`` 0, when the group is
told the game ended.

What is measured here, on this process's monotonic clock: each action (a command sent or a button
pressed) and the arrival of every message the bot sends or edits, per chat; an action's latency is
the time to the first message arriving after it in the actor's private chat or their game's group.
"""

from __future__ import annotations

import asyncio
import bisect
import os
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from tests.fakes.telegram_api import FakeTelegram, FakeUser, SentMessage
from load_services import answer  # bench/ is on the path: load_bench.py's own directory

GROUP_BASE = 10**6  # a table's group is chat -(GROUP_BASE + index)
USER_BASE = 10**7  # seat j of table i is user USER_BASE + 10 * i + j
BASELINE_CHAT = 999  # a user the orchestrator's baseline sends to
NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve"]
JOINED = "joined the game"
TRACE = os.environ.get("LOAD_TRACE") == "1"  # print every press and message (for one table)


class LoadTelegram(FakeTelegram):
    """The fake Bot API, telling ``world`` of every message the bot sends or edits, as it is stored."""

    world: "TelegramWorld"

    def _store(self, chat, sender, *args, **kwargs) -> SentMessage:
        message = super()._store(chat, sender, *args, **kwargs)
        if sender is None:
            self.world.on_bot_message(message)
        return message

    def _apply_edit(self, message, *args, **kwargs):
        result = super()._apply_edit(message, *args, **kwargs)
        self.world.on_bot_message(message)
        return result

    async def _api_answerCallbackQuery(self, params):
        result = await super()._api_answerCallbackQuery(params)
        self.world.answered(str(params.get("callback_query_id")), bool(params.get("show_alert")))
        return result


@dataclass
class Table:
    index: int
    group: object  # FakeChat
    users: list[FakeUser]
    mail: list[str]  # addresses of the table's mail players, invited by the host
    game: str | None = None
    welcomed: set = field(default_factory=set)
    stage: str = "private"  # private -> lobby -> started -> done
    acted: set = field(default_factory=set)
    done_at: float | None = None

    @property
    def host(self) -> FakeUser:
        return self.users[0]


def phase_of(data: str) -> int | None:
    """The phase id in a button's callback data (``v:GAME:PHASE:...``; None for Join)."""
    parts = data.split(":")
    return int(parts[2]) if len(parts) > 2 and parts[2].lstrip("-").isdigit() else None


class TelegramWorld:
    def __init__(self, fake: LoadTelegram, plan: list[tuple[int, int, list[str]]], phases: int,
                 preset: str) -> None:
        """plan: (index, Telegram seats, mail addresses) of each table with Telegram players."""
        self.fake, self.phases, self.preset = fake, phases, preset
        fake.world = self
        self.tables: dict[int, Table] = {}
        self.table_of_user: dict[int, Table] = {}
        for index, seats, mail in plan:
            users = [fake.user(USER_BASE + 10 * index + j, NAMES[j]) for j in range(seats)]
            group = fake.group(-(GROUP_BASE + index), f"Table {index}", members=users)
            table = self.tables[index] = Table(index, group, users, mail)
            for user in users:
                self.table_of_user[user.id] = table
        self.by_name = {(t.index, u.first_name): u for t in self.tables.values() for u in t.users}
        fake.user(BASELINE_CHAT, "Baseline").started = True
        self.arrivals: dict[int, list[float]] = defaultdict(list)  # chat -> when each bot message arrived
        self.actions: list[tuple[float, int, int, str]] = []  # (when, private chat, group, kind)
        self.pressed_at: dict[str, float] = {}  # callback query id -> when pressed
        self.answer_latency: list[float] = []
        self.alerts = 0
        self.failures: list[str] = []  # the players' own errors
        self.messages = Counter()  # sends, edits
        self.calls = Counter()  # (method, ok or error description) of every answered API call
        self.last_arrival = 0.0
        self._tasks: set[asyncio.Task] = set()

    # -- running the tables ---------------------------------------------------------------------

    async def start(self, t0: float, ramp: float) -> None:
        """Each table opens at t0 + its share of ``ramp`` (CLOCK_MONOTONIC, shared by the processes).
        What was counted before (the orchestrator's baseline) is forgotten."""
        self.tally_calls()
        self.calls.clear()
        self.messages.clear()
        for table in sorted(self.tables.values(), key=lambda t: t.index):
            delay = t0 + ramp * table.index / self.total - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            for user in table.users:
                self.spawn(self.send(table, user, None, "/start", "start"))

    total = 1  # tables in the whole run, both channels' (set by the process entry): spreads the ramp

    def spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def send(self, table: Table, user: FakeUser, chat, text: str, kind: str) -> None:
        try:
            self.actions.append((time.monotonic(), user.id, table.group.id, kind))
            await user.send(chat, text)
        except Exception as error:  # noqa: BLE001 - counted and reported; the run goes on
            self.failures.append(f"{user.first_name} of table {table.index} sending {text!r}: {error!r}")

    async def press(self, table: Table, user: FakeUser, message: SentMessage, data: str, kind: str) -> None:
        try:
            now = time.monotonic()
            self.actions.append((now, user.id, table.group.id, kind))
            if TRACE:
                print(f"{now:.3f} -> {user.id} presses {data}", flush=True)
            query = await user.press(message, data)
            self.pressed_at[query["id"]] = now
        except Exception as error:  # noqa: BLE001 - counted and reported
            self.failures.append(f"{user.first_name} of table {table.index} pressing {data}: {error!r}")

    def answered(self, query_id: str, alert: bool) -> None:
        pressed = self.pressed_at.pop(query_id, None)
        if pressed is not None:
            self.answer_latency.append(time.monotonic() - pressed)
        self.alerts += alert

    def done(self, table: Table) -> None:
        if table.done_at is None:
            table.done_at = time.monotonic()
            table.stage = "done"

    # -- what the bot shows ---------------------------------------------------------------------

    def on_bot_message(self, message: SentMessage) -> None:
        now = self.last_arrival = time.monotonic()
        if TRACE:
            print(f"{now:.3f} <- {message.chat.id} {message.text[:60]!r} {message.callback_data[:1]}", flush=True)
        self.arrivals[message.chat.id].append(now)
        self.messages["edits" if message.edit_date is not None else "sends"] += 1
        if message.chat.type == "private":
            table = self.table_of_user.get(message.chat.id)
            if table is not None:
                self.in_private(table, self.fake.user(message.chat.id, ""), message)
        else:
            table = self.tables.get(-message.chat.id - GROUP_BASE)
            if table is not None:
                self.in_group(table, message)

    def reached(self, table: Table, data: list[str]) -> bool:
        """Whether these buttons belong to the phase the run stops at (or later): the table is done."""
        phases = [p for p in map(phase_of, data) if p is not None]
        if self.phases and phases and max(phases) >= self.phases:
            self.done(table)
        return table.stage == "done"

    def in_private(self, table: Table, user: FakeUser, message: SentMessage) -> None:
        if table.stage == "private":
            table.welcomed.add(user.id)
            if len(table.welcomed) == len(table.users):
                table.stage = "lobby"
                command = "/newgame" + ("" if self.preset == "classic" else f" {self.preset}")
                self.spawn(self.send(table, table.host, table.group, command, "newgame"))
            return
        data = message.callback_data
        if not data or table.game is None or self.reached(table, data):
            return
        key = (user.id, message.message_id, phase_of(data[0]))
        if key not in table.acted:
            table.acted.add(key)
            kind = {"c": "card", "t": "target"}.get(data[0][0], data[0][0])
            self.spawn(self.press(table, user, message, data[0], kind))

    def in_group(self, table: Table, message: SentMessage) -> None:
        text, data = message.text, message.callback_data
        if text.startswith("🏁") or "\n🏁" in text:
            if not self.phases:
                self.done(table)
            return
        if table.stage == "done" or (data and self.reached(table, data)):
            return
        if data and data[0].startswith("j:") and table.game is None:
            table.game = data[0].split(":", 1)[1]
            for user in table.users[1:]:
                self.spawn(self.press(table, user, message, data[0], "join"))
            if table.mail:
                self.spawn(self.send(table, table.host, table.group, "/invite " + " ".join(table.mail), "invite"))
        if table.stage == "lobby" and JOINED in text:
            joined = sum(m.text.count(JOINED) for m in self.fake.messages(table.group))
            if joined >= len(table.users) + len(table.mail):  # the host's own join is shown too
                table.stage = "started"
                self.spawn(self.send(table, table.host, table.group, "/startgame", "startgame"))
        if not data:
            return
        if data[0].startswith("p:"):  # the leader's picker: each edit shows the picks so far
            found = re.match(r"👑 (\w+):", text)
            leader = self.by_name.get((table.index, found.group(1))) if found else None
            key = ("p", message.message_id, text)
            if leader is None or key in table.acted:
                return  # a mail player leads: they pick by mail
            table.acted.add(key)
            size = int(re.search(r"pick (\d+)", text).group(1))
            picked = int(re.search(r"(\d+) selected", text).group(1))
            seats = [b for b in message.buttons if not b["callback_data"].endswith(":-1")]
            free = [b["callback_data"] for b in seats if not b["text"].startswith("✅")]
            if picked < size:
                self.spawn(self.press(table, leader, message, free[0], "pick"))
            else:
                self.spawn(self.press(table, leader, message, data[-1], "confirm"))
        elif data[0].startswith("v:"):
            for user in table.users:
                key = ("v", user.id, phase_of(data[0]))
                if key not in table.acted:
                    table.acted.add(key)
                    self.spawn(self.press(table, user, message, data[0], "vote"))
        elif data[0].startswith("t:"):  # the leader hands Excalibur (only with that option)
            found = re.match(r"🗡 (\w+):", text)
            holder = self.by_name.get((table.index, found.group(1))) if found else None
            key = ("t", message.message_id)
            if holder is not None and key not in table.acted:
                table.acted.add(key)
                self.spawn(self.press(table, holder, message, data[0], "target"))

    # -- what is reported -----------------------------------------------------------------------

    def tally_calls(self) -> None:
        """Count the answered API calls and drop them from the fake's log (it would hold every call of
        the run: hundreds of MB at 1,000 games); the same for its log of updates."""
        log = self.fake.sent_log
        answered = [c for c in log if c.ok is not None]
        log[:] = [c for c in log if c.ok is None]
        for call in answered:
            self.calls[(call.method, "ok" if call.ok else f"{call.error_code} {call.description}")] += 1
        self.fake.updates_log.clear()
        self.fake.callback_answers.clear()

    def progress(self) -> dict:
        return {"done": [t.index for t in self.tables.values() if t.done_at is not None],
                "last_arrival": self.last_arrival, "messages": sum(self.messages.values()),
                "failures": len(self.failures)}

    def report(self) -> dict:
        self.tally_calls()
        latency: dict[str, list[float]] = defaultdict(list)
        for when, private, group, kind in self.actions:
            firsts = []
            for chat in (private, group):
                times = self.arrivals.get(chat, [])
                i = bisect.bisect_right(times, when)
                if i < len(times):
                    firsts.append(times[i])
            if firsts:
                latency[kind].append(min(firsts) - when)
            else:
                latency[kind].append(float("nan"))
        failed = {f"{method}: {outcome}": n for (method, outcome), n in self.calls.items() if outcome != "ok"}
        return {"latency": dict(latency), "answer_latency": self.answer_latency, "alerts": self.alerts,
                "messages": dict(self.messages), "calls": {m: n for (m, o), n in self.calls.items() if o == "ok"},
                "failed_calls": failed, "failures": self.failures[:20], "failure_count": len(self.failures),
                "actions": len(self.actions), "done": len([t for t in self.tables.values() if t.done_at]),
                "tables": len(self.tables), "not_done": [
                    (t.index, t.stage, t.game) for t in self.tables.values() if t.done_at is None][:10]}


def telegram_world_process(control, plan, phases: int, preset: str, total: int) -> None:
    import uvloop

    uvloop.run(_serve(control, plan, phases, preset, total))


async def _serve(control, plan, phases: int, preset: str, total: int) -> None:
    fake = await LoadTelegram().start()
    world = TelegramWorld(fake, plan, phases, preset)
    world.total = total
    control.send({"port": fake.port, "token": fake.token, "base_url": fake.base_url})

    async def tally() -> None:
        while True:
            await asyncio.sleep(1.0)
            world.tally_calls()
    tallying = asyncio.create_task(tally())
    await answer(control, world)
    tallying.cancel()
    await fake.stop()
    control.send(True)
