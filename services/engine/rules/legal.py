"""What a player may do now, and whom the open phase waits for, read from the phase table.

``decide`` validates against the same table, so the buttons a gateway shows
are exactly the commands the engine accepts.
"""

from __future__ import annotations

from avalon.shared.game.model import CommandKind, Phase
from .phase_rules import Legal
from .phases import PHASES
from .state import GameState

__all__ = ["ACCEPTS", "Legal", "legal_commands", "pending_players"]

#: The command kinds each phase accepts (the table's ``accepts``, by phase).
ACCEPTS: dict[Phase, frozenset[CommandKind]] = {phase: rules.accepts for phase, rules in PHASES.items()}


def legal_commands(s: GameState, player: str | None) -> tuple[Legal, ...]:
    """What ``player`` may do now; the gateways build their buttons from it."""
    if player is None or s.phase is None or s.over:
        return ()
    return PHASES[s.phase].offers(s, player)


def pending_players(s: GameState) -> tuple[str, ...]:
    """The players the open phase waits for, by id."""
    if s.phase is None:
        return ()
    names = s.players
    return tuple(names[i] for i in PHASES[s.phase].actors(s, s.leader))
