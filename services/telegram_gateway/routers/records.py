"""The record of finished games: /stats (one's own; as a reply, the replied-to person's), /top (the
group's leaderboard; in a private chat, the games one hosted), /history (the group's last games),
/hidestats (/hidestats off: shown again) and /forgetme (private chat only, confirmed by
``/forgetme yes``).

Each goes to the engine under ``tg<chat>_records`` (``ids.records_game``), a game id this gateway
serves, and its answer is said in the chat it was asked in (``TelegramChannel._on_records``): the
group for a question asked there, the private chat for one asked there. Stats their owner hid are
never said in a group: they go to the owner's private chat."""

from __future__ import annotations

from aiogram import F, Router
from aiogram.filters import Command, CommandObject
from aiogram.types import Message

from .. import ids

GROUPS = F.chat.type.in_({"group", "supergroup"})
PRIVATE = F.chat.type == "private"
#: the leaderboard of a Telegram group counts whoever finished a game there (a group plays few games)
MIN_GAMES = 1
YES = frozenset({"yes", "y", "بله", "آره", "да", "có", "ja", "oui"})


async def _ask(message: Message, gw, player: str, body: dict) -> None:
    command_id = await gw.command(ids.records_game(message.chat.id), player, body)
    gw.memory.board_requests[command_id] = message.chat.id


async def stats(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    body: dict = {"type": "show_stats"}
    replied = message.reply_to_message
    other = replied.from_user if replied is not None else None
    if other is not None and not other.is_bot and other.id != message.from_user.id:
        body["player"] = gw.remember_user(other)
    await _ask(message, gw, player, body)


async def top(message: Message, command: CommandObject, gw) -> None:
    player = gw.remember_user(message.from_user)
    arg = (command.args or "").strip()
    min_games = int(arg) if arg.isdigit() and 1 <= int(arg) <= 1000 else MIN_GAMES
    where = {"host": player} if message.chat.type == "private" else {"table": ids.table(message.chat.id)}
    await _ask(message, gw, player, {"type": "show_leaderboard", "min_games": min_games, **where})


async def history(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    await _ask(message, gw, player, {"type": "show_history", "table": ids.table(message.chat.id)})


async def history_private(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    await gw.answer(message, gw.ui(None, player, "group_only"))


async def hide_stats(message: Message, command: CommandObject, gw) -> None:
    player = gw.remember_user(message.from_user)
    shown = (command.args or "").strip().lower() in {"off", "no", "show"}
    await _ask(message, gw, player, {"type": "hide_stats", "hidden": not shown})


async def forget_me(message: Message, command: CommandObject, gw) -> None:
    player = gw.remember_user(message.from_user)
    if message.chat.type != "private":
        await gw.answer(message, gw.ui(None, player, "private_only"), reply=True)
        return
    if (command.args or "").strip().lower() not in YES:
        await gw.answer(message, gw.ui(None, player, "forget_confirm"))
        return
    await _ask(message, gw, player, {"type": "forget_me"})


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="records")
    router.message.register(stats, Command("stats"))
    router.message.register(top, Command("top"))
    router.message.register(history, Command("history"), GROUPS)
    router.message.register(history_private, Command("history"), PRIVATE)
    router.message.register(hide_stats, Command("hidestats"))
    router.message.register(forget_me, Command("forgetme"))
    return router
