"""Telegram games for the fault suite: groups of scripted players on the fake Bot API who press
the buttons they are shown, as people would, while the gateway (and the engine) behind it are
killed and restarted.

A press is a callback query; the gateway answers it (``✅`` once the command is on the bus, an
alert when it refuses it, nothing for the leader's picks). A player presses a button again only
when their press was lost (never answered, no longer waiting in Telegram's queue, and the gateway
was killed since, or long ago) or refused with an alert (a gateway just restarted may not have
caught up). A press answered as taken is never repeated: it is a move, and a move the engine loses
stays lost (its game stalls) instead of being papered over by a retry.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field

from avalon.services.telegram_gateway import ids
from tests.e2e.conftest import NAMES
from tests.e2e.test_telegram_flood import ended, open_lobby, start

#: Seconds after which a press that was fetched but never answered is taken as lost anyway.
LOST_AFTER = 10.0
#: Seconds the leader waits after an answered pick for the picker to be redrawn, before looking again.
REDRAW_WAIT = 3.0
#: Presses of one button refused with an alert before the player gives up on it (an old button).
ALERT_TRIES = 4


@dataclass
class TgGame:
    index: int
    group: object  # FakeChat
    users: list  # FakeUser, the host first
    settings: list[str]  # the host's /settings presses (SetCb keys), e.g. "speed" for the fast timers
    sleeper: object | None = None  # lets the game's first vote run to its deadline
    id: str = ""
    playing: bool = False
    over: bool = False
    ended_at: float = 0.0
    slept_phase: int | None = None
    first_vote: int | None = None
    teams: dict[int, list[int]] = field(default_factory=dict)  # phase -> the seats the leader wants

    def player(self, user) -> str:
        return ids.player_id(user.id)


@dataclass
class Press:
    user: object
    key: tuple  # what the player means by it (one vote, one card, the leader's action in a phase)
    data: str
    query_id: str
    at: float
    kills: int  # gateway kills before it was pressed
    answer: object | None = None  # the CallbackAnswer
    answered_at: float = 0.0
    opens_sword: bool = False  # a confirm that opens the Excalibur choice (no command yet)

    @property
    def move(self) -> bool:
        """Answered as taken: "✅", or the leader's confirm / Excalibur answered without an alert."""
        a = self.answer
        if a is None or a.show_alert:
            return False
        if self.data.startswith("p:"):
            return self.data.endswith(":-1") and not self.opens_sword
        return a.text == "✅" or self.data.startswith("t:") and ":x:" in self.data


