"""Group commands around a game: /newgame, /join, /leave, /invite, /startgame, /cancel."""

from __future__ import annotations

import re

from aiogram import F, Router
from aiogram.filters import Command, CommandObject
from aiogram.types import CallbackQuery, Message

from avalon.shared.game import Options, Phase, Preset
from avalon.shared.protocol import plausible_address

from .. import ids
from ..callbacks import JoinCb

GROUPS = F.chat.type.in_({"group", "supergroup"})


async def new_game(message: Message, command: CommandObject, gw) -> None:
    host = gw.remember_user(message.from_user)
    game = gw.game_of_chat(message.chat.id)
    if game is not None and not game.table.over:
        await gw.answer(message, gw.ui(game, host, "game_open"), reply=True)
        return
    preset = Preset.CLASSIC
    if command.args and command.args.strip().lower() in {p.value for p in Preset}:
        preset = Preset(command.args.strip().lower())
    game = ids.game_id(message.chat.id, message.message_id)
    gw.memory.titles[message.chat.id] = message.chat.title or ""
    options = Options.preset_defaults(preset)
    await gw.command(game, host, {"type": "create_game", "options": options,
                                      "table": ids.table(message.chat.id)})


async def _join(gw, chat_id: int, user) -> str | None:
    player = gw.remember_user(user)
    game = gw.game_of_chat(chat_id)
    if game is None:
        return gw.ui(None, player, "no_game")
    await gw.command(game.table.game_id, player, {"type": "join"})
    return None


async def join(message: Message, gw) -> None:
    problem = await _join(gw, message.chat.id, message.from_user)
    if problem:
        await gw.answer(message, problem, reply=True)


async def join_button(query: CallbackQuery, callback_data: JoinCb, gw) -> None:
    game = gw.game(callback_data.game)
    player = gw.remember_user(query.from_user)
    if game is None or game.table.over or game.table.turn.phase is not Phase.LOBBY:
        await query.answer(gw.reason(player, game, "stale_phase"), show_alert=True)
        return
    await gw.command(game.table.game_id, player, {"type": "join"})
    await query.answer(gw.ui(game, player, "sent"))


async def _group_game(message: Message, gw):
    """(player, the group's open game); None for the game after telling the sender there is none."""
    player = gw.remember_user(message.from_user)
    game = gw.game_of_chat(message.chat.id)
    if game is None:
        await gw.answer(message, gw.ui(None, player, "no_game"), reply=True)
    return player, game


async def leave(message: Message, gw) -> None:
    player, game = await _group_game(message, gw)
    if game is not None:
        await gw.command(game.table.game_id, player, {"type": "leave"})


async def invite(message: Message, command: CommandObject, gw) -> None:
    """``/invite ADDRESS ...``: each address is invited as an email player (``mail:<address>``); the
    engine says whether the sender may (the host, in the lobby). In a reply to a player's message (or
    naming @them), in a game under way: their open seat is offered to the address, taken by mail."""
    player, game = await _group_game(message, gw)
    if game is None:
        return
    words = [w for w in re.split(r"[\s,;]+", command.args or "") if w]
    # a game under way: the open seat offered (a reply to its holder, or @them)
    seat = mentioned(message, gw) if game.table.turn.phase is not Phase.LOBBY else None
    if seat is not None:
        words = [w for w in words if not w.startswith("@")]
    if not words:
        await gw.answer(message, gw.ui(game, player, "invite_usage"), reply=True)
        return
    bad = [w for w in words if not plausible_address(w)]
    for address in dict.fromkeys(w.lower() for w in words if w not in bad):
        await gw.command(game.table.game_id, player, {"type": "invite", "player": f"mail:{address}",
                                                      "table": (message.chat.title or "")[:128], "seat": seat or ""})
    if bad:  # shown shortened: a 5000-character word must not make the answer too long to send
        shown = [w if len(w) <= 60 else w[:59] + "…" for w in bad[:5]] + (["…"] if len(bad) > 5 else [])
        await gw.answer(message, gw.ui(game, player, "invite_invalid", names=", ".join(shown)), reply=True)


def mentioned(message: Message, gw) -> str | None:
    """The player a command names: the author of the message it replies to, else the first user it
    mentions (a user Telegram links; an @username the bot has seen, "" for one it has not); else None.
    In an /invite: the player whose open seat is offered."""
    replied = message.reply_to_message
    if replied is not None and replied.from_user is not None and not replied.from_user.is_bot:
        return gw.remember_user(replied.from_user)
    for entity in message.entities or ():
        if entity.type == "text_mention" and entity.user is not None:
            return gw.remember_user(entity.user)
        if entity.type == "mention":
            return gw.memory.usernames.get(entity.extract_from(message.text or "").lstrip("@").lower(), "")
    return None


async def start_game(message: Message, gw) -> None:
    player, game = await _group_game(message, gw)
    if game is None:
        return
    # every Telegram player must be able to receive their role privately (other channels' players are
    # reached by their own gateway)
    players = game.table.seats.players
    unreachable = [p for p in players if ids.user_id(p) is not None and p not in gw.memory.reachable]
    if unreachable:
        names = ", ".join(gw.memory.names.get(p, p) for p in unreachable)
        await gw.answer(message, gw.ui(game, None, "waiting_private", names=names,
                                       link=gw.deep_link(game.table.game_id)), reply=True)
        return
    await gw.command(game.table.game_id, player, {"type": "start_game"})


async def cancel(message: Message, gw) -> None:
    player, game = await _group_game(message, gw)
    if game is not None:
        await gw.command(game.table.game_id, player, {"type": "cancel_game"})


async def migrated(message: Message, gw) -> None:
    """Telegram's service message in the new supergroup: the group's games follow it."""
    gw.migrated(message.migrate_from_chat_id, message.chat.id)


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="lobby")
    router.message.register(migrated, F.migrate_from_chat_id)
    router.message.register(new_game, Command("newgame"), GROUPS)
    router.message.register(join, Command("join"), GROUPS)
    router.callback_query.register(join_button, JoinCb.filter())
    router.message.register(leave, Command("leave"), GROUPS)
    router.message.register(invite, Command("invite"), GROUPS)
    router.message.register(start_game, Command("startgame"), GROUPS)
    router.message.register(cancel, Command("cancel"), GROUPS)
    return router
