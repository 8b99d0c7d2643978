"""Buttons during a game: the leader's team, the votes, quest cards, Excalibur, the Lady, the shot.

Only presentation checks here (who may press which button, from what the events said); the
engine decides and answers a wrong move with a reason."""

from __future__ import annotations

from aiogram import Router
from aiogram.types import CallbackQuery

from shared.game.model import Card

from .. import keyboards
from ..callbacks import CardCb, PickCb, TargetCb, VoteCb

KIND_OF = {v: k for k, v in keyboards.TARGET_KINDS.items()}
CARDS = {card.value for card in Card}


def _check(gw, query: CallbackQuery, game: str, phase: int):
    """(player, memo, problem sentence or None)."""
    player = gw.remember_user(query.from_user)
    memo = gw.memory.games.get(game)
    if memo is None or memo.over or phase != memo.phase_id:
        return player, memo, gw.reason(player, memo, "stale_phase")
    if player not in memo.players:
        return player, memo, gw.reason(player, memo, "not_a_player")
    return player, memo, None


async def pick(query: CallbackQuery, callback_data: PickCb, gw) -> None:
    player, memo, problem = _check(gw, query, callback_data.game, callback_data.phase)
    if problem is None and player != memo.leader:
        problem = gw.reason(player, memo, "not_your_turn")
    if problem:
        await query.answer(problem, show_alert=True)
        return
    if not -1 <= callback_data.seat < len(memo.players):  # no button of ours says that
        await query.answer(gw.reason(player, memo, "malformed"), show_alert=True)
        return
    if callback_data.seat >= 0:
        chosen = memo.players[callback_data.seat]
        if chosen in memo.picked:
            memo.picked.remove(chosen)
        else:
            memo.picked.append(chosen)
        await query.answer()
        await gw.painter.refresh_pick(memo)
        return
    if len(memo.picked) != memo.team_size:
        await query.answer(gw.reason(player, memo, "wrong_team_size", quest="", size=memo.team_size,
                                     picked=len(memo.picked)), show_alert=True)
        return
    if memo.options is not None and memo.options.excalibur:
        await query.answer()
        others = [p for p in memo.picked if p != player]
        board = gw.painter.resolve(memo.pick_message)  # the picker's id (it may be known by its outbox slot)
        if board is not None:
            await gw.sender.edit(memo.chat_id, board,
                                 gw.ui(memo, None, "sword", leader=gw.memory.names.get(player, player)),
                                 keyboards.sword(memo.game_id, memo.phase_id, others, gw.memory.names))
        memo.sword = "?"
        return
    await gw.command(memo.game_id, player, {"type": "propose_team", "team": list(memo.picked), "excalibur": None},
                     memo.phase_id)
    await query.answer()  # only once the team is on its way: an answered confirm is never lost


async def vote(query: CallbackQuery, callback_data: VoteCb, gw) -> None:
    player, memo, problem = _check(gw, query, callback_data.game, callback_data.phase)
    if problem:
        await query.answer(problem, show_alert=True)
        return
    await gw.command(memo.game_id, player, {"type": "cast_vote", "approve": callback_data.approve}, memo.phase_id)
    await query.answer(gw.ui(memo, player, "sent"))


async def card(query: CallbackQuery, callback_data: CardCb, gw) -> None:
    player, memo, problem = _check(gw, query, callback_data.game, callback_data.phase)
    if problem is None and callback_data.card not in CARDS:
        problem = gw.reason(player, memo, "malformed")
    if problem:
        await query.answer(problem, show_alert=True)
        return
    await gw.command(memo.game_id, player, {"type": "play_card", "card": callback_data.card}, memo.phase_id)
    await query.answer(gw.ui(memo, player, "sent"))
    await _spent(gw, query)


async def target(query: CallbackQuery, callback_data: TargetCb, gw) -> None:
    player, memo, problem = _check(gw, query, callback_data.game, callback_data.phase)
    if problem:
        await query.answer(problem, show_alert=True)
        return
    if callback_data.kind == "x":  # the leader hands Excalibur with the proposal
        others = [p for p in memo.picked if p != player]
        if player != memo.leader or not 0 <= callback_data.index < len(others):
            await query.answer(gw.reason(player, memo, "not_your_turn"), show_alert=True)
            return
        await gw.command(memo.game_id, player, {"type": "propose_team", "team": list(memo.picked),
                                                "excalibur": others[callback_data.index]}, memo.phase_id)
        await query.answer()
        return
    kind = KIND_OF.get(callback_data.kind)
    offer = gw.memory.offers.get((memo.game_id, player))
    choice = next((c for c in offer.choices if c.kind.value == kind), None) if offer else None
    if choice is None or offer.phase_id != memo.phase_id:
        await query.answer(gw.reason(player, memo, "not_your_turn"), show_alert=True)
        return
    field = {"use_excalibur": "target", "use_lady": "target", "assassinate": "target", "accuse": "target",
             "hand_shot": "to"}[kind]
    if callback_data.index < 0 and choice.optional:  # "keep it sheathed": only where one may decline
        body = {"type": kind, field: None}
    elif 0 <= callback_data.index < len(choice.targets):
        body = {"type": kind, field: choice.targets[callback_data.index]}
    else:
        await query.answer(gw.reason(player, memo, "invalid_target"), show_alert=True)
        return
    await gw.command(memo.game_id, player, body, memo.phase_id)
    await query.answer(gw.ui(memo, player, "sent"))
    await _spent(gw, query)


async def _spent(gw, query: CallbackQuery) -> None:
    """A private keyboard loses its buttons once used (paced, retried). Only a private one: the same
    data forged on a group's message must not take the team picker or the vote away from the others."""
    message = query.message
    if message is not None and message.chat.id == query.from_user.id:
        await gw.sender.edit(message.chat.id, message.message_id, None)


async def unknown(query: CallbackQuery, gw) -> None:
    """Button data no handler reads (forged, cut short, from another bot's version): an alert, not a
    spinner that never stops."""
    player = gw.remember_user(query.from_user)
    await query.answer(gw.reason(player, None, "malformed"), show_alert=True)


def build_unknown() -> Router:
    """Last of all routers: whatever button data the others did not take."""
    router = Router(name="unknown buttons")
    router.callback_query.register(unknown)
    return router


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="play")
    router.callback_query.register(pick, PickCb.filter())
    router.callback_query.register(vote, VoteCb.filter())
    router.callback_query.register(card, CardCb.filter())
    router.callback_query.register(target, TargetCb.filter())
    return router
