"""Ids between Telegram and the engine: players are ``tg:<user id>``; a group's game is
``tg<chat id>_<n>`` (no colon: button data uses colons), so the group is read off the id. The group
is the game's table, ``tg<chat id>``, and a question about the record of finished games asked in a
chat goes under ``tg<chat id>_records``, so the answer comes back to this gateway (a game it serves)."""

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


def table(chat_id: int) -> str:
    """The table a group's games are counted at in the record of finished games."""
    return f"tg{chat_id}"


def records_game(chat_id: int) -> str:
    """The game id a question about the records asked in ``chat_id`` goes under (its answer comes back on it)."""
    return f"tg{chat_id}_records"
