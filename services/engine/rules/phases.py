"""The phase table: one entry per phase, with everything that is the phase's own.

The lobby and the two ends are here; the round's phases are in
``round_phases`` and the endgame's in ``endgame_phases``. What an entry holds
is described in ``phase_rules``.
"""

from __future__ import annotations

from avalon.shared.game.model import Phase
from .endgame_phases import ENDGAME_PHASES
from .phase_rules import CANCEL, K, Legal, PhaseRules
from .round_phases import ROUND_PHASES
from .state import GameState

_JOIN = (Legal(K.JOIN),)
_LEAVE = (Legal(K.LEAVE),)
_HOST = (Legal(K.CHANGE_OPTIONS), Legal(K.START_GAME), CANCEL)


def _lobby_offers(s: GameState, player: str) -> tuple[Legal, ...]:
    if player not in s.players:
        return _JOIN
    return _HOST if player == s.host else _LEAVE


def _nothing(s: GameState, player: str) -> tuple[Legal, ...]:
    return ()


LOBBY = PhaseRules(
    accepts=frozenset({K.JOIN, K.LEAVE, K.CHANGE_OPTIONS, K.START_GAME, K.CANCEL_GAME}),
    offers=_lobby_offers,
)
OVER = PhaseRules(accepts=frozenset(), offers=_nothing)  # a game that ended or was cancelled takes nothing

PHASES: dict[Phase, PhaseRules] = {
    Phase.LOBBY: LOBBY,
    **ROUND_PHASES,
    **ENDGAME_PHASES,
    Phase.ENDED: OVER,
    Phase.CANCELLED: OVER,
}
