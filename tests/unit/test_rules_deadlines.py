"""Deadlines and missed deadlines (docs/rules.md section 7; the fr seed).

Every phase of every preset has a deadline; ``PhaseOpened`` announces it and
the rule a missed deadline applies (``missed_rule``), and a ``PhaseTimedOut``
from the scheduler resolves the phase by exactly that rule.
"""

from __future__ import annotations

import pytest

from avalon.services.engine.rules import (
    Accepted,
    Accuse,
    CastVote,
    PhaseTimedOut,
    PlayCard,
    SpeakLastWord,
    Timers,
    UseExcalibur,
    UseLady,
    apply,
    view,
)
from avalon.shared.game import events as ev
from avalon.shared.game.model import (
    Card,
    Lancelot,
    MissedRule,
    Phase,
    Role,
    Team,
    WinCause,
)

from .gamekit import Game

PRESETS = ["classic", "online", "forum"]
H = 3600

#: The missed-deadline rule each preset announces, phase by phase (docs/rules.md §7, README).
PROPOSAL_RULE = {
    "classic": MissedRule.PROPOSAL_COUNTS_AS_REJECTION,
    "online": MissedRule.PROPOSAL_COUNTS_AS_REJECTION,
    "forum": MissedRule.PROPOSAL_CANCELLED,
}
VOTE_RULE = {
    "classic": MissedRule.VOTE_COUNTS_AS_REJECT,
    "online": MissedRule.VOTE_COUNTS_AS_REJECT,
    "forum": MissedRule.VOTE_NOT_COUNTED,
}


# -- small helpers -------------------------------------------------------------

def opened(events, phase: Phase | None = None) -> list[ev.PhaseOpened]:
    return [e for e in events if isinstance(e, ev.PhaseOpened) and (phase is None or e.phase is phase)]


def current_opening(g: Game) -> ev.PhaseOpened:
    """The announcement of the phase that is open now."""
    found = [e for e in g.log if isinstance(e, ev.PhaseOpened) and e.phase_id == g.state.phase_id]
    assert len(found) == 1
    return found[0]


def of(events, kind):
    return [e for e in events if isinstance(e, kind)]


def next_seat(g: Game, player: str, step: int = 1) -> str:
    seats = g.seats
    return seats[(seats.index(player) + step) % len(seats)]


def shooter(g: Game) -> str:
    return g.seats[g.state.shooter]


def to_assassination(g: Game) -> None:
    for _ in range(3):
        g.win_quest()
    assert g.phase is Phase.ASSASSINATION


def timeout_checked(g: Game, phase: Phase, rule: MissedRule) -> list:
    """The open phase is ``phase`` and announced ``rule``; let its deadline pass."""
    assert g.phase is phase
    announced = current_opening(g)
    assert announced.phase is phase
    assert announced.missed_rule is rule
    assert g.state.missed_rule is rule
    return g.timeout()


# -- proposal ------------------------------------------------------------------

@pytest.mark.parametrize("preset", ["classic", "online"])
def test_missed_proposal_counts_as_a_rejection_and_the_next_leader_proposes(preset):
    """docs/rules.md §7: classic and online define a missed proposal as a rejection (track +1, next leader)."""
    g = Game(players=5, preset=preset)
    leader = g.leader
    events = timeout_checked(g, Phase.PROPOSAL, PROPOSAL_RULE[preset])
    missed = of(events, ev.DeadlineMissed)
    assert len(missed) == 1
    assert (missed[0].phase, missed[0].missing, missed[0].rule) == (Phase.PROPOSAL, (leader,), PROPOSAL_RULE[preset])
    pm = of(events, ev.ProposalMissed)[0]
    assert pm.counts_as_rejection is True and pm.vote_track == 1 and pm.leader == leader
    reopened = opened(events, Phase.PROPOSAL)
    assert len(reopened) == 1
    assert reopened[0].leader == next_seat(g, leader)
    assert reopened[0].vote_track == 1 and reopened[0].quest == 1
    assert view(g.state, None).vote_track == 1
    assert g.leader == next_seat(g, leader)


