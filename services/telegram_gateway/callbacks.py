"""Typed callback data for every button (Telegram allows 64 bytes: games by id, players by index)."""

from __future__ import annotations

from aiogram.filters.callback_data import CallbackData


class JoinCb(CallbackData, prefix="j"):
    game: str


class PickCb(CallbackData, prefix="p"):
    """The leader toggles a player in or out of the team (index in the seat order); -1 confirms."""

    game: str
    phase: int
    seat: int


class VoteCb(CallbackData, prefix="v"):
    game: str
    phase: int
    approve: bool


class CardCb(CallbackData, prefix="c"):
    game: str
    phase: int
    card: str


class TargetCb(CallbackData, prefix="t"):
    """A private choice with a target: kind (e: Excalibur, l: Lady, a: assassinate, c: accuse,
    h: hand the shot, x: sword holder while proposing); index in the offered targets, -1 for none."""

    game: str
    phase: int
    kind: str
    index: int


class SeatCb(CallbackData, prefix="o"):
    """Take the open seat ``seat`` (from 0) of ``game``: whoever holds it when pressed is replaced."""

    game: str
    seat: int
