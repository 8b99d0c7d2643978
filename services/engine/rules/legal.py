"""The phase table: who may act in each phase and with which commands.

``decide`` validates against it and ``legal_commands`` derives from it, so the
buttons a gateway shows are exactly the commands the engine accepts.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.game.model import Card, CommandKind, Hammer, Lancelot, MissedRule, MissedVote, Phase, Team
from .state import GameState
from shared.game.numbers import PROPOSALS_PER_QUEST, quest_size

K = CommandKind
_ALWAYS = frozenset({K.CANCEL_GAME, K.PHASE_TIMED_OUT})

ACCEPTS: dict[Phase, frozenset[CommandKind]] = {
    Phase.LOBBY: frozenset({K.JOIN, K.LEAVE, K.CHANGE_OPTIONS, K.START_GAME, K.CANCEL_GAME}),
    Phase.PROPOSAL: _ALWAYS | {K.PROPOSE_TEAM},
    Phase.VOTE: _ALWAYS | {K.CAST_VOTE},
    Phase.QUEST: _ALWAYS | {K.PLAY_CARD},
    Phase.EXCALIBUR: _ALWAYS | {K.USE_EXCALIBUR},
    Phase.LADY: _ALWAYS | {K.USE_LADY},
    Phase.ASSASSINATION: _ALWAYS | {K.CONFER, K.HAND_SHOT, K.ACCUSE, K.ASSASSINATE},
    Phase.LAST_WORD: _ALWAYS | {K.SPEAK_LAST_WORD, K.CONFER},
    Phase.ENDED: frozenset(),
    Phase.CANCELLED: frozenset(),
}


def actors(s: GameState, phase: Phase | None = None, leader: int = -1) -> tuple[int, ...]:
    """The seats the open phase (or ``phase``, about to open) is waiting for."""
    phase = s.phase if phase is None else phase
    if phase is Phase.PROPOSAL:
        return (s.leader if leader < 0 else leader,)
    if phase is Phase.VOTE:
        votes = s.votes
        return tuple(i for i in range(len(s.players)) if i not in votes)
    if phase is Phase.QUEST:
        cards = s.cards
        return tuple(i for i in s.team if i not in cards)
    if phase is Phase.EXCALIBUR:
        return (s.excalibur,)
    if phase is Phase.LADY:
        return (s.lady_holder,)
    if phase is Phase.ASSASSINATION:
        return (s.shooter,)
    if phase is Phase.LAST_WORD:
        return (s.accused,)
    return ()


def missed_rule(s: GameState, phase: Phase) -> MissedRule:
    """What a missed deadline in ``phase`` will do (docs/rules.md section 7)."""
    o = s.options
    if phase is Phase.PROPOSAL:
        if o.hammer is Hammer.FORUM:
            return MissedRule.PROPOSAL_CANCELLED
        if o.hammer is Hammer.ONLINE and is_auto_approved(s):
            return MissedRule.PROPOSAL_CANCELLED  # the fifth proposal cannot be rejected
        return MissedRule.PROPOSAL_COUNTS_AS_REJECTION
    if phase is Phase.VOTE:
        return MissedRule.VOTE_COUNTS_AS_REJECT if o.missed_vote is MissedVote.REJECT else MissedRule.VOTE_NOT_COUNTED
    if phase is Phase.QUEST:
        if o.lancelot is Lancelot.V2:
            return MissedRule.CARD_COUNTS_AS_SUCCESS_LANCELOT_FAILS
        return MissedRule.CARD_COUNTS_AS_SUCCESS
    if phase is Phase.EXCALIBUR:
        return MissedRule.EXCALIBUR_NOT_USED
    if phase is Phase.LADY:
        return MissedRule.LADY_NOT_USED
    if phase is Phase.ASSASSINATION:
        return MissedRule.ACCUSED_IS_SHOT if s.accused >= 0 else MissedRule.SHOT_FORFEITED
    if phase is Phase.LAST_WORD:
        return MissedRule.LAST_WORD_SKIPPED
    return MissedRule.NONE


def is_auto_approved(s: GameState) -> bool:
    """Online hammer: the fifth proposal of a quest goes straight to the quest."""
    return s.options.hammer is Hammer.ONLINE and s.vote_track >= PROPOSALS_PER_QUEST - 1


def lady_targets(s: GameState) -> tuple[int, ...]:
    past = s.lady_past
    return tuple(i for i in range(len(s.players)) if i not in past)


@dataclass(frozen=True, slots=True)
class Legal:
    """One command a player may send now, with the choices it takes.

    ``targets``: the players that may be picked; ``count``: how many (a team);
    ``cards``: the quest cards allowed; ``excalibur``: the proposal must also
    hand Excalibur to a team member other than the leader; ``optional``: the
    command may name no target (leave Excalibur sheathed).
    """

    kind: CommandKind
    targets: tuple[str, ...] = ()
    count: int = 0
    cards: tuple[Card, ...] = ()
    excalibur: bool = False
    optional: bool = False


_CANCEL = Legal(K.CANCEL_GAME)
_VOTE = Legal(K.CAST_VOTE)
_CONFER = Legal(K.CONFER)
_LAST_WORD = Legal(K.SPEAK_LAST_WORD)
_CARDS = {cards: Legal(K.PLAY_CARD, cards=cards)
          for cards in ((Card.SUCCESS,), (Card.FAIL,), (Card.SUCCESS, Card.FAIL))}


def legal_commands(s: GameState, player: str | None) -> tuple[Legal, ...]:
    """What ``player`` may do now; the gateways build their buttons from it."""
    if player is None or s.phase is None or s.over:
        return ()
    phase = s.phase
    if phase is Phase.LOBBY:
        if player not in s.players:
            return (Legal(K.JOIN),)
        out = [] if player == s.host else [Legal(K.LEAVE)]
        if player == s.host:
            out += [Legal(K.CHANGE_OPTIONS), Legal(K.START_GAME), Legal(K.CANCEL_GAME)]
        return tuple(out)
    seat = s.seat_of.get(player)
    out: list[Legal] = [_CANCEL] if player == s.host else []
    if seat is None:
        return tuple(out)
    names = s.players
    if phase is Phase.PROPOSAL and seat == s.leader:
        out.append(Legal(K.PROPOSE_TEAM, targets=names, count=quest_size(len(names), s.quest),
                         excalibur=s.options.excalibur))
    elif phase is Phase.VOTE and seat not in s.votes:
        out.append(_VOTE)
    elif phase is Phase.QUEST and seat in s.team and seat not in s.cards:
        out.append(_CARDS[s.allowed_cards(seat)])
    elif phase is Phase.EXCALIBUR and seat == s.excalibur:
        targets = tuple(names[i] for i in s.team if i != seat)
        out.append(Legal(K.USE_EXCALIBUR, targets=targets, optional=True))
    elif phase is Phase.LADY and seat == s.lady_holder:
        out.append(Legal(K.USE_LADY, targets=tuple(names[i] for i in lady_targets(s))))
    elif phase is Phase.ASSASSINATION and s.team_of(seat) is Team.EVIL:
        out.append(_CONFER)
        if seat == s.shooter:
            targets = tuple(p for i, p in enumerate(names) if s.team_of(i) is Team.GOOD)
            if s.options.last_word and s.accused < 0:
                out.append(Legal(K.ACCUSE, targets=targets))
            else:
                out.append(Legal(K.ASSASSINATE, targets=targets))
            if s.options.assassin_may_delegate and not s.shot_handed and s.accused < 0:
                others = tuple(names[i] for i in s.evil_seats() if i != seat)
                if others:
                    out.append(Legal(K.HAND_SHOT, targets=others))
    elif phase is Phase.LAST_WORD:
        if seat == s.accused:
            out.append(_LAST_WORD)
        if s.team_of(seat) is Team.EVIL:
            out.append(_CONFER)
    return tuple(out)


def pending_players(s: GameState) -> tuple[str, ...]:
    """The players the open phase waits for, by id."""
    names = s.players
    return tuple(names[i] for i in actors(s))
