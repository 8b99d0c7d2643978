"""Lady of the Lake (docs/rules.md section 5; fr and vi seeds).

Scenario tests: each plays a short game with the ``Game`` driver and checks
what the players would notice (events, their audience, the views).
"""

from __future__ import annotations

import pytest

from avalon.services.engine.rules import (
    Audience,
    AudienceKind,
    UseLady,
    legal_commands,
    view,
)
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason
from avalon.shared.game.model import CommandKind, Lancelot, Phase, Role, Team

from .gamekit import Game


# -- small helpers -------------------------------------------------------------

def opened(events, phase: Phase | None = None) -> list[ev.PhaseOpened]:
    return [e for e in events if isinstance(e, ev.PhaseOpened) and (phase is None or e.phase is phase)]


def holder(g: Game) -> str:
    """The Lady's holder as the table sees her (public view)."""
    return view(g.state, None).lady_holder


def examine(g: Game, target: str) -> list:
    return g.do(UseLady(actor=holder(g), target=target))


def someone_new(g: Game, avoid=()) -> str:
    """A player who may still be examined (has not held the Lady), not in ``avoid``."""
    past = {h for h, _ in view(g.state, None).lady_log} | {t for _, t in view(g.state, None).lady_log}
    past.add(holder(g))
    return next(p for p in g.seats if p not in past and p not in avoid)


def vars_of(e) -> dict:
    return {name: getattr(e, name) for name in e.__dataclass_fields__}


def last_examiner(g: Game) -> str:
    """Who used the Lady last (she has moved on to the examined player)."""
    return g.events(ev.LadyUsed)[-1].holder


def find_game(predicate, **kw) -> Game:
    """The first seed whose deal satisfies ``predicate`` (deterministic search)."""
    for seed in range(1, 3000):
        g = Game(seed=seed, **kw)
        if predicate(g):
            return g
    raise AssertionError("no seed found")


# -- who holds her first ---------------------------------------------------------

@pytest.mark.parametrize("players", [5, 7, 10])
def test_lady_starts_with_the_player_seated_before_the_first_leader(players):
    """docs/rules.md §5: at the start the Lady goes to the player seated before the first leader."""
    for seed in range(1, 25):
        g = Game(players=players, seed=seed, lady=True)
        started = g.events(ev.GameStarted)[0]
        seats = started.seats
        first = seats.index(started.first_leader)
        assert started.lady_holder == seats[(first - 1) % players]
        assert holder(g) == started.lady_holder
        assert started.audience.kind is AudienceKind.PUBLIC


def test_no_lady_holder_is_announced_when_the_lady_is_not_in_play():
    """docs/rules.md §5: the Lady is optional; off, nobody holds her and no Lady phase ever opens."""
    g = Game(players=7, lady=False)
    assert g.events(ev.GameStarted)[0].lady_holder is None
    assert holder(g) is None
    g.win_quest()
    g.lose_quest()
    assert g.phase is Phase.PROPOSAL
    assert not opened(g.log, Phase.LADY)


# -- when she is used ------------------------------------------------------------

def test_lady_is_not_used_after_the_first_quest():
    """docs/rules.md §5: the Lady is used after quests 2, 3 and 4, not after quest 1."""
    g = Game(players=7, lady=True)
    g.win_quest()
    assert g.phase is Phase.PROPOSAL
    assert g.state.quest == 2
    assert not opened(g.log, Phase.LADY)


def test_lady_is_offered_to_her_holder_right_after_the_second_quest():
    """docs/rules.md §5: after quest 2 the holder (and only the holder) is asked to use the Lady."""
    g = Game(players=7, lady=True)
    first_holder = holder(g)
    g.win_quest()
    last = g.lose_quest()
    kinds = [type(e) for e in last]
    resolved = kinds.index(ev.QuestResolved)
    lady = opened(last, Phase.LADY)
    assert len(lady) == 1
    assert kinds.index(ev.PhaseOpened) > resolved
    assert lady[0].actors == (first_holder,)
    assert not opened(last, Phase.PROPOSAL)  # no proposal before the Lady
    assert g.phase is Phase.LADY
    legal = legal_commands(g.state, first_holder)
    assert [l.kind for l in legal if l.kind is CommandKind.USE_LADY]
    others = [p for p in g.seats if p != first_holder]
    for p in others:
        assert not [l for l in legal_commands(g.state, p) if l.kind is CommandKind.USE_LADY]


