"""``avalon demo``: a whole game with scripted players, narrated as a group and its players read it.

For a newcomer who wants to see the narrator before making a bot token. Everything runs in
this process and nothing is kept: the real engine service (store, deadlines, batches) on the
in-process bus with a throw-away SQLite database in the system's temporary directory (never
``DATABASE_URL``, never the current directory). The demo stands in for the Telegram gateway:
its players' ids are Telegram-shaped (``tg:1``...), so the engine routes their events as for
a real group; the scripted players answer every ``choices_offered`` at once with a command on
the bus, picked with a generator seeded by ``--seed``; and the messages are the Telegram
templates' plain text, shown as the gateway shows them (no message per vote or card played,
the team and vote buttons in the group rather than in private).

The same seed prints the same text: the game's seed is drawn from it rather than by the
engine, and times are shown on a demo clock (a game night from 20:00 UTC, a minute per
message). No deadline falls during a demo (the shortest timer is 30 s, a demo takes a second
or two); should the game ever wait for nobody, the open deadline is brought forward to now
instead of being waited for.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING
from unittest import mock

from shared.game import Options, Preset, cast_for, check_options
from shared.game.errors import Rejection
from shared.game.model import Card, CommandKind

if TYPE_CHECKING:  # the engine, the bus and the narration are loaded when a demo runs, not with every command
    from services.engine.deadlines import DeadlineScheduler
    from shared.bus import InProcessBus
    from shared.protocol import ChoicesOffered, EventEnvelope

K = CommandKind
GAME_ID = "demo"
#: The demo clock: a game night, one minute per message.
CLOCK = datetime(2026, 1, 9, 20, 0, tzinfo=timezone.utc)
#: However long a demo game may take before it is given up (a guard: one takes a second or two).
WATCHDOG_SECONDS = 60.0
#: Events the Telegram gateway shows by editing a message in place (a tally) or not at all
#: (``services/telegram_gateway/events.py``; not imported: aiogram takes seconds to load).
QUIET = frozenset({"player_voted", "player_played_card"})
#: Twelve names (the most seats, in the forum preset) for each language of the narration.
NAMES = {
    "en": "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Oscar",
    "fa": "آرش بهار پریسا تینا جواد داریوش رضا زهرا سارا شیرین فرهاد کاوه",
    "ru": "Алиса Борис Вера Глеб Дарья Егор Жанна Захар Ирина Кирилл Лена Миша",
    "vi": "An Bảo Châu Dũng Giang Hà Khoa Linh Minh Nga Phúc Quân",
    "nl": "Anouk Bram Daan Eva Femke Joris Lotte Maarten Noor Pieter Sanne Thijs",
    "fr": "Amélie Bastien Camille Damien Élodie Fabien Gaëlle Hugo Inès Julien Léa Mathis",
}


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="watch a whole game with scripted players, narrated (no token, no network)")
    p.add_argument("--players", type=int, default=7, help="number of players (5-10; 5-12 in the forum preset)")
    p.add_argument("--lang", default="en", choices=tuple(NAMES), help="the narration's language (default en)")
    p.add_argument("--preset", default="classic", choices=[p.value for p in Preset], help="default classic")
    p.add_argument("--seed", type=int, default=None, help="repeat a demo (default: a new one, printed)")
    p.set_defaults(run=run)


@dataclass(frozen=True)
class Message:
    """One message as its reader received it: ``reader`` None is the group."""

    reader: str | None
    kind: str
    text: str


@dataclass
class Demo:
    """A demo game's transcript, in the order the messages were sent."""

    names: dict[str, str]
    messages: list[Message] = field(default_factory=list)

    def label(self, message: Message) -> str:
        return "[group]" if message.reader is None else f"[{self.names[message.reader]}, private]"

    def text(self) -> str:
        return "\n\n".join(f"{self.label(m)}\n{m.text}" for m in self.messages) + "\n"


def options_for(preset: str, players: int) -> Options | str:
    """The preset's options, or why ``players`` seats do not fit them."""
    options = Options.preset_defaults(preset)
    problem = check_options(options)
    if problem is None:
        cast = cast_for(options, players)
        problem = cast if isinstance(cast, Rejection) else None
    return options if problem is None else problem.message


