"""Ids between Telegram and the engine: players are ``tg:<user id>``; a group's game is
``tg<chat id>_<n>`` (no colon: button data uses colons), so the group is read off the id."""

from __future__ import annotations

PREFIX = "tg:"


def player_id(user_id: int) -> str:
    return f"{PREFIX}{user_id}"


def user_id(player: str) -> int | None:
    if not player.startswith(PREFIX):
        return None
    try:
        return int(player[len(PREFIX):])
    except ValueError:
        return None


def game_id(chat_id: int, n: int) -> str:
    return f"tg{chat_id}_{n}"


def chat_of(game: str) -> int | None:
    if not game.startswith("tg") or "_" not in game:
        return None
    try:
        return int(game[2:].rsplit("_", 1)[0])
    except ValueError:
        return None
