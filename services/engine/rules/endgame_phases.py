"""The phases after three successful quests in the phase table: the
assassination (with its conference) and the accused's last word
(docs/rules.md sections 4 and 7)."""

from __future__ import annotations

from avalon.shared.game.model import Conference, MissedRule, Phase, Team, WinCause
from .endgame import shoot
from .flow import Tx, end_game, open_phase
from .phase_rules import IN_GAME, K, Legal, PhaseRules, always, in_game
from .state import GameState

_CONFER = Legal(K.CONFER)
_LAST_WORD = Legal(K.SPEAK_LAST_WORD)


# -- the assassination: the shooter aims, the evil team confers -----------------------

def the_shooter(s: GameState, leader: int) -> tuple[int, ...]:
    return (s.shooter,)


def _shooter_is_secret(s: GameState) -> bool:
    return s.options.conference is Conference.PRIVATE  # only the evil team knows who holds the shot


def _shoot_or_confer(s: GameState, seat: int) -> tuple[Legal, ...]:
    if s.team_of(seat) is not Team.EVIL:
        return ()
    if seat != s.shooter:
        return (_CONFER,)
    names = s.players
    targets = tuple(p for i, p in enumerate(names) if s.team_of(i) is Team.GOOD)
    out = [_CONFER]
    if s.options.last_word and s.accused < 0:
        out.append(Legal(K.ACCUSE, targets=targets))
    else:
        out.append(Legal(K.ASSASSINATE, targets=targets))
    if s.options.assassin_may_delegate and not s.shot_handed and s.accused < 0:
        others = tuple(names[i] for i in s.evil_seats() if i != seat)
        if others:
            out.append(Legal(K.HAND_SHOT, targets=others))
    return tuple(out)


def _shot_missed_rule(s: GameState) -> MissedRule:
    return MissedRule.ACCUSED_IS_SHOT if s.accused >= 0 else MissedRule.SHOT_FORFEITED


def _shot_missed(tx: Tx, missing: tuple[int, ...]) -> None:
    s = tx.s
    if s.accused >= 0:
        shoot(tx, s.accused)
    else:
        end_game(tx, Team.GOOD, WinCause.SHOT_FORFEITED)


ASSASSINATION = PhaseRules(
    accepts=IN_GAME | {K.CONFER, K.HAND_SHOT, K.ACCUSE, K.ASSASSINATE},
    actors=the_shooter,
    actors_hidden=_shooter_is_secret,
    offers=in_game(_shoot_or_confer),
    timer="assassination",
    missed_rule=_shot_missed_rule,
    on_timeout=_shot_missed,
)


# -- the last word: the accused speaks before the final shot ---------------------------

def the_accused(s: GameState, leader: int) -> tuple[int, ...]:
    return (s.accused,)


def _speak_or_confer(s: GameState, seat: int) -> tuple[Legal, ...]:
    speaks = seat == s.accused
    confers = s.team_of(seat) is Team.EVIL
    if speaks:
        return (_LAST_WORD, _CONFER) if confers else (_LAST_WORD,)
    return (_CONFER,) if confers else ()


LAST_WORD = PhaseRules(
    accepts=IN_GAME | {K.SPEAK_LAST_WORD, K.CONFER},
    actors=the_accused,
    offers=in_game(_speak_or_confer),
    timer="last_word",
    missed_rule=always(MissedRule.LAST_WORD_SKIPPED),
    on_timeout=lambda tx, missing: open_phase(tx, Phase.ASSASSINATION),  # skipped: the final shot follows
)

ENDGAME_PHASES = {
    Phase.ASSASSINATION: ASSASSINATION,
    Phase.LAST_WORD: LAST_WORD,
}
