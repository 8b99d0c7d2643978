"""Buttons during a game: the leader's team, the votes, quest cards, Excalibur, the Lady, the shot.

Only presentation checks here (who may press which button, from what the engine offered); the
engine decides and answers a wrong move with a reason."""

from __future__ import annotations

from aiogram import Router
from aiogram.types import CallbackQuery

from avalon.shared.game import Card

from .. import keyboards
from ..callbacks import CardCb, PickCb, TargetCb, VoteCb

KIND_OF = {v: k for k, v in keyboards.TARGET_KINDS.items()}
CARDS = {card.value for card in Card}


def _check(gw, query: CallbackQuery, game_id: str, phase: int):
    """(player, game, problem sentence or None)."""
    player = gw.remember_user(query.from_user)
    game = gw.game(game_id)
    if game is None or game.table.over or phase != game.table.turn.phase_id:
        return player, game, gw.reason(player, game, "stale_phase")
    if not game.table.seated(player):
        successor = game.own.successor(player)  # replaced: told by whom, as the engine would
        if successor is not None:
            return player, game, gw.reason(player, game, "seat_taken", player=successor)
        return player, game, gw.reason(player, game, "not_a_player")
    return player, game, None


def _proposal(game, player: str):
    """``player``'s offer to propose a team (they lead), or None."""
    offer = game.table.offer(player)
    return next((c for c in offer.choices if c.kind.value == "propose_team"), None) if offer else None


async def pick(query: CallbackQuery, callback_data: PickCb, gw) -> None:
    player, game, problem = _check(gw, query, callback_data.game, callback_data.phase)
    choice = _proposal(game, player) if problem is None else None
    if problem is None and choice is None:
        problem = gw.reason(player, game, "not_your_turn")
    if problem:
        await query.answer(problem, show_alert=True)
        return
    candidates, draft = choice.targets, game.table.draft
    if not -1 <= callback_data.seat < len(candidates):  # no button of ours says that
        await query.answer(gw.reason(player, game, "malformed"), show_alert=True)
        return
    if callback_data.seat >= 0:
        draft.toggle(candidates[callback_data.seat], press=query.id)  # handled again after a restart: once
        await query.answer()
        await gw.refresh_pick(game)
        return
    if len(draft.picks) != choice.count:
        await query.answer(gw.reason(player, game, "wrong_team_size", quest="", size=choice.count,
                                     picked=len(draft.picks)), show_alert=True)
        return
    if choice.excalibur:  # the leader hands Excalibur with the team: the sword's buttons in the picker's place
        await query.answer()
        others = [p for p in draft.picks if p != player]
        board = gw.channel.resolve(game.own.pick_message)  # the picker's id (it may be known by its outbox slot)
        if board is not None:
            await gw.sender.edit(game.own.chat_id, board,
                                 gw.ui(game, None, "sword", leader=gw.memory.names.get(player, player)),
                                 keyboards.sword(game.table.game_id, game.table.turn.phase_id, others, gw.memory.names))
        return
    await gw.command(game.table.game_id, player, {"type": "propose_team", "team": list(draft.picks),
                                                  "excalibur": None}, game.table.turn.phase_id)
    await query.answer()  # only once the team is on its way: an answered confirm is never lost


async def vote(query: CallbackQuery, callback_data: VoteCb, gw) -> None:
    player, game, problem = _check(gw, query, callback_data.game, callback_data.phase)
    if problem:
        await query.answer(problem, show_alert=True)
        return
    await gw.command(game.table.game_id, player, {"type": "cast_vote", "approve": callback_data.approve},
                     game.table.turn.phase_id)
    await query.answer(gw.ui(game, player, "sent"))


async def card(query: CallbackQuery, callback_data: CardCb, gw) -> None:
    player, game, problem = _check(gw, query, callback_data.game, callback_data.phase)
    if problem is None and callback_data.card not in CARDS:
        problem = gw.reason(player, game, "malformed")
    if problem:
        await query.answer(problem, show_alert=True)
        return
    await gw.command(game.table.game_id, player, {"type": "play_card", "card": callback_data.card},
                     game.table.turn.phase_id)
    await query.answer(gw.ui(game, player, "sent"))
    await _spent(gw, query)


async def target(query: CallbackQuery, callback_data: TargetCb, gw) -> None:
    player, game, problem = _check(gw, query, callback_data.game, callback_data.phase)
    if problem:
        await query.answer(problem, show_alert=True)
        return
    phase_id = game.table.turn.phase_id
    if callback_data.kind == "x":  # the leader hands Excalibur with the proposal
        picks = game.table.draft.picks
        others = [p for p in picks if p != player]
        choice = _proposal(game, player)
        if choice is None or not 0 <= callback_data.index < len(others):
            await query.answer(gw.reason(player, game, "not_your_turn"), show_alert=True)
            return
        if len(picks) != choice.count:  # the team changed since the sword's buttons: pick it again
            await query.answer(gw.reason(player, game, "wrong_team_size", quest="", size=choice.count,
                                         picked=len(picks)), show_alert=True)
            await gw.refresh_pick(game)
            return
        await gw.command(game.table.game_id, player, {"type": "propose_team", "team": list(picks),
                                                      "excalibur": others[callback_data.index]}, phase_id)
        await query.answer()
        return
    kind = KIND_OF.get(callback_data.kind)
    offer = game.table.offer(player)
    choice = next((c for c in offer.choices if c.kind.value == kind), None) if offer else None
    if choice is None:
        await query.answer(gw.reason(player, game, "not_your_turn"), show_alert=True)
        return
    field = {"use_excalibur": "target", "use_lady": "target", "assassinate": "target", "accuse": "target",
             "hand_shot": "to"}[kind]
    if callback_data.index < 0 and choice.optional:  # "keep it sheathed": only where one may decline
        body = {"type": kind, field: None}
    elif 0 <= callback_data.index < len(choice.targets):
        body = {"type": kind, field: choice.targets[callback_data.index]}
    else:
        await query.answer(gw.reason(player, game, "invalid_target"), show_alert=True)
        return
    await gw.command(game.table.game_id, player, body, phase_id)
    await query.answer(gw.ui(game, player, "sent"))
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