class TelegramTable:
    """``games`` tables of 5-6 players, each group its own; the first ``deadline_games`` have the
    fast timers (a 60 s vote) and a sleeper who lets the first vote run out."""

    def __init__(self, fake, gateway, *, games: int, deadline_games: int, seed: int) -> None:
        self.fake, self.gateway = fake, gateway
        self.rng = random.Random(seed)
        self.games: list[TgGame] = []
        for g in range(games):
            size = 5 + g % 2
            users = [fake.user(30_000 + 10 * g + k, NAMES[k]) for k in range(size)]
            group = fake.group(-(800_000 + g), f"Table {g}", members=users)
            fast = ["speed", "speed"] if g < deadline_games else []  # the timer sets: normal, forum, fast
            settings = fast + (["lady"] if g % 3 == 1 else []) + (["excalibur"] if g % 4 == 2 else [])
            self.games.append(TgGame(g, group, users, settings, users[-1] if g < deadline_games else None))
        self.presses: list[Press] = []
        self.latest: dict[tuple, Press] = {}  # what each key was last pressed with
        self.tries: Counter[tuple] = Counter()  # presses of each key
        self._answers: dict[str, object] = {}
        self._seen_answers = 0
        self._changed: dict[tuple[int, int], tuple[str, float]] = {}  # message -> (look, when it changed)
        self.bursts = 0
        #: the gateway's getUpdates fail (502s) once the next burst has begun (at its second game's
        #: first press): the presses it fetched just before stay unconfirmed
        self.unconfirmed = False
        self._round: set[int] = set()  # the games that pressed in this round
        self.burst = asyncio.Event()  # set after each burst of presses across games

    # -- the lobbies ------------------------------------------------------------------------

    async def open(self, game: TgGame) -> None:
        """Lobby (everyone joins), the host's settings, the start; then the game is played."""
        await open_lobby(self.fake, game.group, game.users)
        lobby = await self.fake.wait_for_message(game.group, "A new game", timeout=30)
        game.id = lobby.callback_data[0].split(":", 1)[1]
        if game.settings:
            host = game.users[0]
            await host.send(game.group, "/settings")
            panel = await self.fake.wait_for_message(
                game.group, where=lambda m: any(d.startswith("s:") for d in m.callback_data), timeout=30)
            for key in game.settings:
                edits = len(panel.history)
                await self._press(game, host, panel, f"s:{game.id}:{key}", ("settings", game.id, key))
                await self.fake.wait_for(lambda: len(panel.history) > edits, timeout=30, what=f"setting {key}")
        await start(self.fake, game.group, game.users)
        game.playing = True

    # -- pressing ---------------------------------------------------------------------------

    async def _press(self, game: TgGame, user, message, data: str, key: tuple) -> Press:
        self._round.add(game.index)
        if self.unconfirmed and len(self._round) >= 2:  # a burst: from here on, its presses stay unconfirmed
            self.fake.fail_next("getUpdates", 502, times=2)  # (twice: aiogram waits a second after each)
            self.unconfirmed = False
        query = await user.press(message, data)
        press = Press(user, key, data, query["id"], time.monotonic(), self.gateway.kills)
        self.presses.append(press)
        self.latest[key] = press
        self.tries[key] += 1
        return press

    def _refresh(self) -> None:
        answers = self.fake.callback_answers
        for a in answers[self._seen_answers:]:
            self._answers[a.query_id] = a
        self._seen_answers = len(answers)
        now = time.monotonic()
        for press in self.presses:
            if press.answer is None and press.query_id in self._answers:
                press.answer, press.answered_at = self._answers[press.query_id], now

    def answered(self, queries: list[str]) -> bool:
        """Whether the gateway has answered each of these callback queries."""
        self._refresh()
        return all(q in self._answers for q in queries)

    def _lost(self, press: Press, pending: set[str]) -> bool:
        if press.answer is not None or press.query_id in pending:
            return False
        return self.gateway.kills > press.kills or time.monotonic() - press.at > LOST_AFTER

    def _may_press(self, key: tuple, pending: set[str]) -> bool:
        """Never pressed; the last press was lost; or it was refused with an alert a while ago (the
        gateway, just restarted, may not have caught up yet), a few times at most."""
        last = self.latest.get(key)
        if last is None or self._lost(last, pending):
            return True
        refused = last.answer is not None and last.answer.show_alert
        return refused and time.monotonic() - last.answered_at > REDRAW_WAIT and self.tries[key] < ALERT_TRIES

    def _look(self, message) -> float:
        """When this message last changed (text or buttons), as this table saw it."""
        look = message.text + "|".join(message.callback_data)
        ref = (message.chat.id, message.message_id)
        seen = self._changed.get(ref)
        if seen is None or seen[0] != look:
            self._changed[ref] = seen = (look, time.monotonic())
        return seen[1]

    # -- playing ----------------------------------------------------------------------------

    async def play(self, timeout: float) -> None:
        """Until every game has ended (or ``timeout``: AssertionError naming the stuck games)."""
        deadline = time.monotonic() + timeout
        while not all(g.over for g in self.games):
            if time.monotonic() > deadline:
                stuck = [g for g in self.games if not g.over]
                raise AssertionError(f"{len(stuck)} games did not end:\n" + "\n".join(self.story(g) for g in stuck[:4]))
            self._refresh()
            pending = {u["callback_query"]["id"] for u in self.fake.pending_updates if "callback_query" in u}
            pressed: set[int] = set()
            self._round = set()
            for game in self.games:
                if game.playing and not game.over:
                    if ended(self.fake, game.group):
                        game.over, game.ended_at = True, time.monotonic()
                        continue
                    if await self._act(game, pending):
                        pressed.add(game.index)
            if len(pressed) >= 2:
                self.bursts += 1
                self.burst.set()
                self.burst = asyncio.Event()
            await asyncio.sleep(0.1)

    async def _act(self, game: TgGame, pending: set[str]) -> bool:
        acted = await self._lead(game, pending)
        votes = [m for m in self.fake.messages(game.group) if m.callback_data and m.callback_data[0].startswith("v:")]
        if votes:
            vote = votes[-1]
            phase = int(vote.callback_data[0].split(":")[2])
            game.first_vote = game.first_vote if game.first_vote is not None else phase
            for user in game.users:
                if user is game.sleeper and phase == game.first_vote:
                    game.slept_phase = phase
                    continue  # asleep: this vote runs to its deadline
                key = ("vote", game.id, phase, user.id)
                if self._may_press(key, pending):
                    approve = self.rng.random() < 0.9
                    data = next(d for d in vote.callback_data if d.endswith(":1" if approve else ":0"))
                    await self._press(game, user, vote, data, key)
                    acted = True
        for user in game.users:
            for message in self.fake.messages(user.private_chat):
                data = [d for d in message.callback_data if game.id in d]
                if not data:
                    continue
                key = ("private", game.id, user.id, tuple(sorted(data)))
                if self._may_press(key, pending):
                    await self._press(game, user, message, self._choose(data), key)
                    acted = True
        return acted

    def _choose(self, data: list[str]) -> str:
        """A card (evil fails now and then), a target, or Excalibur sheathed now and then."""
        cards = [d for d in data if d.startswith("c:")]
        if cards:
            fails = [d for d in cards if d.endswith(":fail")]
            return fails[0] if fails and self.rng.random() < 0.35 else next(d for d in cards if d.endswith(":success"))
        return self.rng.choice(data)

    async def _lead(self, game: TgGame, pending: set[str]) -> bool:
        """The leader's picker (or the Excalibur choice it turns into), newest phase, freshest copy."""
        boards = [m for m in self.fake.messages(game.group)
                  if m.callback_data and (m.callback_data[0].startswith("p:") or ":x:" in m.callback_data[0])]
        if not boards:
            return False
        phase = max(int(m.callback_data[0].split(":")[2]) for m in boards)
        board = max((m for m in boards if int(m.callback_data[0].split(":")[2]) == phase), key=self._look)
        key = ("lead", game.id, phase)
        last = self.latest.get(key)
        if last is not None and not self._lost(last, pending):
            if last.answer is None or last.move:
                return False  # on its way, or taken: never pressed again
            if self._look(board) <= last.answered_at and time.monotonic() - last.answered_at < REDRAW_WAIT:
                return False  # a pick answered: wait for the picker to be redrawn
        by_name = {u.first_name: u for u in game.users}
        if ":x:" in board.callback_data[0]:
            leader = by_name[re.match(r"🗡 (\w+):", board.text).group(1)]
            await self._press(game, leader, board, self.rng.choice(board.callback_data), key)
            return True
        leader = by_name[re.match(r"👑 (\w+):", board.text).group(1)]
        size = int(re.search(r"pick (\d+)", board.text).group(1))
        seats = [b for b in board.buttons if not b["callback_data"].endswith(":-1")]
        want = game.teams.setdefault(phase, sorted(self.rng.sample(range(len(seats)), size)))
        picked = [i for i, b in enumerate(seats) if b["text"].startswith("✅")]
        refused = last is not None and last.answer is not None and last.answer.show_alert \
            and last.data.endswith(":-1") and self._look(board) <= last.answered_at
        if picked == want and not refused:
            press = await self._press(game, leader, board, board.callback_data[-1], key)
            press.opens_sword = "excalibur" in game.settings
        else:  # a seat to change; or, the team refused though it looks right (the gateway forgot a
            # pick at a kill, after it had drawn it): a pick shows the team as the gateway has it
            seat = next((i for i in range(len(seats)) if (i in want) != (i in picked)), want[0])
            await self._press(game, leader, board, seats[seat]["callback_data"], key)
        return True

    def story(self, game: TgGame) -> str:
        """A stuck game: its group's last messages and its last presses with their answers."""
        lines = [f"{game.id}:"] + [f"  group: {m.text[:100]!r} {m.callback_data[:2]}"
                                    for m in self.fake.messages(game.group)[-3:]]
        for p in [p for p in self.presses if game.id in p.data][-8:]:
            answer = "-" if p.answer is None else f"{p.answer.text!r}{' (alert)' if p.answer.show_alert else ''}"
            lines.append(f"  {p.user.first_name} pressed {p.data} at {p.at:.1f} (kills before: {p.kills}): {answer}")
        return "\n".join(lines)