def run(args) -> int:
    options = options_for(args.preset, args.players)
    if isinstance(options, str):
        print(f"avalon demo: error: {options}", file=sys.stderr)
        return 2
    seed = secrets.randbelow(1_000_000) if args.seed is None else args.seed
    print(f"Avalon demo: {args.players} players, {args.preset} preset, language {args.lang}, seed {seed}")
    print(f"(the same game again: avalon demo --players {args.players} --lang {args.lang} "
          f"--preset {args.preset} --seed {seed})\n")
    try:
        demo = asyncio.run(play(args.players, options, args.lang, seed))
    except TimeoutError:
        print(f"avalon demo: error: the game did not end within {WATCHDOG_SECONDS:.0f} s", file=sys.stderr)
        return 1
    sys.stdout.write(demo.text())
    return 0


async def play(players: int, options: Options, lang: str, seed: int) -> Demo:
    """Play one game through the engine service; returns what everyone received."""
    from services.app import channel_map
    from services.engine import moves
    from services.engine.deadlines import DeadlineScheduler
    from services.engine.service import EngineService
    from services.engine.store import Store
    from shared.bus import InProcessBus

    rng = random.Random(seed)
    game_seed = rng.getrandbits(63)
    drawn = SimpleNamespace(randbits=lambda bits: game_seed % (1 << bits))  # instead of the engine's own draw
    with tempfile.TemporaryDirectory(prefix="avalon-demo-") as scratch, \
            mock.patch.object(moves, "secrets", drawn):
        store = Store(f"sqlite+aiosqlite:///{Path(scratch) / 'demo.db'}")
        bus = InProcessBus()
        scheduler = DeadlineScheduler(bus)
        table = Table(bus, scheduler, players, lang, rng)
        engine = EngineService(store, bus, scheduler, channels=channel_map(), clock=table.clock)
        try:
            await bus.start()
            await bus.subscribe_events("demo", "telegram.#", table.on_event)
            await engine.start()
            await table.open(options)
            await asyncio.wait_for(table.until_over(), WATCHDOG_SECONDS)
        finally:
            await engine.flush_published()  # waits out a flush under way: stop() then cancels no query
            await engine.stop()
            await bus.close()
            await store.close()
    return table.demo


