"""Private chat: /start (and the join_<game> deep link; /nextgame's next_<chat> link; a player back
after blocking the bot gets again what is open for them), /role, free text for the last word and the
council."""

from __future__ import annotations

from aiogram import F, Router
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.types import Message

from avalon.shared.game import Phase

from . import table

PRIVATE = F.chat.type == "private"


async def start(message: Message, command: CommandObject, gw) -> None:
    player = gw.remember_user(message.from_user)
    gw.memory.reachable.add(player)
    await gw.answer(message, gw.ui(None, player, "welcome"))
    payload = command.args or ""
    chat = table.next_game_chat(payload)
    if chat is not None:  # the link /nextgame gave in a group before the private chat was open
        table.subscribe(gw, chat, player)
        title = gw.memory.titles.get(chat) or str(chat)
        await gw.answer(message, gw.ui(None, player, "next_game_private_noted", title=title))
    if payload.startswith("join_"):
        game_id = payload[len("join_"):]
        game = gw.game(game_id)
        if game is not None and not game.table.seated(player) and not game.table.over:
            await gw.command(game_id, player, {"type": "join"})
    # back (after blocking the bot, say): what was offered to them meanwhile never reached them, so
    # the engine sends them again, to them alone, what is open for them in each of their games now
    for game in gw.games_of(player):
        if game.table.turn.phase is not Phase.LOBBY:
            await gw.command(game.table.game_id, player, {"type": "show_choices"})


async def role(message: Message, gw) -> None:
    """The player's role card again, from the engine, in their private chat (asked in a group: the
    card still comes in private; the group reads nothing of it)."""
    player = gw.remember_user(message.from_user)
    if message.chat.type == "private":
        games = [g for g in gw.games_of(player) if g.table.turn.phase is not Phase.LOBBY]
    else:
        game = gw.game_of_chat(message.chat.id)
        games = [game] if game is not None and game.table.seated(player) and not game.table.over \
            and game.table.turn.phase is not Phase.LOBBY else []
    if not games:
        if message.chat.type == "private":
            await gw.answer(message, gw.ui(None, player, "no_games"))
        return
    for game in games:
        await gw.command(game.table.game_id, player, {"type": "show_role"})


async def my_games(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    games = gw.games_of(player)
    if not games:
        await gw.answer(message, gw.ui(None, player, "no_games"))
        return
    lines = [gw.ui(game, player, "my_game", title=game.own.title or str(game.own.chat_id),
                   phase=game.table.turn.phase.value) for game in games]
    await gw.answer(message, "\n".join(lines))


async def free_text(message: Message, gw) -> None:
    """During the assassination an evil player's words go to the council; the accused's are his last word."""
    player = gw.remember_user(message.from_user)
    games = gw.games_of(player)
    for game in games:
        offer = game.table.offer(player)
        if offer is not None and any(c.kind.value == "speak_last_word" for c in offer.choices):
            await gw.command(game.table.game_id, player, {"type": "speak_last_word", "text": message.text},
                             offer.phase_id)
            return
    for game in games:  # the evil council, relayed by the engine to its members
        turn = game.table.turn
        if turn.phase in (Phase.ASSASSINATION, Phase.LAST_WORD) and player in turn.council:
            await gw.command(game.table.game_id, player, {"type": "confer", "text": message.text})
            return


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="private")
    router.message.register(start, CommandStart(), PRIVATE)
    router.message.register(my_games, Command("mygames"), PRIVATE)
    router.message.register(role, Command("role"))
    router.message.register(free_text, PRIVATE, F.text, ~F.text.startswith("/"))
    return router