@pytest.mark.parametrize("how", ["rejections", "missed proposals"])
def test_classic_fifth_missed_proposal_counts_toward_the_hammer_and_evil_wins(how):
    """docs/rules.md §3, §7: in classic a missed fifth proposal is the fifth rejection: evil wins."""
    g = Game(players=5, preset="classic")
    for _ in range(4):
        if how == "rejections":
            g.reject_proposal()
        else:
            timeout_checked(g, Phase.PROPOSAL, MissedRule.PROPOSAL_COUNTS_AS_REJECTION)
    assert g.state.vote_track == 4 and g.phase is Phase.PROPOSAL
    events = timeout_checked(g, Phase.PROPOSAL, MissedRule.PROPOSAL_COUNTS_AS_REJECTION)
    end = of(events, ev.GameEnded)
    assert len(end) == 1
    assert (end[0].winner, end[0].cause) == (Team.EVIL, WinCause.HAMMER)
    assert g.phase is Phase.ENDED


def test_online_missed_proposals_count_as_rejections_until_the_fifth_which_goes_straight_to_the_quest():
    """docs/rules.md §3, §7 (online): four missed proposals are four rejections; the fifth is auto-approved."""
    g = Game(players=5, preset="online")
    for _ in range(4):
        timeout_checked(g, Phase.PROPOSAL, MissedRule.PROPOSAL_COUNTS_AS_REJECTION)
    assert g.state.vote_track == 4
    g.propose(g.good_team())
    assert g.last_of(ev.TeamProposed).auto_approved is True
    assert g.phase is Phase.QUEST


def test_online_missed_fifth_proposal_is_cancelled_and_the_next_leader_proposes():
    """docs/rules.md §7 (online): the fifth (auto-approved) proposal missed is cancelled; next leader, no hammer."""
    g = Game(players=5, preset="online")
    for _ in range(4):
        g.reject_proposal()
    assert g.state.vote_track == 4
    leader = g.leader
    events = timeout_checked(g, Phase.PROPOSAL, MissedRule.PROPOSAL_CANCELLED)
    pm = of(events, ev.ProposalMissed)[0]
    assert pm.counts_as_rejection is False and pm.vote_track == 4
    assert not of(events, ev.GameEnded)
    reopened = opened(events, Phase.PROPOSAL)
    assert len(reopened) == 1 and reopened[0].leader == next_seat(g, leader)
    assert reopened[0].vote_track == 4
    assert reopened[0].missed_rule is MissedRule.PROPOSAL_CANCELLED  # still the fifth proposal
    g.propose(g.good_team())
    assert g.last_of(ev.TeamProposed).auto_approved is True
    assert g.phase is Phase.QUEST


def test_forum_missed_proposal_is_cancelled_neither_approved_nor_rejected():
    """docs/rules.md §7 (forum): no proposal in time: cancelled, the vote track is unchanged, next leader."""
    g = Game(players=5, preset="forum")
    leader = g.leader
    events = timeout_checked(g, Phase.PROPOSAL, MissedRule.PROPOSAL_CANCELLED)
    missed = of(events, ev.DeadlineMissed)[0]
    assert missed.missing == (leader,) and missed.rule is MissedRule.PROPOSAL_CANCELLED
    pm = of(events, ev.ProposalMissed)[0]
    assert pm.counts_as_rejection is False and pm.vote_track == 0
    reopened = opened(events, Phase.PROPOSAL)
    assert len(reopened) == 1
    assert reopened[0].leader == next_seat(g, leader)
    assert reopened[0].vote_track == 0
    assert view(g.state, None).vote_track == 0
    assert not g.state.vote_log  # nothing recorded as a vote


