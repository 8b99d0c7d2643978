"""Private chat: /start (and the join_<game> deep link), free text for the last word and the council."""

from __future__ import annotations

from aiogram import F, Router
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.types import Message

PRIVATE = F.chat.type == "private"


async def start(message: Message, command: CommandObject, gw) -> None:
    player = gw.remember_user(message.from_user)
    gw.memory.reachable.add(player)
    await gw.answer(message, gw.ui(None, player, "welcome"))
    payload = command.args or ""
    if payload.startswith("join_"):
        game = payload[len("join_"):]
        memo = gw.memory.games.get(game)
        if memo is not None and player not in memo.players and not memo.over:
            await gw.command(game, player, {"type": "join"})


async def my_games(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    games = gw.memory.games_of(player)
    if not games:
        await gw.answer(message, gw.ui(None, player, "no_games"))
        return
    lines = [gw.ui(memo, player, "my_game", title=memo.title or str(memo.chat_id), phase=memo.phase)
             for memo in games]
    await gw.answer(message, "\n".join(lines))


async def free_text(message: Message, gw) -> None:
    """During the assassination an evil player's words go to the council; the accused's are his last word."""
    player = gw.remember_user(message.from_user)
    for (game, who), offer in list(gw.memory.offers.items()):
        memo = gw.memory.games.get(game)
        if who != player or memo is None or memo.over or offer.phase_id != memo.phase_id:
            continue
        kinds = {c.kind.value for c in offer.choices}
        if "speak_last_word" in kinds:
            await gw.command(game, player, {"type": "speak_last_word", "text": message.text}, offer.phase_id)
            return
    for memo in gw.memory.games_of(player):  # the evil council, relayed by the engine to its members
        if memo.phase in ("assassination", "last_word") and player in memo.council:
            await gw.command(memo.game_id, player, {"type": "confer", "text": message.text})
            return


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="private")
    router.message.register(start, CommandStart(), PRIVATE)
    router.message.register(my_games, Command("mygames"), PRIVATE)
    router.message.register(free_text, PRIVATE, F.text, ~F.text.startswith("/"))
    return router
