"""Runs many random games of the security tests at once on one narrator (``secrets_stack``) and
collects what each reader was told: each game's group chat, each Telegram player's private chat
and each mail player's mailbox, as plain text in the order received (a Telegram message's earlier
versions included)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from .mixed_support import said
from .secrets_spec import GameSpec, draw
from .secrets_stack import Stack
from .secrets_table import Table


@dataclass
class Played:
    spec: GameSpec
    game: str
    log: list  # the engine's event log (what is published, private events included)
    transcripts: dict  # reader -> [text, ...]: None is the group, else a player id
    buttons: dict  # reader -> the data of every button the bot showed them (Telegram)
    moves: int
    engine_seed: int | None = None  # the seed the engine dealt from


async def play_all(stack: Stack, seeds: list[int], *, first_index: int = 0, timeout: float = 240.0,
                   at_once: int = 12) -> list[Played]:
    specs = [draw(first_index + i, seed) for i, seed in enumerate(seeds)]
    tables = [Table(stack, spec) for spec in specs]
    states: dict[str, object] = {}

    async def state(game: str):
        loaded = await stack.store.load(game)
        return loaded.state if loaded is not None else None

    gate = asyncio.Semaphore(at_once)

    async def open_(table: Table) -> None:
        async with gate:
            await table.open(state)

    await asyncio.gather(*(open_(t) for t in tables))
    deadline = time.monotonic() + timeout
    playing = {t.game: t for t in tables}
    while playing:  # one look at every game's state a tick, then each table makes its moves
        states = {game: loaded.state for game, loaded in (await stack.store.load_many(set(playing))).items()}
        for game, table in list(playing.items()):
            s = states[game]
            if s.over:
                del playing[game]
            else:
                await table.step(s)
        if time.monotonic() > deadline:
            stuck = [f"{t.spec.describe()}: {states[g].phase} phase {states[g].phase_id}, waiting for "
                     f"{t.wanted(states[g])}; {t.diagnose()}" for g, t in playing.items()]
            raise AssertionError(f"{len(stuck)} games did not end within {timeout} s:\n" + "\n".join(stuck))
        await asyncio.sleep(0.2)
    await stack.idle(60)
    await asyncio.sleep(1.0)
    await stack.idle(60)
    out = []
    for table in tables:
        log = await stack.store.event_log(table.game)
        transcripts, buttons = {}, {}
        if table.group is not None:
            transcripts[None], buttons[None] = said(stack.fake, table.group), pressable(stack.fake, table.group)
        for player, seat in table.seats.items():
            if seat.channel == "telegram":
                chat = table.users[player].private_chat
                transcripts[player], buttons[player] = said(stack.fake, chat), pressable(stack.fake, chat)
            else:
                transcripts[player] = [text for m in stack.mails(seat.address)
                                       for text in (f"{m.subject}\n{m.text}", m.html_text)]
        created = (await stack.store.event_log(table.game, include_internal=True))[0].event
        out.append(Played(table.spec, table.game, log, transcripts, buttons, table.moves,
                          getattr(created, "seed", None)))
    return out


def pressable(fake, chat) -> list[str]:
    """The data of every button the bot showed in a chat, on every version of every message."""
    out = []
    for message in fake.messages(chat):
        for markup in [m for _text, m in message.history] + [message.reply_markup]:
            out += [b["callback_data"] for row in (markup or {}).get("inline_keyboard") or [] for b in row
                    if "callback_data" in b]
    return out
