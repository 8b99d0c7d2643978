"""/help, /rules and /lang, in groups and private chats."""

from __future__ import annotations

from aiogram import Router
from aiogram.filters import Command, CommandObject
from aiogram.types import Message

from services.engine.rules import MissedRule
from shared.narration.render import LOCALES, glossary


async def help_(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    memo = gw.memory.game_of_chat(message.chat.id)
    await message.answer(gw.template("help.html", memo, player if message.chat.type == "private" else None))


async def rules(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    memo = gw.memory.game_of_chat(message.chat.id)
    from services.engine.rules import Options

    options = memo.options if memo and memo.options else Options()
    await message.answer(gw.template("rules.html", memo, None, options=options, rules=list(MissedRule)[1:]))
    del player


async def lang(message: Message, command: CommandObject, gw) -> None:
    player = gw.remember_user(message.from_user)
    wanted = (command.args or "").strip().lower()
    if wanted not in LOCALES:
        await message.answer(" ".join(f"/lang {code}" for code in LOCALES))
        return
    if message.chat.type == "private":
        gw.memory.languages[player] = wanted
        await gw.command(f"profile:{player}", player, {"type": "update_profile", "language": wanted})
    else:
        memo = gw.memory.game_of_chat(message.chat.id)
        if memo is not None:
            memo.language = wanted
    await message.answer(gw.ui(None, None, "language_set", language=glossary(wanted)["language_name"])
                         if message.chat.type != "private" else
                         gw.ui(None, player, "language_set", language=glossary(wanted)["language_name"]))


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="info")
    router.message.register(help_, Command("help"))
    router.message.register(rules, Command("rules"))
    router.message.register(lang, Command("lang"))
    return router
