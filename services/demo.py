"""``avalon demo``: a whole game with scripted players, narrated as a group and its players read it.

For a newcomer who wants to see the narrator before making a bot token. Everything runs in
this process and nothing is kept: the real engine service (store, deadlines, batches) on the
in-process bus with a throw-away SQLite database in the system's temporary directory (never
``DATABASE_URL``, never the current directory), and the console channel (``services/console``)
on the same delivery pipeline as Telegram and email: its scripted players (``demo:1``...) answer
every ``choices_offered`` at once with a command on the bus, picked with a generator seeded by
``--seed``; its messages are what the pipeline renders for a group and its players (as a Telegram
group shows them: no message per vote or card played, the team and the vote with the group's
buttons rather than in private), printed as plain text.

The same seed prints the same text: the game's seed is drawn from it rather than by the
engine, and times are shown on a demo clock (a game night from 20:00 UTC, a minute per
message). No deadline falls during a demo (the shortest timer is 30 s, a demo takes a second
or two); should the game ever wait for nobody, the open deadline is brought forward to now
instead of being waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING
from unittest import mock

from avalon.shared.game import Options, Preset, cast_for, check_options
from avalon.shared.game.errors import Rejection

if TYPE_CHECKING:  # the engine, the bus and the narration are loaded when a demo runs, not with every command
    from avalon.services.console.channel import Message

GAME_ID = "demo"
#: The demo clock: a game night, one minute per message.
CLOCK = datetime(2026, 1, 9, 20, 0, tzinfo=timezone.utc)
#: However long a demo game may take before it is given up (a guard: one takes a second or two).
WATCHDOG_SECONDS = 60.0
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
    scratch = tempfile.mkdtemp(prefix="avalon-demo-")
    try:
        demo = asyncio.run(play(args.players, options, args.lang, seed, Path(scratch)))
    except TimeoutError:
        print(f"avalon demo: error: the game did not end within {WATCHDOG_SECONDS:.0f} s", file=sys.stderr)
        return 1
    except BaseException:  # Ctrl-C: a database connection abandoned mid-connect may still fail in its
        threading.excepthook = lambda _: None  # thread, after the loop that waited for it is gone
        raise
    finally:
        _remove(Path(scratch))
    sys.stdout.write(demo.text())
    return 0


async def play(players: int, options: Options, lang: str, seed: int, scratch: Path | None = None) -> Demo:
    """Play one game through the engine service and the console channel, its database in ``scratch``
    (a temporary directory of its own when None); returns what everyone received. Everything it opened
    is closed when it returns, raises or is cancelled (Ctrl-C), each part even if closing another failed."""
    if scratch is None:
        own = tempfile.mkdtemp(prefix="avalon-demo-")
        try:
            return await play(players, options, lang, seed, Path(own))
        finally:
            shutil.rmtree(own, ignore_errors=True)
    from avalon.services.console.channel import SCHEME, ConsoleChannel
    from avalon.services.console.players import ScriptedPlayers
    from avalon.services.engine import moves, service
    from avalon.services.engine.deadlines import DeadlineScheduler
    from avalon.services.engine.store import Store
    from avalon.shared.bus import InProcessBus
    from avalon.shared.channels import ChannelMap
    from avalon.shared.delivery.games import GameBook
    from avalon.shared.delivery.outbox import Outbox
    from avalon.shared.delivery.pipeline import Pipeline
    from avalon.shared.delivery.roster import Roster
    from avalon.shared.narration.render import glossary

    rng = random.Random(seed)
    game_seed = rng.getrandbits(63)
    drawn = SimpleNamespace(randbits=lambda bits: game_seed % (1 << bits))  # instead of the engine's own draw
    ids = [f"{SCHEME}:{i + 1}" for i in range(players)]
    names = dict(zip(ids, NAMES[lang].split()))
    with mock.patch.object(moves, "secrets", drawn):
        async with contextlib.AsyncExitStack() as stack:
            store = Store(f"sqlite+aiosqlite:///{scratch / 'demo.db'}")
            stack.push_async_callback(store.close)
            stack.push_async_callback(_cancel_the_rest)  # then nothing is left to use the database as it closes
            bus = InProcessBus()
            scheduler = DeadlineScheduler(bus)
            console = ConsoleChannel(names, lang, CLOCK)
            table = ScriptedPlayers(bus, scheduler, GAME_ID, ids, names, glossary(lang), rng)
            channels = ChannelMap(schemes={SCHEME: console.name}, routed=frozenset({console.name}),
                                  gateways=frozenset({console.name}))
            engine = service.EngineService(store, bus, scheduler, channels=channels, clock=table.clock)
            outbox = Outbox(store.engine, console.name, console.deliver, first_delay=0.01)
            pipeline = Pipeline(console, GameBook(outbox, console.own_part), Roster(f"{SCHEME}:", has_group=True))
            stack.push_async_callback(outbox.close)  # closed in the reverse order: the engine first
            stack.push_async_callback(bus.close)
            stack.push_async_callback(engine.stop)
            stack.push_async_callback(engine.flush_published)  # a flush under way: stop() then cancels no query

            async def game() -> None:
                await bus.start()
                await bus.subscribe_events(console.name, f"{console.name}.#", pipeline.on_event)
                await bus.subscribe_events("console-players", f"{console.name}.#", table.on_event)
                await engine.start()
                await outbox.start()
                await table.open(options)
                await asyncio.wait_for(table.until_over(), WATCHDOG_SECONDS)
                await bus.idle()
                await outbox.idle(WATCHDOG_SECONDS)

            await _unless_interrupted(game())
    return Demo(names, console.transcript.messages())


async def _unless_interrupted(work) -> None:
    """Runs ``work``; a Ctrl-C cancels it, and only it: what was opened is then closed in order, as
    after a whole game, and ``Interrupted`` is raised (a Ctrl-C that cancelled everything at once left
    the database's threads writing into a directory being deleted)."""
    import signal

    from avalon.services.app import Interrupted

    loop = asyncio.get_running_loop()
    ctrl_c = asyncio.Event()
    with contextlib.suppress(NotImplementedError, RuntimeError):  # not on Windows, not off the main thread
        loop.add_signal_handler(signal.SIGINT, ctrl_c.set)
    task, stop = asyncio.ensure_future(work), asyncio.ensure_future(ctrl_c.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if ctrl_c.is_set():
        # The game is thrown away with its database: nothing it was doing need finish, and what closing
        # would say of it (the outbox's "could not mark N messages sent ... sent again on the next
        # start", when a commit cut short still holds the database) is not so: there is no next start.
        logging.disable(logging.CRITICAL)
        raise Interrupted
    task.result()


def _remove(scratch: Path) -> None:
    """The demo's directory, gone; a connection's thread that was still opening the database when a
    Ctrl-C came may create a file there just as it is deleted: it is deleted again."""
    for _ in range(50):
        shutil.rmtree(scratch, ignore_errors=True)
        if not scratch.exists():
            return
        time.sleep(0.1)


async def _cancel_the_rest() -> None:
    """Cancels every other task of the loop and waits for them: after a Ctrl-C in mid-game, a player's or
    a pipeline's task still in a query would otherwise reopen a connection as the database closes."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    if others:  # bounded: a task that will not end holds up no Ctrl-C
        await asyncio.wait(others, timeout=5)
