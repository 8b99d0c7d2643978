"""Scenario tests: a round (proposal, vote, quest) and the hammer (docs/rules.md §3)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from avalon.services.engine.rules import CastVote, PlayCard, ProposeTeam
from avalon.shared.game.errors import Reason
from avalon.shared.game.events import (
    PUBLIC, CardPlayed, GameEnded, PhaseOpened, ProposalMissed, QuestResolved, TeamProposed, VoteCast,
    VotesRevealed,
)
from avalon.shared.game.model import Card, Phase, Team, WinCause
from avalon.services.engine.rules.view import view

from tests.unit.rules_core_kit import Game, team_with


def _next_seat(g: Game, player: str) -> str:
    i = g.seats.index(player)
    return g.seats[(i + 1) % len(g.seats)]


def _vote(g: Game, approvals: int) -> VotesRevealed:
    """The first ``approvals`` players in seat order approve, the rest reject."""
    ayes = set(g.seats[:approvals])
    g.vote_all({p: p in ayes for p in g.seats})
    return g.last_of(VotesRevealed)


# -- team building ------------------------------------------------------------------


def test_the_leader_must_pick_exactly_the_quest_team_size():
    """docs/rules.md §3.1: exactly the quest's team size."""
    g = Game(players=5)
    lead = g.leader
    others = [p for p in g.seats if p != lead]
    r = g.refuse(ProposeTeam(actor=lead, team=(others[0],)), Reason.WRONG_TEAM_SIZE)
    assert "exactly 2" in r.message and "picked 1" in r.message
    g.refuse(ProposeTeam(actor=lead, team=tuple(others[:3])), Reason.WRONG_TEAM_SIZE)
    g.refuse(ProposeTeam(actor=lead, team=()), Reason.WRONG_TEAM_SIZE)
    assert g.phase is Phase.PROPOSAL


def test_the_leader_must_pick_distinct_players():
    """docs/rules.md §3.1: distinct players."""
    g = Game(players=5)
    other = next(p for p in g.seats if p != g.leader)
    g.refuse(ProposeTeam(actor=g.leader, team=(other, other)), Reason.DUPLICATE_PLAYER)


def test_the_leader_can_only_pick_players_of_the_game():
    """docs/rules.md §3.1."""
    g = Game(players=5)
    r = g.refuse(ProposeTeam(actor=g.leader, team=(g.leader, "stranger")), Reason.UNKNOWN_PLAYER)
    assert "stranger" in r.message


def test_the_leader_may_include_himself():
    """docs/rules.md §3.1: the leader may include himself."""
    g = Game(players=5)
    lead = g.leader
    team = (lead, next(p for p in g.seats if p != lead))
    g.do(ProposeTeam(actor=lead, team=team))
    proposed = g.last_of(TeamProposed)
    assert proposed.team == team and proposed.leader == lead and proposed.audience == PUBLIC
    assert g.phase is Phase.VOTE and view(g.state, None).team == team


def test_only_the_leader_may_propose():
    """docs/rules.md §3.1."""
    g = Game(players=5)
    other = next(p for p in g.seats if p != g.leader)
    g.refuse(ProposeTeam(actor=other, team=(other, g.leader)), Reason.NOT_YOUR_TURN)


def test_someone_outside_the_game_can_neither_propose_vote_nor_play():
    """docs/rules.md §3: only the seated players act."""
    g = Game(players=5)
    g.refuse(ProposeTeam(actor="stranger", team=tuple(g.seats[:2])), Reason.NOT_A_PLAYER)
    g.propose()
    g.refuse(CastVote(actor="stranger", approve=True), Reason.NOT_A_PLAYER)
    g.vote_all(True)
    g.refuse(PlayCard(actor="stranger", card=Card.SUCCESS), Reason.NOT_A_PLAYER)


# -- the vote -----------------------------------------------------------------------