def test_lady_is_used_after_quests_two_three_and_four_and_at_most_three_times():
    """docs/rules.md §5: after quests 2, 3, 4 only: three uses at most, none after quest 5."""
    g = Game(players=5, lady=True)
    uses_after = []
    plan = [g.win_quest, g.lose_quest, g.win_quest, g.lose_quest, g.win_quest]
    for quest, play in enumerate(plan, start=1):
        play()
        if g.phase is Phase.LADY:
            uses_after.append(quest)
            examine(g, someone_new(g))
        else:
            assert quest not in (2, 3, 4)
    assert uses_after == [2, 3, 4]
    assert len(g.events(ev.LadyUsed)) == 3
    assert g.phase is Phase.ASSASSINATION  # quest 5 won: three successes, no fourth Lady
    assert len(opened(g.log, Phase.LADY)) == 3


def test_lady_is_not_used_when_the_second_success_of_three_ends_the_quests():
    """docs/rules.md §5: after quest 3, if that quest made three successes, the game goes to the shot."""
    g = Game(players=7, lady=True)
    g.win_quest()
    g.win_quest()
    examine(g, someone_new(g))
    g.win_quest()
    assert g.phase is Phase.ASSASSINATION
    assert len(opened(g.log, Phase.LADY)) == 1


def test_lady_is_not_used_when_the_third_failure_ends_the_game():
    """docs/rules.md §5: no Lady after the quest that ended the game (three failed quests)."""
    g = Game(players=5, lady=True)
    g.lose_quest()
    g.lose_quest()
    examine(g, someone_new(g))
    g.lose_quest()
    assert g.phase is Phase.ENDED
    assert g.state.winner is Team.EVIL
    assert len(opened(g.log, Phase.LADY)) == 1


def test_lady_is_not_used_after_quest_four_when_it_ended_the_game():
    """docs/rules.md §5: quest 4 giving the third success goes straight to the assassination."""
    g = Game(players=5, lady=True)
    g.win_quest()
    g.lose_quest()
    examine(g, someone_new(g))
    g.win_quest()
    examine(g, someone_new(g))
    g.win_quest()
    assert g.phase is Phase.ASSASSINATION
    assert len(opened(g.log, Phase.LADY)) == 2


# -- what she shows, and to whom ---------------------------------------------------

def test_lady_result_is_told_only_to_the_holder_and_the_public_learns_only_who_was_examined():
    """docs/rules.md §5: the holder privately learns the loyalty; the table learns who examined whom."""
    g = Game(players=7, lady=True)
    g.win_quest()
    g.lose_quest()
    h = holder(g)
    target = next(p for p in g.evil() if p != h)
    events = examine(g, target)
    result = [e for e in events if isinstance(e, ev.LadyResult)]
    assert len(result) == 1
    assert result[0].audience == Audience.to(h)
    assert result[0].loyalty is Team.EVIL
    assert result[0].target == target
    used = [e for e in events if isinstance(e, ev.LadyUsed)]
    assert len(used) == 1
    assert used[0].audience.kind is AudienceKind.PUBLIC
    assert (used[0].holder, used[0].target) == (h, target)
    assert not hasattr(used[0], "loyalty")
    # no public event of this step carries a loyalty
    for e in events:
        if e.audience.kind is AudienceKind.PUBLIC:
            assert not isinstance(e, ev.LadyResult)
            assert Team.EVIL not in vars_of(e).values()
    # the views: the holder remembers, nobody else knows
    assert view(g.state, h).lady_results == ((target, Team.EVIL),)
    for p in g.seats:
        if p != h:
            assert view(g.state, p).lady_results == ()
    assert view(g.state, None).lady_results == ()
    assert view(g.state, None).lady_log == ((h, target),)


