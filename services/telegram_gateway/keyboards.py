"""Inline keyboards, built from what the engine offers (never from rules of our own)."""

from __future__ import annotations

from aiogram.types import InlineKeyboardMarkup
from aiogram.utils.keyboard import InlineKeyboardBuilder

from .callbacks import CardCb, JoinCb, PickCb, SeatCb, TargetCb, VoteCb

TARGET_KINDS = {"use_excalibur": "e", "use_lady": "l", "assassinate": "a", "accuse": "c", "hand_shot": "h"}


def join(game: str, label: str) -> InlineKeyboardMarkup:
    kb = InlineKeyboardBuilder()
    kb.button(text=label, callback_data=JoinCb(game=game))
    return kb.as_markup()


def take_seat(game: str, seat: int, label: str) -> InlineKeyboardMarkup:
    kb = InlineKeyboardBuilder()
    kb.button(text=label, callback_data=SeatCb(game=game, seat=seat))
    return kb.as_markup()


def pick(game: str, phase: int, players: list[str], picked: list[str], names: dict[str, str],
         confirm: str) -> InlineKeyboardMarkup:
    kb = InlineKeyboardBuilder()
    for seat, player in enumerate(players):
        mark = "✅ " if player in picked else ""
        kb.button(text=f"{mark}{names.get(player, player)}", callback_data=PickCb(game=game, phase=phase, seat=seat))
    kb.button(text=confirm, callback_data=PickCb(game=game, phase=phase, seat=-1))
    kb.adjust(2)
    return kb.as_markup()


def sword(game: str, phase: int, team: list[str], names: dict[str, str]) -> InlineKeyboardMarkup:
    kb = InlineKeyboardBuilder()
    for index, player in enumerate(team):
        kb.button(text=names.get(player, player), callback_data=TargetCb(game=game, phase=phase, kind="x", index=index))
    kb.adjust(2)
    return kb.as_markup()


def vote(game: str, phase: int, approve: str, reject: str) -> InlineKeyboardMarkup:
    kb = InlineKeyboardBuilder()
    kb.button(text=f"👍 {approve}", callback_data=VoteCb(game=game, phase=phase, approve=True))
    kb.button(text=f"👎 {reject}", callback_data=VoteCb(game=game, phase=phase, approve=False))
    return kb.as_markup()


def choices(game: str, offer, names: dict[str, str], card_words: dict[str, str], sheathe: str
            ) -> InlineKeyboardMarkup | None:
    kb = InlineKeyboardBuilder()
    rows = 0
    for choice in offer.choices:
        kind = choice.kind.value
        if kind == "play_card":
            for card in choice.cards:
                kb.button(text=card_words[card.value], callback_data=CardCb(game=game, phase=offer.phase_id,
                                                                            card=card.value))
                rows += 1
        elif kind in TARGET_KINDS:
            for index, player in enumerate(choice.targets):
                kb.button(text=names.get(player, player), callback_data=TargetCb(
                    game=game, phase=offer.phase_id, kind=TARGET_KINDS[kind], index=index))
                rows += 1
            if choice.optional:
                kb.button(text=sheathe, callback_data=TargetCb(game=game, phase=offer.phase_id,
                                                               kind=TARGET_KINDS[kind], index=-1))
                rows += 1
    if not rows:
        return None
    kb.adjust(2)
    return kb.as_markup()
