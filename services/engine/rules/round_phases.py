"""The phases of a round in the phase table: the proposal, the vote, the quest,
Excalibur and the Lady of the Lake (docs/rules.md sections 3, 5, 6 and 7)."""

from __future__ import annotations

from avalon.shared.game import events as ev
from avalon.shared.game.model import Card, Hammer, Lancelot, MissedRule, MissedVote, Phase
from avalon.shared.game.numbers import quest_size
from .flow import Tx, after_lady
from .phase_rules import IN_GAME, K, Legal, PhaseRules, always, in_game
from .rounds import after_cards, next_proposal, resolve_quest, resolve_vote
from .state import GameState

_VOTE = (Legal(K.CAST_VOTE),)
_CARDS = {cards: (Legal(K.PLAY_CARD, cards=cards),)
          for cards in ((Card.SUCCESS,), (Card.FAIL,), (Card.SUCCESS, Card.FAIL))}


# -- the proposal: the leader picks a team ---------------------------------------

def the_leader(s: GameState, leader: int) -> tuple[int, ...]:
    return (leader,)


def _propose(s: GameState, seat: int) -> tuple[Legal, ...]:
    if seat != s.leader:
        return ()
    names = s.players
    return (Legal(K.PROPOSE_TEAM, targets=names, count=quest_size(len(names), s.quest),
                  excalibur=s.options.excalibur),)


def _proposal_missed_rule(s: GameState) -> MissedRule:
    hammer = s.options.hammer
    if hammer is Hammer.FORUM:
        return MissedRule.PROPOSAL_CANCELLED
    if hammer is Hammer.ONLINE and s.is_auto_approved():
        return MissedRule.PROPOSAL_CANCELLED  # the fifth proposal cannot be rejected
    return MissedRule.PROPOSAL_COUNTS_AS_REJECTION


def _proposal_missed(tx: Tx, missing: tuple[int, ...]) -> None:
    s = tx.s
    counts = s.missed_rule is MissedRule.PROPOSAL_COUNTS_AS_REJECTION
    tx.emit(ev.ProposalMissed(quest=s.quest, leader=tx.name(s.leader), counts_as_rejection=counts,
                              vote_track=s.vote_track + (1 if counts else 0)))
    next_proposal(tx)


PROPOSAL = PhaseRules(
    accepts=IN_GAME | {K.PROPOSE_TEAM},
    actors=the_leader,
    offers=in_game(_propose),
    timer="proposal",
    missed_rule=_proposal_missed_rule,
    on_timeout=_proposal_missed,
)


# -- the vote: every player once -------------------------------------------------

def every_player_once(s: GameState, leader: int) -> tuple[int, ...]:
    votes = s.votes
    return tuple(i for i in range(len(s.players)) if i not in votes)


def _vote(s: GameState, seat: int) -> tuple[Legal, ...]:
    return () if seat in s.votes else _VOTE


def _vote_missed_rule(s: GameState) -> MissedRule:
    if s.options.missed_vote is MissedVote.REJECT:
        return MissedRule.VOTE_COUNTS_AS_REJECT
    return MissedRule.VOTE_NOT_COUNTED


VOTE = PhaseRules(
    accepts=IN_GAME | {K.CAST_VOTE},
    actors=every_player_once,
    offers=in_game(_vote),
    timer="vote",
    missed_rule=_vote_missed_rule,
    on_timeout=lambda tx, missing: resolve_vote(tx),  # a silent voter counts as the missed_vote option says
)


# -- the quest: each team member once ----------------------------------------------

def each_team_member_once(s: GameState, leader: int) -> tuple[int, ...]:
    cards = s.cards
    return tuple(i for i in s.team if i not in cards)


def _play_card(s: GameState, seat: int) -> tuple[Legal, ...]:
    if seat not in s.team or seat in s.cards:
        return ()
    return _CARDS[s.allowed_cards(seat)]


def _quest_missed_rule(s: GameState) -> MissedRule:
    if s.options.lancelot is Lancelot.V2:
        return MissedRule.CARD_COUNTS_AS_SUCCESS_LANCELOT_FAILS
    return MissedRule.CARD_COUNTS_AS_SUCCESS


def _cards_missed(tx: Tx, missing: tuple[int, ...]) -> None:
    s = tx.s
    if missing:
        # a silent member's card counts as success, unless success is not his to play
        filled = tuple((tx.name(i), Card.SUCCESS if Card.SUCCESS in s.allowed_cards(i) else Card.FAIL)
                       for i in missing)
        tx.emit(ev.MissedCardsCounted(cards=filled))
    after_cards(tx)


QUEST = PhaseRules(
    accepts=IN_GAME | {K.PLAY_CARD},
    actors=each_team_member_once,
    offers=in_game(_play_card),
    timer="quest",
    missed_rule=_quest_missed_rule,
    on_timeout=_cards_missed,
)


# -- Excalibur: its holder may flip one card -----------------------------------------

def the_excalibur_holder(s: GameState, leader: int) -> tuple[int, ...]:
    return (s.excalibur,)


def _use_excalibur(s: GameState, seat: int) -> tuple[Legal, ...]:
    if seat != s.excalibur:
        return ()
    names = s.players
    targets = tuple(names[i] for i in s.team if i != seat)
    return (Legal(K.USE_EXCALIBUR, targets=targets, optional=True),)


EXCALIBUR = PhaseRules(
    accepts=IN_GAME | {K.USE_EXCALIBUR},
    actors=the_excalibur_holder,
    offers=in_game(_use_excalibur),
    timer="excalibur",
    missed_rule=always(MissedRule.EXCALIBUR_NOT_USED),
    on_timeout=lambda tx, missing: resolve_quest(tx, None),
)


# -- the Lady of the Lake: her holder examines one player ---------------------------

def the_ladys_holder(s: GameState, leader: int) -> tuple[int, ...]:
    return (s.lady_holder,)


def _use_lady(s: GameState, seat: int) -> tuple[Legal, ...]:
    if seat != s.lady_holder:
        return ()
    names = s.players
    return (Legal(K.USE_LADY, targets=tuple(names[i] for i in s.lady_targets())),)


def _lady_missed(tx: Tx, missing: tuple[int, ...]) -> None:
    tx.emit(ev.LadyNotUsed(holder=tx.name(tx.s.lady_holder)))
    after_lady(tx)


LADY = PhaseRules(
    accepts=IN_GAME | {K.USE_LADY},
    actors=the_ladys_holder,
    offers=in_game(_use_lady),
    timer="lady",
    missed_rule=always(MissedRule.LADY_NOT_USED),
    on_timeout=_lady_missed,
)

ROUND_PHASES = {
    Phase.PROPOSAL: PROPOSAL,
    Phase.VOTE: VOTE,
    Phase.QUEST: QUEST,
    Phase.EXCALIBUR: EXCALIBUR,
    Phase.LADY: LADY,
}