def test_forum_missed_proposals_never_make_the_hammer():
    """docs/rules.md §3, §7 (forum): cancelled proposals count as neither; five of them do not end the game."""
    g = Game(players=5, preset="forum")
    first = g.leader
    for _ in range(6):
        timeout_checked(g, Phase.PROPOSAL, MissedRule.PROPOSAL_CANCELLED)
    assert g.phase is Phase.PROPOSAL
    assert g.state.vote_track == 0
    assert g.leader == next_seat(g, first, 6)


def test_forum_missed_proposal_after_four_rejections_is_cancelled_not_the_hammer():
    """docs/rules.md §3, §7 (forum): after four rejections a missed proposal is not the fifth rejection."""
    g = Game(players=5, preset="forum")
    for _ in range(4):
        g.reject_proposal()
    leader = g.leader
    events = timeout_checked(g, Phase.PROPOSAL, MissedRule.PROPOSAL_CANCELLED)
    assert not of(events, ev.GameEnded)
    assert g.state.vote_track == 4 and g.leader == next_seat(g, leader)
    g.reject_proposal()  # a real fifth rejection
    assert g.phase is Phase.ENDED
    assert (g.state.winner, g.state.cause) == (Team.EVIL, WinCause.HAMMER)


# -- vote ----------------------------------------------------------------------

def _vote_with_one_silent(g: Game, approvals: int, rejections: int) -> tuple[str, list]:
    """Propose a team; the first voters approve, the next reject, the last seat stays silent."""
    g.propose(g.good_team())
    voters = list(g.seats)
    silent = voters[-1]
    assert approvals + rejections == len(voters) - 1
    for i, p in enumerate(voters[:-1]):
        g.do(CastVote(actor=p, approve=i < approvals))
    assert g.phase is Phase.VOTE  # still waiting for the silent voter
    return silent, voters


@pytest.mark.parametrize("preset, approved", [("classic", False), ("online", False), ("forum", True)])
def test_the_french_example_four_for_three_against_one_silent(preset, approved):
    """docs/rules.md §7: 8 players, 4 for, 3 against, 1 silent: forum approves (4 of 7 votes cast);
    classic and online count the silent voter as a rejection (4 of 8 is no majority)."""
    g = Game(players=8, preset=preset)
    leader = g.leader
    silent, _ = _vote_with_one_silent(g, 4, 3)
    events = timeout_checked(g, Phase.VOTE, VOTE_RULE[preset])
    missed = of(events, ev.DeadlineMissed)
    assert len(missed) == 1 and missed[0].missing == (silent,) and missed[0].rule is VOTE_RULE[preset]
    revealed = of(events, ev.VotesRevealed)[0]
    assert (revealed.approvals, revealed.rejections) == (4, 3)
    assert revealed.not_voted == (silent,)
    assert silent not in dict(revealed.votes)
    assert len(revealed.votes) == 7
    assert revealed.approved is approved
    if approved:
        assert g.phase is Phase.QUEST
        assert revealed.vote_track == 0
    else:
        assert revealed.vote_track == 1
        assert g.phase is Phase.PROPOSAL
        assert g.leader == next_seat(g, leader)


@pytest.mark.parametrize("preset", PRESETS)
def test_a_clear_majority_passes_despite_a_silent_voter(preset):
    """docs/rules.md §7: 5 for, 2 against, 1 silent: approved under every preset's rule."""
    g = Game(players=8, preset=preset)
    _vote_with_one_silent(g, 5, 2)
    events = timeout_checked(g, Phase.VOTE, VOTE_RULE[preset])
    assert of(events, ev.VotesRevealed)[0].approved is True
    assert g.phase is Phase.QUEST


@pytest.mark.parametrize("preset, approved", [("classic", False), ("online", False), ("forum", True)])
def test_a_silent_voter_breaks_a_tie_only_where_he_counts_as_a_rejection(preset, approved):
    """docs/rules.md §7: 6 players, 3 for, 2 against, 1 silent: forum approves, classic/online reject."""
    g = Game(players=6, preset=preset)
    _vote_with_one_silent(g, 3, 2)
    events = timeout_checked(g, Phase.VOTE, VOTE_RULE[preset])
    assert of(events, ev.VotesRevealed)[0].approved is approved


