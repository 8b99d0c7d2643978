"""Small helpers shared by the ``test_rules_*`` scenario tests (docs/rules.md §1-4, §9).

They only read a ``gamekit.Game``; they never change how it plays.
"""

from __future__ import annotations

from collections import Counter

from avalon.services.engine.rules import Audience, AudienceKind
from avalon.shared.game.events import GameStarted, RoleAssigned
from avalon.shared.game.model import Knowledge, Phase, Team
from avalon.services.engine.rules.view import view

from tests.unit.gamekit import Game

__all__ = [
    "Game", "started", "assigned", "night", "night_in_view", "team_counts", "team_with",
    "win_three", "to_assassination", "shooter", "only_to",
]


def started(g: Game) -> GameStarted:
    return g.events(GameStarted)[-1]


def assigned(g: Game) -> dict[str, RoleAssigned]:
    """Every player's private RoleAssigned event, by player."""
    return {e.player: e for e in g.events(RoleAssigned)}


def night(g: Game, player: str) -> dict[str, Knowledge]:
    """What ``player`` learned in the night, as told by his RoleAssigned event."""
    return dict(assigned(g)[player].knowledge)


def night_in_view(g: Game, player: str) -> dict[str, Knowledge]:
    """What ``player`` learned in the night, as his own view shows it."""
    return dict(view(g.state, player).knowledge)


def team_counts(roles) -> tuple[int, int]:
    c = Counter(r.team for r in roles)
    return c[Team.GOOD], c[Team.EVIL]


def team_with(g: Game, evil: int = 0, evil_players=None) -> tuple[str, ...]:
    """A team of the current quest's size: ``evil`` evil players first, then good ones."""
    bad = list(evil_players) if evil_players is not None else g.evil()[:evil]
    assert evil_players is not None or len(bad) == evil, "not enough evil players"
    good = g.good()[: g.size() - len(bad)]
    team = tuple(bad + good)
    assert len(team) == g.size()
    return team


def win_three(g: Game) -> None:
    for _ in range(3):
        g.win_quest()


def to_assassination(g: Game) -> None:
    """Three successful quests: the game must now be in the assassination."""
    win_three(g)
    assert g.phase is Phase.ASSASSINATION


def shooter(g: Game) -> str:
    return g.seats[g.state.shooter]


def only_to(players) -> Audience:
    return Audience(AudienceKind.PLAYERS, tuple(players))