@pytest.mark.parametrize("players,approvals,approved", [
    (5, 3, True), (5, 2, False), (6, 4, True), (6, 3, False), (7, 4, True), (7, 3, False),
    (10, 5, False), (10, 6, True),
])
def test_a_team_needs_a_strict_majority_and_a_tie_rejects(players, approvals, approved):
    """docs/rules.md §3.2: strict majority approves; a tie (e.g. 3-3 with 6) rejects."""
    g = Game(players=players)
    g.propose()
    result = _vote(g, approvals)
    assert (result.approvals, result.rejections, result.approved) == (approvals, players - approvals, approved)
    assert g.phase is (Phase.QUEST if approved else Phase.PROPOSAL)


def test_every_player_votes_including_the_leader_and_the_team():
    """docs/rules.md §3.2: everyone votes; the vote waits for all of them."""
    g = Game(players=5)
    g.propose()
    assert set(view(g.state, None).waiting_for) == set(g.seats)
    for p in g.seats[:-1]:
        g.do(CastVote(actor=p, approve=True))
    assert g.phase is Phase.VOTE and view(g.state, None).waiting_for == (g.seats[-1],)


def test_votes_are_shown_with_their_voters_once_the_result_is_announced():
    """docs/rules.md §3.2: by default every vote is shown with its voter."""
    g = Game(players=5)
    g.propose()
    wanted = {p: i % 2 == 0 for i, p in enumerate(g.seats)}
    g.vote_all(wanted)
    result = g.last_of(VotesRevealed)
    assert result.audience == PUBLIC
    assert dict(result.votes) == wanted
    assert dict(view(g.state, None).vote_log[-1].votes) == wanted


def test_a_vote_stays_secret_until_the_result_is_announced():
    """docs/rules.md §3.2: votes are shown once the result is announced, not before."""
    g = Game(players=5)
    g.propose()
    first, second = g.seats[0], g.seats[1]
    g.do(CastVote(actor=first, approve=False))
    cast = g.last_of(VoteCast)
    assert cast.audience.players == (first,)
    assert all(not hasattr(e, "approve") for e in g.last if e.audience == PUBLIC)
    assert view(g.state, first).my_vote is False
    assert view(g.state, second).my_vote is None
    assert view(g.state, None).voted == (first,)


def test_with_anonymous_votes_only_the_counts_are_shown():
    """docs/rules.md §3.2 and §9: ``anonymous_votes`` shows only the counts."""
    g = Game(players=5, preset="online", anonymous_votes=True)
    g.propose()
    _vote(g, 2)
    result = g.last_of(VotesRevealed)
    assert result.votes is None
    assert (result.approvals, result.rejections, result.approved) == (2, 3, False)
    assert view(g.state, g.seats[0]).vote_log[-1].votes is None


def test_a_player_cannot_vote_twice():
    """docs/rules.md §3.2."""
    g = Game(players=5)
    g.propose()
    p = g.seats[0]
    g.do(CastVote(actor=p, approve=True))
    g.refuse(CastVote(actor=p, approve=False), Reason.ALREADY_ACTED)
    assert view(g.state, p).my_vote is True


def test_on_rejection_the_next_seat_leads_and_the_vote_track_advances():
    """docs/rules.md §3.2: leadership passes in seat order; the vote track advances."""
    g = Game(players=6)
    first = g.leader
    g.reject_proposal()
    assert g.phase is Phase.PROPOSAL
    assert g.leader == _next_seat(g, first)
    opened = g.last_of(PhaseOpened)
    assert (opened.phase, opened.leader, opened.vote_track) == (Phase.PROPOSAL, g.leader, 1)
    assert g.last_of(VotesRevealed).vote_track == 1
    g.reject_proposal()
    assert g.leader == _next_seat(g, _next_seat(g, first))
    assert view(g.state, None).vote_track == 2


# -- the quest -----------------------------------------------------------------------