def test_classic_silent_voter_on_a_fifth_proposal_can_trigger_the_hammer():
    """docs/rules.md §3, §7 (classic): the silent voter rejects, so a fifth team without a majority loses."""
    g = Game(players=8, preset="classic")
    for _ in range(4):
        g.reject_proposal()
    _vote_with_one_silent(g, 4, 3)
    events = timeout_checked(g, Phase.VOTE, MissedRule.VOTE_COUNTS_AS_REJECT)
    end = of(events, ev.GameEnded)
    assert end and (end[0].winner, end[0].cause) == (Team.EVIL, WinCause.HAMMER)


# -- quest cards ---------------------------------------------------------------

def _quest_team(g: Game) -> tuple[str, str]:
    """Quest 1 at 5 players: one evil and one good player, approved."""
    evil, good = g.evil()[0], g.good()[0]
    g.propose((evil, good))
    g.vote_all(True)
    if not g.options.close_early:
        assert g.phase is Phase.VOTE
        g.timeout()  # every vote is in; the vote closes at its deadline
    assert g.phase is Phase.QUEST
    return evil, good


@pytest.mark.parametrize("preset", PRESETS)
def test_missed_quest_cards_count_as_successes_for_good_and_evil(preset):
    """docs/rules.md §7: a silent good player succeeds; a silent evil player counts as success."""
    g = Game(players=5, preset=preset)
    evil, good = _quest_team(g)
    events = timeout_checked(g, Phase.QUEST, MissedRule.CARD_COUNTS_AS_SUCCESS)
    missed = of(events, ev.DeadlineMissed)[0]
    assert set(missed.missing) == {evil, good}
    assert missed.rule is MissedRule.CARD_COUNTS_AS_SUCCESS
    resolved = of(events, ev.QuestResolved)[0]
    assert (resolved.successes, resolved.fails, resolved.failed) == (2, 0, False)
    assert g.state.successes() == 1


@pytest.mark.parametrize("preset", PRESETS)
def test_a_played_fail_still_counts_when_another_member_is_silent(preset):
    """docs/rules.md §7: only the missing cards are filled in (as successes)."""
    g = Game(players=5, preset=preset)
    evil, good = _quest_team(g)
    g.do(PlayCard(actor=evil, card=Card.FAIL))
    events = timeout_checked(g, Phase.QUEST, MissedRule.CARD_COUNTS_AS_SUCCESS)
    assert of(events, ev.DeadlineMissed)[0].missing == (good,)
    resolved = of(events, ev.QuestResolved)[0]
    assert (resolved.successes, resolved.fails, resolved.failed) == (1, 1, True)


def _v2_no_switch_on_quest_one(g: Game) -> bool:
    return not g.state.lancelot_deck[0]


def _find(predicate, **kw) -> Game:
    for seed in range(1, 3000):
        g = Game(seed=seed, **kw)
        if predicate(g):
            return g
    raise AssertionError("no seed found")


@pytest.mark.parametrize("preset", PRESETS)
def test_a_silent_evil_lancelot_of_variant_two_counts_as_a_fail(preset):
    """docs/rules.md §7, §8 (variant 2): an evil Lancelot must fail, so his missed card is a fail."""
    g = _find(_v2_no_switch_on_quest_one, players=5, preset=preset, lancelot=Lancelot.V2)
    evil_l, good_l = g.who(Role.EVIL_LANCELOT), g.who(Role.GOOD_LANCELOT)
    assert g.team_now(evil_l) is Team.EVIL
    g.propose((evil_l, good_l))
    g.vote_all(True)
    events = timeout_checked(g, Phase.QUEST, MissedRule.CARD_COUNTS_AS_SUCCESS_LANCELOT_FAILS)
    resolved = of(events, ev.QuestResolved)[0]
    assert (resolved.successes, resolved.fails, resolved.failed) == (1, 1, True)


# -- Excalibur -----------------------------------------------------------------

