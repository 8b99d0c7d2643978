"""A missed deadline: each phase resolves by the rule in force (docs/rules.md section 7)."""

from __future__ import annotations

from shared.game import commands as cmd
from shared.game import events as ev
from shared.game.errors import Rejection
from .flow import Tx, after_lady, end_game, open_phase
from .legal import actors
from shared.game.model import Card, MissedRule, Phase, Team, WinCause
from .rounds import after_cards, next_proposal, resolve_quest, resolve_vote
from .endgame import shoot


def timed_out(tx: Tx, c: cmd.PhaseTimedOut) -> Rejection | None:
    s = tx.s
    if c.phase_id != s.phase_id or s.over or s.phase is Phase.LOBBY:
        return None  # stale: that phase is already over; nothing changes
    phase = s.phase
    rule = s.missed_rule
    missing = actors(s)
    if missing or phase is not Phase.VOTE and phase is not Phase.QUEST:
        tx.emit(ev.DeadlineMissed(phase=phase, phase_id=s.phase_id, missing=tx.names(missing), rule=rule))
    if phase is Phase.PROPOSAL:
        counts = rule is MissedRule.PROPOSAL_COUNTS_AS_REJECTION
        tx.emit(ev.ProposalMissed(quest=s.quest, leader=tx.name(s.leader), counts_as_rejection=counts,
                                  vote_track=s.vote_track + (1 if counts else 0)))
        next_proposal(tx)
    elif phase is Phase.VOTE:
        resolve_vote(tx)
    elif phase is Phase.QUEST:
        if missing:
            # a silent member's card counts as success, unless success is not his to play
            filled = tuple((tx.name(i), Card.SUCCESS if Card.SUCCESS in s.allowed_cards(i) else Card.FAIL)
                           for i in missing)
            tx.emit(ev.MissedCardsCounted(cards=filled))
        after_cards(tx)
    elif phase is Phase.EXCALIBUR:
        resolve_quest(tx, None)
    elif phase is Phase.LADY:
        tx.emit(ev.LadyNotUsed(holder=tx.name(s.lady_holder)))
        after_lady(tx)
    elif phase is Phase.ASSASSINATION:
        if s.accused >= 0:
            shoot(tx, s.accused)
        else:
            end_game(tx, Team.GOOD, WinCause.SHOT_FORFEITED)
    elif phase is Phase.LAST_WORD:
        open_phase(tx, Phase.ASSASSINATION)
    return None
