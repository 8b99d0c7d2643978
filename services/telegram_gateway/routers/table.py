"""The people around the table, in a group: /pause and /resume (the host), /void (the host ends the
game; a player asks for a majority), /away (an announced absence), /handover (a player opens their
own seat), /openseat, /passhost and /kick (the host, naming a player), the "Take seat" button under
an open seat, and /nextgame (a private word when the next lobby opens in the group).

A player is named by a reply to one of their messages, an @username the bot has seen, a mention
Telegram links to the user, or an email address (a mail player's seat). The engine decides who may
do what and answers a refusal with its reason."""

from __future__ import annotations

from aiogram import Router
from aiogram.filters import Command, CommandObject
from aiogram.types import CallbackQuery, Message

from avalon.shared.narration.render import html_to_text
from avalon.shared.protocol import plausible_address

from ..callbacks import SeatCb
from .lobby import GROUPS, _group_game, mentioned


def named_player(message: Message, command: CommandObject, gw) -> str | None:
    """The player a command names (``mentioned``), else an email address (a mail player's seat)."""
    named = mentioned(message, gw)
    if named is not None:
        return named
    word = (command.args or "").strip()
    if plausible_address(word):
        return f"mail:{word.lower()}"
    return None


async def _simple(message: Message, gw, body: dict) -> None:
    player, game = await _group_game(message, gw)
    if game is not None:
        await gw.command(game.table.game_id, player, body)


async def pause(message: Message, gw) -> None:
    await _simple(message, gw, {"type": "pause_game"})


async def resume(message: Message, gw) -> None:
    await _simple(message, gw, {"type": "resume_game"})


async def void(message: Message, gw) -> None:
    """The host ends the game at once; a player's /void counts towards a majority."""
    await _simple(message, gw, {"type": "void_game"})


async def away(message: Message, gw) -> None:
    await _simple(message, gw, {"type": "announce_absence"})


async def handover(message: Message, gw) -> None:
    """A player opens their own seat for a substitute (until one comes, the missed-deadline rule plays it)."""
    player, game = await _group_game(message, gw)
    if game is not None:
        await gw.command(game.table.game_id, player, {"type": "open_seat", "player": player})


async def _naming(message: Message, command: CommandObject, gw, body) -> None:
    """A host's command about one player: ``body(that player)`` once the player is named."""
    player, game = await _group_game(message, gw)
    if game is None:
        return
    target = named_player(message, command, gw)
    if target is None:
        await gw.answer(message, gw.ui(game, player, "name_a_player"), reply=True)
        return
    if not target:  # an @username the bot has never seen
        await gw.answer(message, gw.ui(game, player, "unknown_username"), reply=True)
        return
    await gw.command(game.table.game_id, player, body(target))


async def open_seat(message: Message, command: CommandObject, gw) -> None:
    await _naming(message, command, gw, lambda target: {"type": "open_seat", "player": target})


async def pass_host(message: Message, command: CommandObject, gw) -> None:
    await _naming(message, command, gw, lambda target: {"type": "pass_host", "to": target})


async def kick(message: Message, command: CommandObject, gw) -> None:
    await _naming(message, command, gw, lambda target: {"type": "remove_player", "player": target})


async def take_seat(query: CallbackQuery, callback_data: SeatCb, gw) -> None:
    """Whoever presses takes the seat from its holder of now; the engine checks that it is open. The
    seat's secrets come in private: one who never opened the private chat is told to, first."""
    player = gw.remember_user(query.from_user)
    game = gw.game(callback_data.game)
    if game is None or game.table.over:
        await query.answer(gw.reason(player, game, "stale_phase"), show_alert=True)
        return
    players = game.table.seats.players
    if not 0 <= callback_data.seat < len(players):  # no button of ours says that
        await query.answer(gw.reason(player, game, "malformed"), show_alert=True)
        return
    if game.table.seated(player):
        await query.answer(gw.reason(player, game, "already_seated"), show_alert=True)
        return
    holder = players[callback_data.seat]
    if all(seat != callback_data.seat for seat, _ in game.own.open_seats):
        await query.answer(gw.reason(player, game, "seat_not_open", player=holder), show_alert=True)
        return
    if player not in gw.memory.reachable:
        await query.answer(html_to_text(gw.ui(game, player, "take_seat_private")), show_alert=True)
        return
    await gw.command(game.table.game_id, player, {"type": "take_seat", "player": holder})
    await query.answer(gw.ui(game, player, "sent"))


def subscribe(gw, chat: int, player: str) -> None:
    """``player`` hears in private when a lobby next opens in ``chat`` (once)."""
    waiting = gw.memory.next_game.get(chat, ())
    if player not in waiting:
        gw.memory.next_game[chat] = waiting + (player,)


async def next_game(message: Message, gw) -> None:
    """A private word when the next lobby opens in this group; the private chat must be open for it."""
    player = gw.remember_user(message.from_user)
    gw.memory.titles[message.chat.id] = message.chat.title or ""
    game = gw.game_of_chat(message.chat.id)
    name = gw.memory.names.get(player, player)
    if player not in gw.memory.reachable:
        link = gw.start_link(f"next_{message.chat.id}")
        await gw.answer(message, gw.ui(game, None, "next_game_private", name=name, link=link), reply=True)
        return
    subscribe(gw, message.chat.id, player)
    await gw.answer(message, gw.ui(game, None, "next_game_noted", name=name), reply=True)


def next_game_chat(payload: str) -> int | None:
    """The group a ``/start next_<chat>`` link was given in (None: not such a link)."""
    chat = payload.removeprefix("next_")
    if chat == payload or not chat.startswith("-") or not chat[1:].isdigit():
        return None
    return int(chat)


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="table")
    router.message.register(pause, Command("pause"), GROUPS)
    router.message.register(resume, Command("resume"), GROUPS)
    router.message.register(void, Command("void"), GROUPS)
    router.message.register(away, Command("away"), GROUPS)
    router.message.register(handover, Command("handover"), GROUPS)
    router.message.register(open_seat, Command("openseat"), GROUPS)
    router.message.register(pass_host, Command("passhost"), GROUPS)
    router.message.register(kick, Command("kick"), GROUPS)
    router.message.register(next_game, Command("nextgame"), GROUPS)
    router.callback_query.register(take_seat, SeatCb.filter())
    return router