@pytest.mark.parametrize("preset", PRESETS)
def test_missed_excalibur_is_not_used(preset):
    """docs/rules.md §6, §7: the holder's deadline passes: Excalibur is not used, the cards stand."""
    g = Game(players=5, preset=preset, excalibur=True)
    holder = next(p for p in g.good() if p != g.leader)
    evil = g.evil()[0]
    g.propose((holder, evil), excalibur=holder)
    g.vote_all(True)
    g.play_all({evil: Card.FAIL})
    events = timeout_checked(g, Phase.EXCALIBUR, MissedRule.EXCALIBUR_NOT_USED)
    missed = of(events, ev.DeadlineMissed)[0]
    assert missed.missing == (holder,) and missed.rule is MissedRule.EXCALIBUR_NOT_USED
    assert not of(events, ev.ExcaliburUsed)
    resolved = of(events, ev.QuestResolved)[0]
    assert (resolved.fails, resolved.failed) == (1, True)
    assert resolved.excalibur_holder == holder and resolved.excalibur_target is None
    assert view(g.state, holder).excalibur_peeks == ()
    assert g.phase is Phase.PROPOSAL and g.state.quest == 2


# -- Lady of the Lake ----------------------------------------------------------

@pytest.mark.parametrize("preset", PRESETS)
def test_missed_lady_is_not_used_and_her_holder_keeps_her(preset):
    """docs/rules.md §5, §7: the holder's deadline passes: no examination, she keeps the Lady for next time."""
    g = Game(players=5, preset=preset, lady=True)
    g.win_quest()
    g.lose_quest()
    holder = view(g.state, None).lady_holder
    events = timeout_checked(g, Phase.LADY, MissedRule.LADY_NOT_USED)
    missed = of(events, ev.DeadlineMissed)[0]
    assert missed.missing == (holder,) and missed.rule is MissedRule.LADY_NOT_USED
    not_used = of(events, ev.LadyNotUsed)
    assert len(not_used) == 1 and not_used[0].holder == holder
    assert not of(events, ev.LadyUsed) and not of(events, ev.LadyResult)
    assert view(g.state, None).lady_holder == holder
    assert view(g.state, holder).lady_results == ()
    proposal = opened(events, Phase.PROPOSAL)
    assert len(proposal) == 1 and proposal[0].quest == 3
    g.win_quest()
    assert g.phase is Phase.LADY
    assert current_opening(g).actors == (holder,)
    target = next(p for p in g.seats if p != holder)
    g.do(UseLady(actor=holder, target=target))
    assert view(g.state, None).lady_holder == target


# -- assassination and last word -------------------------------------------------

@pytest.mark.parametrize("preset", PRESETS)
def test_missed_assassination_forfeits_the_shot_and_good_wins(preset):
    """docs/rules.md §7: no shot before the deadline: good wins (SHOT_FORFEITED)."""
    g = Game(players=5, preset=preset)
    to_assassination(g)
    events = timeout_checked(g, Phase.ASSASSINATION, MissedRule.SHOT_FORFEITED)
    assert of(events, ev.DeadlineMissed)[0].rule is MissedRule.SHOT_FORFEITED
    assert not of(events, ev.AssassinationResolved)
    end = of(events, ev.GameEnded)
    assert len(end) == 1
    assert (end[0].winner, end[0].cause) == (Team.GOOD, WinCause.SHOT_FORFEITED)
    assert g.phase is Phase.ENDED


@pytest.mark.parametrize("preset", PRESETS)
def test_missed_assassination_with_the_last_word_rule_before_an_accusation_forfeits_the_shot(preset):
    """docs/rules.md §7: with the last word house rule, no accusation in time is no shot: good wins."""
    g = Game(players=5, preset=preset, last_word=True)
    to_assassination(g)
    events = timeout_checked(g, Phase.ASSASSINATION, MissedRule.SHOT_FORFEITED)
    end = of(events, ev.GameEnded)[0]
    assert (end.winner, end.cause) == (Team.GOOD, WinCause.SHOT_FORFEITED)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("accused_is_merlin", [True, False])