def test_lady_shows_a_good_player_as_good():
    """docs/rules.md §5: the loyalty is good or evil; a loyal player shows good (no role is told)."""
    g = Game(players=7, lady=True)
    g.win_quest()
    g.lose_quest()
    h = holder(g)
    target = next(p for p in g.good() if p != h)
    examine(g, target)
    assert g.last_of(ev.LadyResult).loyalty is Team.GOOD
    assert view(g.state, h).lady_results == ((target, Team.GOOD),)


def test_examined_player_becomes_the_holder_and_uses_her_next_time():
    """docs/rules.md §5: the examined player becomes the holder and uses her after the next quest."""
    g = Game(players=7, lady=True)
    g.win_quest()
    g.lose_quest()
    target = someone_new(g)
    examine(g, target)
    assert holder(g) == target
    assert g.phase is Phase.PROPOSAL and g.state.quest == 3
    g.win_quest()
    assert g.phase is Phase.LADY
    assert opened(g.last, Phase.LADY)[0].actors == (target,)


def test_holder_cannot_examine_herself():
    """docs/rules.md §5: the holder examines another player."""
    g = Game(players=7, lady=True)
    g.win_quest()
    g.lose_quest()
    h = holder(g)
    g.refuse(UseLady(actor=h, target=h), Reason.LADY_INVALID_TARGET)


def test_holder_cannot_examine_a_player_who_has_held_the_lady():
    """docs/rules.md §5: only a player who has not held the Lady may be examined (the first holder too)."""
    g = Game(players=5, lady=True)
    first = holder(g)
    g.win_quest()
    g.lose_quest()
    second = someone_new(g)
    examine(g, second)
    g.win_quest()
    assert g.phase is Phase.LADY
    g.refuse(UseLady(actor=second, target=first), Reason.LADY_INVALID_TARGET)
    g.refuse(UseLady(actor=second, target=second), Reason.LADY_INVALID_TARGET)
    legal = [l for l in legal_commands(g.state, second) if l.kind is CommandKind.USE_LADY][0]
    assert first not in legal.targets and second not in legal.targets
    third = someone_new(g)
    examine(g, third)
    g.lose_quest()
    assert g.phase is Phase.LADY
    for past in (first, second, third):
        g.refuse(UseLady(actor=third, target=past), Reason.LADY_INVALID_TARGET)


def test_lady_cannot_examine_someone_who_is_not_playing():
    """docs/rules.md §5: the Lady examines a player of this game."""
    g = Game(players=7, lady=True)
    g.win_quest()
    g.lose_quest()
    g.refuse(UseLady(actor=holder(g), target="stranger"), Reason.LADY_INVALID_TARGET)


def test_only_the_holder_may_use_the_lady():
    """docs/rules.md §5: the holder examines; anyone else is told it is not their turn."""
    g = Game(players=7, lady=True)
    g.win_quest()
    g.lose_quest()
    h = holder(g)
    target = someone_new(g)
    other = next(p for p in g.seats if p not in (h, target))
    g.refuse(UseLady(actor=other, target=target), Reason.NOT_YOUR_TURN)
    g.refuse(UseLady(actor=target, target=other), Reason.NOT_YOUR_TURN)


def test_lady_cannot_be_used_outside_her_phase():
    """docs/rules.md §5: the Lady is used only after quests 2-4, not during a proposal."""
    g = Game(players=7, lady=True)
    h = holder(g)
    target = next(p for p in g.seats if p != h)
    g.refuse(UseLady(actor=h, target=target), Reason.WRONG_PHASE)


# -- loyalty "as of now" and the forum timing ---------------------------------------

def _switch_at_quest_three(g: Game) -> bool:
    s = g.state
    lady = s.players[s.lady_holder]
    lancelots = (g.who(Role.GOOD_LANCELOT), g.who(Role.EVIL_LANCELOT))
    return s.lancelot_deck[0] and lady not in lancelots


@pytest.mark.parametrize("lancelot_role, shown", [(Role.GOOD_LANCELOT, Team.EVIL),
                                                   (Role.EVIL_LANCELOT, Team.GOOD)])
