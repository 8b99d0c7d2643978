"""/settings: the host changes the game's options with buttons, in the lobby (the screen itself is
``settings_screen.py``)."""

from __future__ import annotations

from aiogram import F, Router
from aiogram.filters import Command
from aiogram.types import CallbackQuery, Message

from avalon.shared.game import Options, Phase
from avalon.shared.narration.render import LOCALES

from ..settings_screen import SetCb, _next, changed, settings_keyboard, settings_text

GROUPS = F.chat.type.in_({"group", "supergroup"})


def _in_lobby(game) -> bool:
    return game is not None and not game.table.over and game.table.turn.phase is Phase.LOBBY


async def show(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    game = gw.game_of_chat(message.chat.id)
    if game is None or game.table.turn.phase is not Phase.LOBBY:
        await gw.answer(message, gw.ui(game, player, "no_game"), reply=True)
        return
    sent = await gw.sender.send(game.own.chat_id, settings_text(gw.speech, game), settings_keyboard(gw.speech, game))
    if sent is not None:
        gw.memory.settings_messages[game.table.game_id] = sent.message_id


async def press(query: CallbackQuery, callback_data: SetCb, gw) -> None:
    player = gw.remember_user(query.from_user)
    game = gw.game(callback_data.game)
    if not _in_lobby(game):
        await query.answer(gw.reason(player, game, "stale_phase"), show_alert=True)
        return
    if player != game.table.seats.host:
        await query.answer(gw.reason(player, game, "not_host"), show_alert=True)
        return
    own = game.own
    if callback_data.key == "lang":
        own.language = _next(list(LOCALES), own.language)
        gw.memory.chat_languages[own.chat_id] = own.language
        await query.answer()
        await gw.sender.edit(own.chat_id, query.message.message_id, settings_text(gw.speech, game),
                             settings_keyboard(gw.speech, game))
        return
    # built on the host's previous press before the engine confirms it, so two quick presses do not
    # undo each other; set before the command goes (presses run side by side), taken back if it fails
    before = own.options_wanted
    # the roles ticked are what the engine says it deals, unless a role press of the host's is still on its way
    deals = () if before is not None and before.roles is not None else game.table.deals
    options = own.options_wanted = changed(before or game.table.options or Options(), callback_data.key, deals)
    try:
        await gw.command(game.table.game_id, player, {"type": "change_options", "options": options})
    except BaseException:
        if own.options_wanted is options:
            own.options_wanted = before
        raise
    await query.answer(gw.ui(game, player, "sent"))


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="settings")
    router.message.register(show, Command("settings"), GROUPS)
    router.callback_query.register(press, SetCb.filter())
    return router