def test_missed_final_shot_after_the_last_word_shoots_the_accused(preset, accused_is_merlin):
    """docs/rules.md §7 (house rule): after an accusation and the last word, a missed shot hits the accused."""
    g = Game(players=5, preset=preset, last_word=True)
    to_assassination(g)
    accused = g.who(Role.MERLIN) if accused_is_merlin else g.who(Role.PERCIVAL)
    g.do(Accuse(actor=shooter(g), target=accused))
    assert g.phase is Phase.LAST_WORD
    g.do(SpeakLastWord(actor=accused, text="I am just a humble servant."))
    events = timeout_checked(g, Phase.ASSASSINATION, MissedRule.ACCUSED_IS_SHOT)
    shot = of(events, ev.AssassinationResolved)
    assert len(shot) == 1 and shot[0].target == accused and shot[0].hit is accused_is_merlin
    end = of(events, ev.GameEnded)[0]
    if accused_is_merlin:
        assert (end.winner, end.cause) == (Team.EVIL, WinCause.MERLIN_ASSASSINATED)
    else:
        assert (end.winner, end.cause) == (Team.GOOD, WinCause.ASSASSIN_MISSED)


@pytest.mark.parametrize("preset", PRESETS)
def test_missed_last_word_is_skipped_and_the_final_shot_follows(preset):
    """docs/rules.md §7: the accused stays silent: the last word is skipped and the shot phase opens."""
    g = Game(players=5, preset=preset, last_word=True)
    to_assassination(g)
    accused = g.who(Role.MERLIN)
    g.do(Accuse(actor=shooter(g), target=accused))
    opening = current_opening(g)
    assert opening.actors == (accused,)
    events = timeout_checked(g, Phase.LAST_WORD, MissedRule.LAST_WORD_SKIPPED)
    missed = of(events, ev.DeadlineMissed)[0]
    assert missed.missing == (accused,) and missed.rule is MissedRule.LAST_WORD_SKIPPED
    assert not of(events, ev.LastWordSpoken)
    assert not of(events, ev.GameEnded)
    shot_phase = opened(events, Phase.ASSASSINATION)
    assert len(shot_phase) == 1 and shot_phase[0].missed_rule is MissedRule.ACCUSED_IS_SHOT
    # and the final shot's own deadline then shoots the accused
    events = timeout_checked(g, Phase.ASSASSINATION, MissedRule.ACCUSED_IS_SHOT)
    assert of(events, ev.AssassinationResolved)[0].target == accused
    assert g.state.winner is Team.EVIL


# -- stale deadlines -----------------------------------------------------------

def _stale_timeouts_change_nothing(g: Game, old_ids) -> None:
    before = g.state
    for old in old_ids:
        result = apply(before, PhaseTimedOut(phase_id=old))
        assert isinstance(result, Accepted)
        assert result.events == ()
        assert result.state == before
        assert result.state.phase is before.phase and result.state.seq == before.seq


@pytest.mark.parametrize("preset", PRESETS)
def test_a_stale_deadline_changes_nothing(preset):
    """docs/rules.md §7: a deadline for a phase that is already over is ignored (no events, no change)."""
    g = Game(players=5, preset=preset, lady=True, excalibur=True, last_word=True)
    seen = [g.state.phase_id]
    steps = 0
    while g.phase is not Phase.ENDED and steps < 40:
        _stale_timeouts_change_nothing(g, seen[:-1])
        steps += 1
        if g.phase is Phase.PROPOSAL:
            g.propose(g.good_team())
        elif g.phase is Phase.VOTE:
            g.vote_all(True)
        elif g.phase is Phase.QUEST:
            g.play_all()
        elif g.phase is Phase.EXCALIBUR:
            g.do(UseExcalibur(actor=g.seats[g.state.excalibur], target=None))
        elif g.phase is Phase.LADY:
            g.timeout()
        elif g.phase is Phase.ASSASSINATION and g.state.accused < 0:
            g.do(Accuse(actor=shooter(g), target=g.who(Role.PERCIVAL)))
        else:
            g.timeout()
        seen.append(g.state.phase_id)
    assert g.phase is Phase.ENDED
    _stale_timeouts_change_nothing(g, seen)  # after the end, every deadline is stale