def _on_quest(players: int = 7, evil: int = 1, **options) -> tuple[Game, tuple[str, ...]]:
    g = Game(players=players, **options)
    team = team_with(g, evil=evil)
    g.propose(team)
    g.vote_all(True)
    assert g.phase is Phase.QUEST
    return g, team


def test_a_good_player_cannot_play_fail():
    """docs/rules.md §3.3: good players must play success."""
    g, team = _on_quest(evil=0)
    r = g.refuse(PlayCard(actor=team[0], card=Card.FAIL), Reason.CARD_NOT_ALLOWED)
    assert "success" in r.message


def test_with_good_may_fail_a_good_player_may_fail_the_quest():
    """docs/rules.md §3.3 and §9: ``good_may_fail`` (online option)."""
    g, team = _on_quest(players=5, evil=0, preset="online", good_may_fail=True)
    g.play_all({team[0]: Card.FAIL})
    result = g.last_of(QuestResolved)
    assert (result.fails, result.failed) == (1, True)


def test_an_evil_player_chooses_success_or_fail():
    """docs/rules.md §3.3: evil players choose."""
    g = Game(players=7)
    g.win_quest()  # quest 2 has 3 seats: two evil players fit
    team = team_with(g, evil=2)
    g.propose(team)
    g.vote_all(True)
    g.play_all({team[0]: Card.SUCCESS, team[1]: Card.FAIL})
    result = g.last_of(QuestResolved)
    assert (result.successes, result.fails, result.failed) == (2, 1, True)


def test_only_team_members_play_and_each_plays_once():
    """docs/rules.md §3.3: each team member plays one card."""
    g, team = _on_quest(evil=0)
    outsider = next(p for p in g.seats if p not in team)
    g.refuse(PlayCard(actor=outsider, card=Card.SUCCESS), Reason.NOT_YOUR_TURN)
    g.do(PlayCard(actor=team[0], card=Card.SUCCESS))
    g.refuse(PlayCard(actor=team[0], card=Card.SUCCESS), Reason.ALREADY_ACTED)


def test_only_the_number_of_fail_cards_is_announced_never_who_played_them():
    """docs/rules.md §3.3: only counts are announced."""
    g, team = _on_quest(evil=1)
    g.play_all({team[0]: Card.FAIL})
    result = g.last_of(QuestResolved)
    assert result.audience == PUBLIC
    assert (result.successes, result.fails, result.failed) == (len(team) - 1, 1, True)
    assert {f.name for f in fields(QuestResolved)} == {
        "audience", "quest", "team", "successes", "fails", "failed", "excalibur_holder", "excalibur_target"}
    for e in g.events(CardPlayed):
        assert e.audience.players == (e.player,)
    assert all(not hasattr(e, "card") for e in g.log if e.audience == PUBLIC)
    assert view(g.state, team[1]).quest_results[-1].fails == 1


def test_after_a_quest_the_next_seat_leads_and_the_vote_track_resets():
    """docs/rules.md §3.4."""
    g = Game(players=5)
    g.reject_proposal()
    assert g.state.vote_track == 1
    leader = g.leader
    g.win_quest()
    assert g.state.quest == 2 and g.phase is Phase.PROPOSAL
    assert g.leader == _next_seat(g, leader)
    assert g.state.vote_track == 0 and view(g.state, None).vote_track == 0


def test_a_button_from_a_phase_that_is_over_is_refused_as_stale():
    """docs/rules.md §3: a command for an earlier phase changes nothing."""
    g = Game(players=5)
    old = g.state.phase_id
    g.propose()
    g.refuse(CastVote(actor=g.seats[0], approve=True, phase_id=old), Reason.STALE_PHASE)
    g.do(CastVote(actor=g.seats[0], approve=True, phase_id=g.state.phase_id))


