"""The protocol's messages about the record of finished games (``shared/protocol.py`` lists them with
the others): what a person asks (their stats or another's, a table's leaderboard and history, to hide
their stats, to be forgotten) and the engine's answers, each to the one who asked alone and outside
any game's stream (``seq`` 0), like the board.

A table is the group games are played in, as its channel named it when it opened them
(``create_game``'s ``table``; a game opened without one is its host's table, named by the host's id).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from avalon.shared.game.model import Role, Team, WinCause

#: A person's or a table's id, as the engine keeps them.
MAX_KEY = 200


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# -- commands ---------------------------------------------------------------------------------------

class ShowStats(_Body):
    """A person's record (``player``; none: the actor's own): the engine answers ``stats_shown``, or
    refuses a person it does not know (``unknown_person``) and another's hidden stats (``hidden_stats``)."""

    type: Literal["show_stats"] = "show_stats"
    player: str | None = Field(default=None, min_length=1, max_length=MAX_KEY)


class ShowLeaderboard(_Body):
    """A table's players (``table``), or a host's (``host``: the players of the games they hosted), with
    at least ``min_games`` finished games there, most wins first: the engine answers
    ``leaderboard_shown`` (who hid their stats is left out). One of ``table`` and ``host``."""

    type: Literal["show_leaderboard"] = "show_leaderboard"
    table: str | None = Field(default=None, min_length=1, max_length=MAX_KEY)
    host: str | None = Field(default=None, min_length=1, max_length=MAX_KEY)
    min_games: int = Field(default=3, ge=1, le=1000)

    @model_validator(mode="after")
    def _one_board(self) -> "ShowLeaderboard":
        if (self.table is None) == (self.host is None):
            raise ValueError("show_leaderboard names a table or a host (one of them)")
        return self


class ShowHistory(_Body):
    """A table's last ``count`` finished games, each with its code, end, winner and roles: the engine
    answers ``history_shown``."""

    type: Literal["show_history"] = "show_history"
    table: str = Field(min_length=1, max_length=MAX_KEY)
    count: int = Field(default=10, ge=1, le=50)


class HideStats(_Body):
    """The actor's stats hidden from others (``hidden`` false: shown again): they leave the
    leaderboards, and another's ``show_stats`` of them is refused. The engine answers ``stats_hidden``."""

    type: Literal["hide_stats"] = "hide_stats"
    hidden: bool = True


class ForgetMe(_Body):
    """Every record of the actor's finished games deleted (their later games count again): the engine
    answers ``records_forgotten``. The games' own event log is kept."""

    type: Literal["forget_me"] = "forget_me"


RECORD_COMMANDS: dict[str, type[BaseModel]] = {
    "show_stats": ShowStats, "show_leaderboard": ShowLeaderboard, "show_history": ShowHistory,
    "hide_stats": HideStats, "forget_me": ForgetMe,
}


# -- events -----------------------------------------------------------------------------------------

class RoleLine(_Body):
    role: Role
    games: int
    wins: int


class TeamLine(_Body):
    team: Team
    games: int
    wins: int


class SizeLine(_Body):
    players: int  # the table's size
    games: int
    wins: int


class StatsShown(_Body):
    """A person's finished games, to the one who asked: games and wins in all, by role, by final team
    and by the table's size; Merlin's games that came to the Assassin's shot and how many they
    survived; the Assassin's shots and hits."""

    type: Literal["stats_shown"] = "stats_shown"
    player: str
    hidden: bool = False  # they hid their stats from others (only they are shown them then)
    games: int
    wins: int
    by_role: tuple[RoleLine, ...] = ()
    by_team: tuple[TeamLine, ...] = ()
    by_size: tuple[SizeLine, ...] = ()
    merlin_shot_at: int = 0
    merlin_survived: int = 0
    assassin_shots: int = 0
    assassin_hits: int = 0


class Leader(_Body):
    player: str
    games: int
    wins: int


class LeaderboardShown(_Body):
    type: Literal["leaderboard_shown"] = "leaderboard_shown"
    table: str | None = None
    host: str | None = None  # a host's leaderboard: the games they hosted
    min_games: int
    leaders: tuple[Leader, ...]


class PastGame(_Body):
    code: str  # the game's code (``avalon export`` takes it)
    ended_at: datetime
    players: int
    winner: Team
    cause: WinCause
    roles: tuple[tuple[str, Role], ...]  # by seat; a forgotten person is left out


class HistoryShown(_Body):
    type: Literal["history_shown"] = "history_shown"
    table: str
    games: tuple[PastGame, ...]


class StatsHidden(_Body):
    type: Literal["stats_hidden"] = "stats_hidden"
    player: str
    hidden: bool


class RecordsForgotten(_Body):
    type: Literal["records_forgotten"] = "records_forgotten"
    player: str
    games: int  # how many finished games' records were deleted


RECORD_EVENTS: dict[str, type[BaseModel]] = {
    "stats_shown": StatsShown, "leaderboard_shown": LeaderboardShown, "history_shown": HistoryShown,
    "stats_hidden": StatsHidden, "records_forgotten": RecordsForgotten,
}
#: The reasons a record's command is refused with, besides the rules' own.
RECORD_REASONS = ("unknown_person", "hidden_stats")