def test_a_stale_vote_deadline_does_not_close_the_new_vote():
    """docs/rules.md §7: the deadline of a previous vote cannot close the current one."""
    g = Game(players=5)
    g.reject_proposal()
    old_vote = opened(g.log, Phase.VOTE)[-1].phase_id
    g.propose(g.good_team())
    g.do(CastVote(actor=g.seats[0], approve=True))
    _stale_timeouts_change_nothing(g, [old_vote])
    assert g.phase is Phase.VOTE
    assert view(g.state, None).voted == (g.seats[0],)


# -- closing early -------------------------------------------------------------

@pytest.mark.parametrize("preset", PRESETS)
def test_with_close_early_the_vote_closes_as_soon_as_everyone_has_voted(preset):
    """docs/rules.md §7: the narrator may close a phase early once everyone has acted."""
    g = Game(players=5, preset=preset, close_early=True)
    g.propose(g.good_team())
    events = g.vote_all(True)
    assert of(events, ev.VotesRevealed)[0].approved is True
    assert g.phase is Phase.QUEST


@pytest.mark.parametrize("preset", PRESETS)
def test_without_close_early_the_vote_waits_for_the_deadline_then_counts_every_vote(preset):
    """docs/rules.md §7: without closing early the vote stays open until the deadline, then all votes count."""
    g = Game(players=5, preset=preset, close_early=False)
    g.propose(g.good_team())
    voters = g.seats
    for i, p in enumerate(voters):
        events = g.do(CastVote(actor=p, approve=i < 2))  # 2 for, 3 against
        assert not of(events, ev.VotesRevealed)
    assert g.phase is Phase.VOTE
    assert set(view(g.state, None).voted) == set(voters)
    events = g.timeout()
    assert not of(events, ev.DeadlineMissed)  # nobody missed it
    revealed = of(events, ev.VotesRevealed)[0]
    assert (revealed.approvals, revealed.rejections, revealed.not_voted) == (2, 3, ())
    assert revealed.approved is False
    assert g.phase is Phase.PROPOSAL


@pytest.mark.parametrize("preset", PRESETS)
def test_with_close_early_the_quest_resolves_once_every_card_is_played(preset):
    """docs/rules.md §7: closing early: the quest result comes with the last card."""
    g = Game(players=5, preset=preset, close_early=True)
    evil, good = _quest_team(g)
    g.do(PlayCard(actor=good, card=Card.SUCCESS))
    events = g.do(PlayCard(actor=evil, card=Card.FAIL))
    assert of(events, ev.QuestResolved)[0].fails == 1


@pytest.mark.parametrize("preset", PRESETS)
def test_without_close_early_the_quest_waits_for_the_deadline_then_counts_every_card(preset):
    """docs/rules.md §7: without closing early the quest stays open; at the deadline the played cards count."""
    g = Game(players=5, preset=preset, close_early=False)
    evil, good = _quest_team(g)
    g.do(PlayCard(actor=good, card=Card.SUCCESS))
    events = g.do(PlayCard(actor=evil, card=Card.FAIL))
    assert not of(events, ev.QuestResolved)
    assert g.phase is Phase.QUEST
    events = g.timeout()
    assert not of(events, ev.DeadlineMissed)
    resolved = of(events, ev.QuestResolved)[0]
    assert (resolved.successes, resolved.fails, resolved.failed) == (1, 1, True)


# -- the deadlines themselves --------------------------------------------------

