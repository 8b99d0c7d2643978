"""The board (``show_board``'s answer, ``shared/protocol.py`` lists it with the others): the public state
of a game, to the one who asked alone and outside the game's stream (``seq`` 0).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from avalon.shared.game.model import Phase


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class QuestLine(_Body):
    quest: int
    fails: int
    failed: bool


class BoardShown(_Body):
    """The public board, for the one who asked: quest track, vote track, leader, team, deadline, and the
    people around the table: missed deadlines, open seats, a pause."""

    type: Literal["board_shown"] = "board_shown"
    phase: Phase | None
    phase_id: int
    players: tuple[str, ...]
    leader: str | None
    quest: int
    vote_track: int
    quest_sizes: tuple[int, ...]
    fails_needed: tuple[int, ...]
    quest_results: tuple[QuestLine, ...]
    team: tuple[str, ...]
    excalibur_holder: str | None
    lady_holder: str | None
    waiting_for: tuple[str, ...]
    deadline_at: datetime | None = None
    #: by seat, in the order of ``players``: the deadlines each has missed in a row (older engines: none)
    missed: tuple[int, ...] = ()
    open_seats: tuple[str, ...] = ()  # the players whose seats are open for a substitute
    paused: bool = False
