"""Excalibur (docs/rules.md section 6; ru, nl and fr seeds).

The leader hands Excalibur with the proposal to a team member other than
himself; once every card is played its holder may flip another member's card,
learning privately what it was; the announcement says the counts and on whom.
"""

from __future__ import annotations

import pytest

from avalon.services.engine.rules import (
    Audience,
    AudienceKind,
    PlayCard,
    ProposeTeam,
    UseExcalibur,
    legal_commands,
    view,
)
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason
from avalon.shared.game.model import Card, CommandKind, Phase, Team

from .gamekit import Game


# -- small helpers -------------------------------------------------------------

def opened(events, phase: Phase | None = None) -> list[ev.PhaseOpened]:
    return [e for e in events if isinstance(e, ev.PhaseOpened) and (phase is None or e.phase is phase)]


def two_member_team(g: Game, holder_team: Team, other_team: Team) -> tuple[str, str]:
    """(holder, other) for quest 1 (two seats at 5 players): the holder is not the leader."""
    pool = g.good() if holder_team is Team.GOOD else g.evil()
    holder = next(p for p in pool if p != g.leader)
    others = g.good() if other_team is Team.GOOD else g.evil()
    other = next(p for p in others if p != holder)
    return holder, other


def to_excalibur_phase(g: Game, holder: str, other: str, cards: dict) -> list:
    """Propose (holder, other) with Excalibur to ``holder``, approve, play ``cards``."""
    g.propose((holder, other), excalibur=holder)
    g.vote_all(True)
    return g.play_all(cards)


# -- the proposal ----------------------------------------------------------------

def test_proposal_without_excalibur_is_refused_when_excalibur_is_in_play():
    """docs/rules.md §6: the leader hands Excalibur with the proposal."""
    g = Game(players=5, excalibur=True)
    team = g.good_team()
    g.refuse(ProposeTeam(actor=g.leader, team=team, excalibur=None), Reason.EXCALIBUR_REQUIRED)


def test_leader_cannot_hand_excalibur_to_himself():
    """docs/rules.md §6: Excalibur goes to a team member other than the leader."""
    g = Game(players=5, excalibur=True)
    lead = g.leader
    team = (lead, next(p for p in g.seats if p != lead))
    g.refuse(ProposeTeam(actor=lead, team=team, excalibur=lead), Reason.EXCALIBUR_INVALID_HOLDER)


def test_excalibur_cannot_go_to_a_player_outside_the_team():
    """docs/rules.md §6: Excalibur goes to a member of the proposed team."""
    g = Game(players=5, excalibur=True)
    lead = g.leader
    others = [p for p in g.seats if p != lead]
    team = (others[0], others[1])
    g.refuse(ProposeTeam(actor=lead, team=team, excalibur=others[2]), Reason.EXCALIBUR_INVALID_HOLDER)
    g.refuse(ProposeTeam(actor=lead, team=team, excalibur="stranger"), Reason.EXCALIBUR_INVALID_HOLDER)


def test_excalibur_cannot_be_handed_when_it_is_not_in_play():
    """docs/rules.md §6: Excalibur is optional; off, a proposal naming a holder is refused."""
    g = Game(players=5, excalibur=False)
    lead = g.leader
    team = (lead, next(p for p in g.seats if p != lead))
    g.refuse(ProposeTeam(actor=lead, team=team, excalibur=team[1]), Reason.EXCALIBUR_NOT_IN_PLAY)


def test_proposal_publicly_names_the_excalibur_holder_and_the_leader_is_told_to_hand_it():
    """docs/rules.md §6: the proposal says who receives Excalibur; the leader's buttons ask for it."""
    g = Game(players=5, excalibur=True)
    legal = [l for l in legal_commands(g.state, g.leader) if l.kind is CommandKind.PROPOSE_TEAM][0]
    assert legal.excalibur is True
    holder, other = two_member_team(g, Team.GOOD, Team.EVIL)
    events = g.propose((holder, other), excalibur=holder)
    proposed = [e for e in events if isinstance(e, ev.TeamProposed)][0]
    assert proposed.audience.kind is AudienceKind.PUBLIC
    assert proposed.excalibur == holder
    assert view(g.state, None).excalibur_holder == holder