def test_a_command_of_another_phase_is_refused():
    """docs/rules.md §3: proposal, then vote, then quest, in order."""
    g = Game(players=5)
    g.refuse(CastVote(actor=g.seats[0], approve=True), Reason.WRONG_PHASE)
    g.refuse(PlayCard(actor=g.leader, card=Card.SUCCESS), Reason.WRONG_PHASE)
    g.propose()
    g.refuse(ProposeTeam(actor=g.leader, team=tuple(g.seats[:2])), Reason.WRONG_PHASE)
    g.vote_all(True)
    g.refuse(CastVote(actor=g.seats[0], approve=True), Reason.WRONG_PHASE)


# -- the hammer ----------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["classic", "forum"])
def test_fifth_rejection_hands_evil_the_win(preset):
    """docs/rules.md §3 (hammer, classic and forum) and §4."""
    g = Game(players=5, preset=preset)
    for track in range(1, 5):
        g.reject_proposal()
        assert g.phase is Phase.PROPOSAL and g.state.vote_track == track
    g.reject_proposal()
    end = g.last_of(GameEnded)
    assert (end.winner, end.cause) == (Team.EVIL, WinCause.HAMMER)
    assert g.phase is Phase.ENDED and g.state.winner is Team.EVIL


def test_five_rejections_spread_over_two_quests_are_no_hammer():
    """docs/rules.md §3: five consecutive rejections on the same quest."""
    g = Game(players=5)
    for _ in range(4):
        g.reject_proposal()
    g.win_quest()
    for _ in range(4):
        g.reject_proposal()
    assert g.phase is Phase.PROPOSAL and g.state.vote_track == 4


def test_online_fifth_proposal_goes_straight_to_the_quest():
    """docs/rules.md §3 (hammer, online): the fifth proposal is not voted on."""
    g = Game(players=5, preset="online")
    for _ in range(4):
        g.reject_proposal()
        assert g.events(TeamProposed)[-1].auto_approved is False
    assert g.state.vote_track == 4
    revealed = len(g.events(VotesRevealed))
    g.propose()
    assert g.last_of(TeamProposed).auto_approved is True
    assert g.phase is Phase.QUEST
    assert len(g.events(VotesRevealed)) == revealed
    g.refuse(CastVote(actor=g.seats[0], approve=False), Reason.WRONG_PHASE)
    g.play_all()
    assert g.last_of(QuestResolved).failed is False
    assert g.state.quest == 2 and g.state.vote_track == 0


def test_online_evil_never_wins_by_rejections():
    """docs/rules.md §3 (online): evil cannot win by rejections."""
    g = Game(players=5, preset="online")
    for _ in range(3):
        for _ in range(4):
            g.reject_proposal()
        g.propose()
        assert g.phase is Phase.QUEST
        g.play_all()
    assert not g.events(GameEnded)
    assert g.phase is Phase.ASSASSINATION


def test_forum_missed_proposal_counts_as_neither_approved_nor_rejected():
    """docs/rules.md §3 (forum hammer) and §7: a proposal cancelled for a missed deadline."""
    g = Game(players=5, preset="forum")
    g.reject_proposal()
    leader = g.leader
    g.timeout()
    missed = g.last_of(ProposalMissed)
    assert missed.counts_as_rejection is False and missed.vote_track == 1
    assert g.state.vote_track == 1
    assert g.phase is Phase.PROPOSAL and g.leader == _next_seat(g, leader)
    assert not any(isinstance(e, VotesRevealed) for e in g.last)


def test_forum_missed_proposal_does_not_save_good_from_the_fifth_rejection():
    """docs/rules.md §3 (forum): the missed proposal is not counted, so the 5th rejection still wins."""
    g = Game(players=5, preset="forum")
    for _ in range(4):
        g.reject_proposal()
    g.timeout()
    assert g.phase is Phase.PROPOSAL and g.state.vote_track == 4
    g.reject_proposal()
    assert g.last_of(GameEnded).cause is WinCause.HAMMER