def test_forum_deadlines_are_48h_to_propose_24h_to_vote_24h_for_a_quest_48h_for_the_shot():
    """docs/rules.md §7: forum timings: proposal 48 h, vote 24 h, quest 24 h, assassination 48 h."""
    g = Game(players=5, preset="forum")
    assert current_opening(g).timeout_seconds == 48 * H
    assert view(g.state, None).timeout_seconds == 48 * H
    g.propose(g.good_team())
    assert current_opening(g).phase is Phase.VOTE and current_opening(g).timeout_seconds == 24 * H
    g.vote_all(True)
    assert current_opening(g).phase is Phase.QUEST and current_opening(g).timeout_seconds == 24 * H
    g.play_all()
    g.win_quest()
    g.win_quest()
    assert current_opening(g).phase is Phase.ASSASSINATION
    assert current_opening(g).timeout_seconds == 48 * H
    assert view(g.state, None).timeout_seconds == 48 * H


@pytest.mark.parametrize("preset", PRESETS)
def test_every_phase_deadline_is_the_hosts_timer_for_that_phase(preset):
    """docs/rules.md §7: the host sets each phase's timer; each phase announces its own deadline."""
    timers = Timers(proposal=101, vote=102, quest=103, excalibur=104, lady=105,
                    assassination=106, last_word=107)
    g = Game(players=5, preset=preset, timers=timers, lady=True, excalibur=True, last_word=True)
    g.propose(g.good_team())
    g.vote_all(True)
    g.play_all()
    g.do(UseExcalibur(actor=g.seats[g.state.excalibur], target=None))
    g.win_quest()
    g.do(UseExcalibur(actor=g.seats[g.state.excalibur], target=None))
    assert g.phase is Phase.LADY
    g.timeout()
    g.win_quest()
    g.do(UseExcalibur(actor=g.seats[g.state.excalibur], target=None))
    assert g.phase is Phase.ASSASSINATION
    g.do(Accuse(actor=shooter(g), target=g.who(Role.MERLIN)))
    g.timeout()  # last word missed: the final shot opens
    seen = {}
    for e in g.events(ev.PhaseOpened):
        seen.setdefault(e.phase, set()).add(e.timeout_seconds)
    assert seen == {
        Phase.PROPOSAL: {101}, Phase.VOTE: {102}, Phase.QUEST: {103}, Phase.EXCALIBUR: {104},
        Phase.LADY: {105}, Phase.ASSASSINATION: {106}, Phase.LAST_WORD: {107},
    }


@pytest.mark.parametrize("preset", PRESETS)
def test_every_phase_announces_its_missed_deadline_rule_when_it_opens(preset):
    """docs/rules.md §7: the rule in force is shown to players with each phase."""
    g = Game(players=5, preset=preset, lady=True, excalibur=True, last_word=True)
    g.propose(g.good_team())
    g.vote_all(True)
    g.play_all()
    g.do(UseExcalibur(actor=g.seats[g.state.excalibur], target=None))
    g.win_quest()
    g.do(UseExcalibur(actor=g.seats[g.state.excalibur], target=None))
    g.timeout()  # the Lady
    g.win_quest()
    g.do(UseExcalibur(actor=g.seats[g.state.excalibur], target=None))
    g.do(Accuse(actor=shooter(g), target=g.who(Role.MERLIN)))
    g.timeout()  # the last word
    seen = {}
    for e in g.events(ev.PhaseOpened):
        seen.setdefault(e.phase, set()).add(e.missed_rule)
    assert seen == {
        Phase.PROPOSAL: {PROPOSAL_RULE[preset]},
        Phase.VOTE: {VOTE_RULE[preset]},
        Phase.QUEST: {MissedRule.CARD_COUNTS_AS_SUCCESS},
        Phase.EXCALIBUR: {MissedRule.EXCALIBUR_NOT_USED},
        Phase.LADY: {MissedRule.LADY_NOT_USED},
        Phase.ASSASSINATION: {MissedRule.SHOT_FORFEITED, MissedRule.ACCUSED_IS_SHOT},
        Phase.LAST_WORD: {MissedRule.LAST_WORD_SKIPPED},
    }