def test_the_leader_may_hand_excalibur_when_he_is_not_on_the_team():
    """docs/rules.md §6: any team member other than the leader may receive it."""
    g = Game(players=5, excalibur=True)
    lead = g.leader
    others = [p for p in g.seats if p != lead]
    g.do(ProposeTeam(actor=lead, team=(others[0], others[1]), excalibur=others[1]))
    assert g.phase is Phase.VOTE


# -- after the cards -------------------------------------------------------------

def test_excalibur_phase_opens_for_the_holder_once_every_card_is_played():
    """docs/rules.md §6: once every card is played, the holder may use Excalibur; no result before."""
    g = Game(players=5, excalibur=True)
    holder, other = two_member_team(g, Team.GOOD, Team.EVIL)
    g.propose((holder, other), excalibur=holder)
    g.vote_all(True)
    g.do(PlayCard(actor=holder, card=Card.SUCCESS))
    assert g.phase is Phase.QUEST  # one card is still missing
    last = g.do(PlayCard(actor=other, card=Card.FAIL))
    phase = opened(last, Phase.EXCALIBUR)
    assert len(phase) == 1 and phase[0].actors == (holder,)
    assert not [e for e in last if isinstance(e, ev.QuestResolved)]
    assert g.phase is Phase.EXCALIBUR
    legal = [l for l in legal_commands(g.state, holder) if l.kind is CommandKind.USE_EXCALIBUR]
    assert len(legal) == 1
    assert legal[0].targets == (other,)
    assert legal[0].optional is True
    assert not [l for l in legal_commands(g.state, other) if l.kind is CommandKind.USE_EXCALIBUR]


def test_excalibur_on_a_fail_card_turns_it_into_a_success_and_saves_the_quest():
    """docs/rules.md §6: the target's card is flipped (fail -> success), which changes the result."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {evil: Card.FAIL})
    events = g.do(UseExcalibur(actor=holder, target=evil))
    resolved = g.last_of(ev.QuestResolved)
    assert (resolved.successes, resolved.fails, resolved.failed) == (2, 0, False)
    assert resolved.excalibur_holder == holder
    assert resolved.excalibur_target == evil
    assert resolved.audience.kind is AudienceKind.PUBLIC
    used = [e for e in events if isinstance(e, ev.ExcaliburUsed)]
    assert len(used) == 1
    assert used[0].original is Card.FAIL and used[0].target == evil
    assert view(g.state, None).quest_results[-1].failed is False


def test_excalibur_on_a_success_card_turns_it_into_a_fail_and_fails_the_quest():
    """docs/rules.md §6: the target's card is flipped (success -> fail), even a good player's."""
    g = Game(players=5, excalibur=True)
    holder, good = two_member_team(g, Team.EVIL, Team.GOOD)
    to_excalibur_phase(g, holder, good, {holder: Card.SUCCESS})
    g.do(UseExcalibur(actor=holder, target=good))
    resolved = g.last_of(ev.QuestResolved)
    assert (resolved.successes, resolved.fails, resolved.failed) == (1, 1, True)
    assert resolved.excalibur_target == good
    assert g.last_of(ev.ExcaliburUsed).original is Card.SUCCESS
    assert g.state.failures() == 1


def test_only_the_holder_learns_the_original_card():
    """docs/rules.md §6: only the holder learns what the card was before the flip."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {evil: Card.FAIL})
    events = g.do(UseExcalibur(actor=holder, target=evil))
    used = g.last_of(ev.ExcaliburUsed)
    assert used.audience == Audience.to(holder)
    # no public event of the step says what the card was
    for e in events:
        if e.audience.kind is AudienceKind.PUBLIC:
            assert not isinstance(e, ev.ExcaliburUsed)
            assert not hasattr(e, "original")
    assert view(g.state, holder).excalibur_peeks == ((evil, Card.FAIL),)
    for p in g.seats:
        if p != holder:
            assert view(g.state, p).excalibur_peeks == ()
    assert view(g.state, None).excalibur_peeks == ()