class Table:
    """The scripted players and the transcript: what a gateway would send and show."""

    def __init__(self, bus: InProcessBus, scheduler: DeadlineScheduler, players: int, lang: str,
                 rng: random.Random) -> None:
        from shared.narration.render import Narrator, glossary

        self.bus, self.scheduler, self.lang, self.rng = bus, scheduler, lang, rng
        self.players = [f"tg:{i + 1}" for i in range(players)]
        self.demo = Demo(dict(zip(self.players, NAMES[lang].split())))
        self.narrator = Narrator()
        self.words = glossary(lang)
        self.outstanding: set[str] = set()  # commands sent whose first event has not come back yet
        self.phase: tuple[int, int] | None = None  # the open phase: (phase id, timeout seconds)
        self.hurried: set[int] = set()
        self.skew = timedelta(0)  # how far the engine's clock runs ahead of the wall clock
        self.over = asyncio.Event()
        self.settled = asyncio.Event()  # the game is over, or every command sent has been answered
        self._sent = 0

    def clock(self) -> datetime:
        """The engine's now: the wall clock, moved on past each deadline the demo does not wait for."""
        return datetime.now(timezone.utc) + self.skew

    async def open(self, options: Options) -> None:
        """The host opens the lobby, everyone joins, the host deals."""
        host = self.players[0]
        await self.send(host, {"type": "create_game", "options": options})
        for player in self.players[1:]:
            await self.send(player, {"type": "join"})
        await self.send(host, {"type": "start_game"})

    async def send(self, actor: str, body: dict, phase_id: int | None = None) -> None:
        from shared.protocol import CommandEnvelope

        self._sent += 1
        envelope = CommandEnvelope(message_id=f"demo:{self._sent}", game_id=GAME_ID, actor=actor,
                                   channel="telegram", phase_id=phase_id, command=body)
        self.outstanding.add(envelope.message_id)
        await self.bus.send_command(envelope)

    async def until_over(self) -> None:
        """Wait for the end; a game waiting for nobody has its deadline brought forward to now."""
        while True:
            await self.settled.wait()
            self.settled.clear()
            if self.over.is_set():
                return
            await self.bus.idle()  # what is still on its way first
            if self.outstanding or self.over.is_set() or self.phase is None:
                continue
            phase_id, timeout = self.phase
            if phase_id not in self.hurried:  # (never in a demo so far: every offer is answered)
                self.hurried.add(phase_id)
                self.skew += timedelta(seconds=timeout)  # the engine's clock jumps past the deadline
                self.outstanding.add(f"timeout:{GAME_ID}:{phase_id}")  # the scheduler's command id
                self.scheduler.arm(GAME_ID, phase_id, datetime.now(timezone.utc), timeout)

    # -- what comes back --------------------------------------------------------------------

    async def on_event(self, envelope: EventEnvelope) -> None:
        self.outstanding.discard(envelope.caused_by or "")
        e = envelope.event
        if e.type == "phase_opened":
            self.phase = (e.phase_id, e.timeout_seconds)
        if e.type == "choices_offered":
            await self.act(e)
        self.show(envelope)
        if e.type in ("game_ended", "game_cancelled"):
            self.over.set()
        if self.over.is_set() or not self.outstanding:
            self.settled.set()

    def show(self, envelope: EventEnvelope) -> None:
        from shared.narration.render import Context, Recipient

        e = envelope.event
        if e.type in QUIET:
            return  # the gateway edits a tally in place, or says nothing
        if e.type == "choices_offered" and {c.kind for c in e.choices} <= {K.PROPOSE_TEAM, K.CAST_VOTE}:
            return  # the team and the vote are chosen with the group's buttons
        at = CLOCK + timedelta(minutes=len(self.demo.messages))
        shown = envelope.model_copy(update={
            "occurred_at": at,
            "deadline_at": at + timedelta(seconds=e.timeout_seconds) if envelope.deadline_at else None})
        readers = [None] if envelope.audience.kind.value == "public" else list(envelope.audience.players)
        for reader in readers:
            rendered = self.narrator.render(shown, Recipient(reader, (self.lang,)), "telegram",
                                            Context(self.demo.names))
            self.demo.messages.append(Message(reader, e.type, rendered.text))

    # -- the scripted players ------------------------------------------------------------

    async def act(self, offer: ChoicesOffered) -> None:
        """Answer an offer at once with one of the commands offered (a few dice, seeded)."""
        rng, me, pid = self.rng, offer.player, offer.phase_id
        choices = {c.kind: c for c in offer.choices}
        if c := choices.get(K.PROPOSE_TEAM):
            team = rng.sample(list(c.targets), c.count)
            sword = rng.choice([p for p in team if p != me]) if c.excalibur else None
            await self.send(me, {"type": "propose_team", "team": team, "excalibur": sword}, pid)
        elif K.CAST_VOTE in choices:
            await self.send(me, {"type": "cast_vote", "approve": rng.random() < 0.7}, pid)
        elif c := choices.get(K.PLAY_CARD):
            fail = Card.FAIL in c.cards and (Card.SUCCESS not in c.cards or rng.random() < 0.5)
            await self.send(me, {"type": "play_card", "card": "fail" if fail else "success"}, pid)
        elif c := choices.get(K.USE_EXCALIBUR):
            target = rng.choice(c.targets) if c.targets and rng.random() < 0.5 else None
            await self.send(me, {"type": "use_excalibur", "target": target}, pid)
        elif c := choices.get(K.USE_LADY):
            await self.send(me, {"type": "use_lady", "target": rng.choice(c.targets)}, pid)
        elif c := choices.get(K.ASSASSINATE) or choices.get(K.ACCUSE):
            target = rng.choice(c.targets)
            if K.CONFER in choices:  # a word in the evil council first
                merlin = self.words["roles"]["merlin"]
                await self.send(me, {"type": "confer", "text": f"{merlin}: {self.demo.names[target]}?"}, pid)
            await self.send(me, {"type": c.kind.value, "target": target}, pid)
        elif K.SPEAK_LAST_WORD in choices:
            await self.send(me, {"type": "speak_last_word", "text": f"{self.words['roles']['merlin']}?"}, pid)