def test_lady_shows_a_switched_lancelot_on_his_new_side(lancelot_role, shown):
    """docs/rules.md §5 and §8: the loyalty is "as of now": after a switch a Lancelot shows his new side."""
    g = find_game(_switch_at_quest_three, players=7, preset="forum", lady=True, lancelot=Lancelot.V1)
    g.win_quest()
    g.lose_quest()
    # forum: the draw of quest 3 (a switch) came first, then the Lady
    assert g.events(ev.LoyaltyCardRevealed)[-1].switch is True
    assert g.phase is Phase.LADY
    target = g.who(lancelot_role)
    examine(g, target)
    assert g.last_of(ev.LadyResult).loyalty is shown
    assert view(g.state, last_examiner(g)).lady_results == ((target, shown),)


def test_forum_lady_is_used_at_the_start_of_the_next_quest_after_the_lancelot_draw_and_before_the_proposal():
    """docs/rules.md §5 (forum): start of the next quest, after any Lancelot draw, before any proposal."""
    g = Game(players=7, seed=3, preset="forum", lady=True, lancelot=Lancelot.V1)
    g.win_quest()
    last = g.win_quest()
    kinds = [type(e) for e in last]
    i_resolved = kinds.index(ev.QuestResolved)
    i_draw = kinds.index(ev.LoyaltyCardRevealed)
    lady = opened(last, Phase.LADY)
    assert len(lady) == 1
    i_lady = last.index(lady[0])
    assert i_resolved < i_draw < i_lady
    assert last[i_draw].quest == 3
    assert lady[0].quest == 3
    assert not opened(last, Phase.PROPOSAL)
    h = holder(g)
    after = examine(g, someone_new(g))
    kinds = [type(e) for e in after]
    assert kinds.index(ev.LadyUsed) < kinds.index(ev.PhaseOpened)
    proposal = opened(after, Phase.PROPOSAL)
    assert len(proposal) == 1 and proposal[0].quest == 3
    assert ev.LoyaltyCardRevealed not in kinds  # one draw per quest, already made
    assert len(g.events(ev.LoyaltyCardRevealed)) == 1
    # the leader of quest 3 is the next one in seat order, the Lady does not change it
    seats = g.seats
    q2_leader = [e for e in g.events(ev.TeamProposed) if e.quest == 2][-1].leader
    assert proposal[0].leader == seats[(seats.index(q2_leader) + 1) % len(seats)]
    assert h != holder(g)


def test_forum_lady_without_lancelot_opens_at_the_start_of_the_next_quest_before_the_proposal():
    """docs/rules.md §5 (forum): after quest 2 the Lady comes before the first proposal of quest 3."""
    g = Game(players=7, preset="forum", lady=True)
    g.win_quest()
    assert not opened(g.last, Phase.LADY)  # not after quest 1
    last = g.lose_quest()
    phases = [e.phase for e in opened(last)]
    assert phases == [Phase.LADY]
    assert opened(last)[0].quest == 3
    after = examine(g, someone_new(g))
    assert [e.phase for e in opened(after)] == [Phase.PROPOSAL]


def test_forum_lady_after_quest_four_is_used_at_the_start_of_quest_five_after_its_draw():
    """docs/rules.md §5 and §8 (forum): the draw of quest 5 comes before the Lady received after quest 4."""
    g = Game(players=5, preset="forum", lady=True, lancelot=Lancelot.V1)
    g.win_quest()
    g.lose_quest()
    examine(g, someone_new(g))
    g.win_quest()
    examine(g, someone_new(g))
    last = g.lose_quest()
    kinds = [type(e) for e in last]
    assert ev.LoyaltyCardRevealed in kinds
    draw = last[kinds.index(ev.LoyaltyCardRevealed)]
    lady = opened(last, Phase.LADY)
    assert draw.quest == 5 and lady and lady[0].quest == 5
    assert last.index(draw) < last.index(lady[0])
    examine(g, someone_new(g))
    assert len(g.events(ev.LadyUsed)) == 3
    assert [d.quest for d in g.events(ev.LoyaltyCardRevealed)] == [3, 4, 5]