def test_the_announcement_gives_the_counts_after_the_flip_and_names_the_target():
    """docs/rules.md §6: "3 successes and 1 fail, Excalibur was used on X" (counts after the flip)."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {})
    g.do(UseExcalibur(actor=holder, target=None))
    assert g.last_of(ev.QuestResolved).failed is False
    # quest 2 (three seats): three successes, the holder flips a good player's card
    lead = g.leader
    good = [p for p in g.good() if p != lead]
    team = (good[0], good[1], g.evil()[0])
    g.propose(team, excalibur=good[0])
    g.vote_all(True)
    g.play_all({g.evil()[0]: Card.SUCCESS})
    g.do(UseExcalibur(actor=good[0], target=good[1]))
    resolved = g.last_of(ev.QuestResolved)
    assert (resolved.quest, resolved.successes, resolved.fails, resolved.failed) == (2, 2, 1, True)
    assert (resolved.excalibur_holder, resolved.excalibur_target) == (good[0], good[1])


def test_excalibur_may_be_left_unused():
    """docs/rules.md §6: the holder *may* use it; declined, the cards stand and the announcement says so."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {evil: Card.FAIL})
    events = g.do(UseExcalibur(actor=holder, target=None))
    assert not [e for e in events if isinstance(e, ev.ExcaliburUsed)]
    resolved = g.last_of(ev.QuestResolved)
    assert (resolved.successes, resolved.fails, resolved.failed) == (1, 1, True)
    assert resolved.excalibur_holder == holder
    assert resolved.excalibur_target is None
    assert view(g.state, holder).excalibur_peeks == ()


def test_holder_cannot_use_excalibur_on_himself():
    """docs/rules.md §6: Excalibur is used on *another* team member."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {evil: Card.FAIL})
    g.refuse(UseExcalibur(actor=holder, target=holder), Reason.EXCALIBUR_INVALID_TARGET)


def test_holder_cannot_use_excalibur_on_a_player_off_the_team():
    """docs/rules.md §6: Excalibur is used on another *team member*."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {evil: Card.FAIL})
    outsider = next(p for p in g.seats if p not in (holder, evil))
    g.refuse(UseExcalibur(actor=holder, target=outsider), Reason.EXCALIBUR_INVALID_TARGET)
    g.refuse(UseExcalibur(actor=holder, target="stranger"), Reason.EXCALIBUR_INVALID_TARGET)


def test_only_the_holder_may_use_excalibur():
    """docs/rules.md §6: its holder may use it, nobody else (the leader included)."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {evil: Card.FAIL})
    g.refuse(UseExcalibur(actor=evil, target=holder), Reason.NOT_YOUR_TURN)
    g.refuse(UseExcalibur(actor=evil, target=None), Reason.NOT_YOUR_TURN)
    outsider = next(p for p in g.seats if p not in (holder, evil))
    g.refuse(UseExcalibur(actor=outsider, target=evil), Reason.NOT_YOUR_TURN)


def test_excalibur_cannot_be_used_before_every_card_is_played():
    """docs/rules.md §6: the holder acts once every team member has played."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    g.propose((holder, evil), excalibur=holder)
    g.vote_all(True)
    g.do(PlayCard(actor=holder, card=Card.SUCCESS))
    g.refuse(UseExcalibur(actor=holder, target=evil), Reason.WRONG_PHASE)


def test_excalibur_can_be_used_only_once_per_quest():
    """docs/rules.md §6: one use, then the result is announced and the next quest begins."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {evil: Card.FAIL})
    g.do(UseExcalibur(actor=holder, target=evil))
    assert g.phase is Phase.PROPOSAL and g.state.quest == 2
    g.refuse(UseExcalibur(actor=holder, target=evil), Reason.WRONG_PHASE)


def test_a_new_proposal_must_hand_excalibur_again_after_a_rejection():
    """docs/rules.md §6: Excalibur goes with each proposal; a rejected team's holder keeps nothing."""
    g = Game(players=5, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    g.propose((holder, evil), excalibur=holder)
    g.vote_all(False)
    assert g.phase is Phase.PROPOSAL
    assert view(g.state, None).excalibur_holder is None
    g.refuse(ProposeTeam(actor=g.leader, team=g.good_team(), excalibur=None), Reason.EXCALIBUR_REQUIRED)


@pytest.mark.parametrize("preset", ["classic", "online", "forum"])
def test_excalibur_works_the_same_in_every_preset(preset):
    """docs/rules.md §6 and §9: Excalibur is optional in every preset and works the same."""
    g = Game(players=5, preset=preset, excalibur=True)
    holder, evil = two_member_team(g, Team.GOOD, Team.EVIL)
    to_excalibur_phase(g, holder, evil, {evil: Card.FAIL})
    assert g.phase is Phase.EXCALIBUR
    g.do(UseExcalibur(actor=holder, target=evil))
    assert g.last_of(ev.QuestResolved).failed is False
    assert g.last_of(ev.ExcaliburUsed).audience == Audience.to(holder)
