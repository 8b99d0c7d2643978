"""/help, /rules and /lang, in groups and private chats."""

from __future__ import annotations

from aiogram import Router
from aiogram.filters import Command, CommandObject
from aiogram.types import Message

from avalon.shared.game import MissedRule, Options
from avalon.shared.narration.render import LOCALES, glossary, ui_text


async def status(message: Message, gw) -> None:
    """The board, answered by the engine (it alone knows the game), in this chat."""
    player = gw.remember_user(message.from_user)
    if message.chat.type == "private":
        games = gw.games_of(player)
        game = games[-1] if games else None
    else:
        game = gw.game_of_chat(message.chat.id)
    if game is None:
        await gw.answer(message, gw.ui(None, player, "no_game"))
        return
    command_id = await gw.command(game.table.game_id, player, {"type": "show_board"})
    gw.memory.board_requests[command_id] = message.chat.id


async def help_(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    game = gw.game_of_chat(message.chat.id)
    reader = player if message.chat.type == "private" else None
    # the table's commands (routers/table.py), after the game's
    await gw.answer(message, gw.template("help.html", game, reader) + "\n" + gw.ui(game, reader, "help_table"))


async def rules(message: Message, gw) -> None:
    gw.remember_user(message.from_user)
    game = gw.game_of_chat(message.chat.id)
    options = game.table.options if game and game.table.options else Options()
    await gw.answer(message, gw.template("rules.html", game, None, options=options, rules=list(MissedRule)[1:]))


async def lang(message: Message, command: CommandObject, gw) -> None:
    player = gw.remember_user(message.from_user)
    wanted = (command.args or "").strip().lower()
    if wanted not in LOCALES:
        await gw.answer(message, " ".join(f"/lang {code}" for code in LOCALES))
        return
    if message.chat.type == "private":
        gw.memory.languages[player] = wanted
        await gw.command(f"profile:{player}", player, {"type": "update_profile", "language": wanted})
    else:
        gw.memory.chat_languages[message.chat.id] = wanted
        game = gw.game_of_chat(message.chat.id)
        if game is not None:
            game.own.language = wanted
    await gw.answer(message, ui_text(wanted, "language_set", language=glossary(wanted)["language_name"]))


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="info")
    router.message.register(status, Command("status"))
    router.message.register(help_, Command("help"))
    router.message.register(rules, Command("rules"))
    router.message.register(lang, Command("lang"))
    return router
