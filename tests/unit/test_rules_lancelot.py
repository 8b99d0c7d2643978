"""Lancelot, variants 1, 2 and 3 (docs/rules.md section 8; ru, nl, vi and fr seeds).

The deal is seeded: tests that need a particular loyalty deck search the seeds
in a loop (deterministically) instead of hard-coding what a seed deals.
"""

from __future__ import annotations

import pytest

from avalon.services.engine.rules import (
    Assassinate,
    Audience,
    AudienceKind,
    Confer,
    PlayCard,
    UseLady,
    legal_commands,
    view,
)
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason
from avalon.shared.game.model import (
    Card,
    CommandKind,
    Knowledge,
    Lancelot,
    LancelotDeck,
    Phase,
    Role,
    Team,
    WinCause,
)

from .gamekit import Game

GL, EL = Role.GOOD_LANCELOT, Role.EVIL_LANCELOT


# -- small helpers -------------------------------------------------------------

def find_game(predicate, **kw) -> Game:
    """The first seed whose deal satisfies ``predicate`` (deterministic search)."""
    for seed in range(1, 3000):
        g = Game(seed=seed, **kw)
        if predicate(g):
            return g
    raise AssertionError("no seed found")


def deck(g: Game) -> tuple[bool, ...]:
    """The loyalty cards as dealt (the engine's own record, never delivered)."""
    return g.events(ev.Dealt)[0].lancelot_deck


def knowledge_of(g: Game, player: str) -> dict[str, Knowledge]:
    assigned = [e for e in g.events(ev.RoleAssigned) if e.player == player]
    assert len(assigned) == 1
    assert assigned[0].audience == Audience.to(player)
    told = dict(assigned[0].knowledge)
    assert dict(view(g.state, player).knowledge) == told
    return told


def cards_for(g: Game, player: str) -> tuple[Card, ...]:
    legal = [l for l in legal_commands(g.state, player) if l.kind is CommandKind.PLAY_CARD]
    assert len(legal) == 1
    return legal[0].cards


def to_quest_team(g: Game, team) -> None:
    g.propose(tuple(team))
    g.vote_all(True)
    assert g.phase is Phase.QUEST


def fill(g: Game, must: list[str]) -> tuple[str, ...]:
    """A team for the current quest holding ``must`` plus good players."""
    team = list(must)
    for p in g.good():
        if len(team) == g.size():
            break
        if p not in team:
            team.append(p)
    return tuple(team)


#: Five quests at five players: success, fail, success, fail, then quest 5.
PLAN = ("win", "lose", "win", "lose", "win")


def play(g: Game, result: str) -> list:
    return g.win_quest() if result == "win" else g.lose_quest()


def opened(events, phase: Phase | None = None) -> list[ev.PhaseOpened]:
    return [e for e in events if isinstance(e, ev.PhaseOpened) and (phase is None or e.phase is phase)]


# == variant 1 ==================================================================

@pytest.mark.parametrize("seed", range(1, 9))
def test_v1_evil_players_know_the_evil_lancelot_who_knows_nobody(seed):
    """docs/rules.md §8 (variant 1): the evil players know the evil Lancelot, who does not know them."""
    g = Game(players=10, seed=seed, lancelot=Lancelot.V1)
    el, gl = g.who(EL), g.who(GL)
    evil_others = [p for p in g.seats if g.role(p) in (Role.ASSASSIN, Role.MORGANA, Role.MORDRED)]
    assert len(evil_others) == 3
    for p in evil_others:
        told = knowledge_of(g, p)
        assert told[el] is Knowledge.EVIL_LANCELOT
        assert gl not in told  # the good Lancelot is not known to them
    assert knowledge_of(g, el) == {}


@pytest.mark.parametrize("variant", [Lancelot.V1, Lancelot.V2])
def test_the_lancelots_do_not_know_each_other_in_variants_one_and_two(variant):
    """docs/rules.md §8 (variants 1, 2): the Lancelots do not know each other; the good one learns nothing."""
    for seed in range(1, 9):
        g = Game(players=7, seed=seed, lancelot=variant)
        el, gl = g.who(EL), g.who(GL)
        assert knowledge_of(g, gl) == {}
        assert gl not in knowledge_of(g, el)
        assert el not in knowledge_of(g, gl)
        for p in g.seats:
            assert Knowledge.OTHER_LANCELOT not in knowledge_of(g, p).values()


def test_v1_oberon_does_not_learn_the_evil_lancelot():
    """docs/rules.md §2, §8: Oberon learns nothing in the night, the evil Lancelot included."""
    g = Game(players=10, lancelot=Lancelot.V1, roles=(Role.PERCIVAL, Role.MORGANA, Role.OBERON))
    assert knowledge_of(g, g.who(Role.OBERON)) == {}
    assert g.who(Role.OBERON) not in knowledge_of(g, g.who(EL))


def test_v1_forum_deck_holds_three_no_change_and_two_switch_cards():
    """docs/rules.md §8 (variant 1, forum): the loyalty deck is 3 "no change" and 2 "switch"."""
    for seed in range(1, 20):
        g = Game(players=7, seed=seed, preset="forum", lancelot=Lancelot.V1)
        assert sorted(deck(g)) == [False, False, False, True, True]


def test_v1_boxed_deck_holds_five_no_change_and_two_switch_cards():
    """docs/rules.md §8 (variant 1, boxed game): the loyalty deck is 5 "no change" and 2 "switch"."""
    for seed in range(1, 20):
        g = Game(players=7, seed=seed, preset="classic", lancelot=Lancelot.V1)
        assert sorted(deck(g)) == [False] * 5 + [True] * 2
    g = Game(players=7, preset="forum", lancelot=Lancelot.V1, lancelot_deck=LancelotDeck.BOXED)
    assert sorted(deck(g)) == [False] * 5 + [True] * 2


@pytest.mark.parametrize("preset", ["classic", "forum"])
def test_v1_a_loyalty_card_is_drawn_publicly_at_the_start_of_quests_three_four_and_five(preset):
    """docs/rules.md §8 (variant 1): one card at the start of quests 3, 4 and 5, shown to all, before any proposal."""
    for seed in range(1, 6):
        g = Game(players=5, seed=seed, preset=preset, lancelot=Lancelot.V1)
        dealt = deck(g)
        for quest, result in enumerate(PLAN, start=1):
            assert g.state.quest == quest
            events = play(g, result)
            if quest == 5:
                break
            draws = [e for e in events if isinstance(e, ev.LoyaltyCardRevealed)]
            if quest + 1 in (3, 4, 5):
                assert len(draws) == 1
                draw = draws[0]
                assert draw.quest == quest + 1
                assert draw.audience.kind is AudienceKind.PUBLIC
                resolved = [e for e in events if isinstance(e, ev.QuestResolved)][0]
                proposal = opened(events, Phase.PROPOSAL)[0]
                assert events.index(resolved) < events.index(draw) < events.index(proposal)
                assert proposal.quest == quest + 1
            else:
                assert draws == []
        draws = g.events(ev.LoyaltyCardRevealed)
        assert [d.quest for d in draws] == [3, 4, 5]
        assert [d.switch for d in draws] == list(dealt[:3])
        assert view(g.state, None).loyalty_draws == tuple((d.quest, d.switch) for d in draws)
        # "switched" is the running parity of the switch cards
        parity = False
        for d in draws:
            parity ^= d.switch
            assert d.lancelots_switched is parity


def test_v1_before_any_switch_the_good_lancelot_must_succeed_and_the_evil_one_may_choose():
    """docs/rules.md §3, §8: a Lancelot plays for the side he is on: good must succeed, evil chooses."""
    g = Game(players=5, lancelot=Lancelot.V1)
    gl, el = g.who(GL), g.who(EL)
    to_quest_team(g, (gl, el))
    assert cards_for(g, gl) == (Card.SUCCESS,)
    assert set(cards_for(g, el)) == {Card.SUCCESS, Card.FAIL}
    g.refuse(PlayCard(actor=gl, card=Card.FAIL), Reason.CARD_NOT_ALLOWED)
    g.do(PlayCard(actor=el, card=Card.SUCCESS))  # not forced to fail in variant 1


def _first_draw_is_a_switch(g: Game) -> bool:
    return deck(g)[0]


def test_v1_a_switch_card_swaps_the_lancelots_allegiance():
    """docs/rules.md §8 (variant 1): a switch makes the good Lancelot evil and the evil one good."""
    g = find_game(_first_draw_is_a_switch, players=5, lancelot=Lancelot.V1)
    gl, el = g.who(GL), g.who(EL)
    g.win_quest()
    assert view(g.state, gl).allegiance is Team.GOOD and view(g.state, el).allegiance is Team.EVIL
    events = g.lose_quest()
    draw = [e for e in events if isinstance(e, ev.LoyaltyCardRevealed)][0]
    assert (draw.quest, draw.switch, draw.lancelots_switched) == (3, True, True)
    assert view(g.state, gl).allegiance is Team.EVIL
    assert view(g.state, el).allegiance is Team.GOOD
    assert view(g.state, gl).role is GL and view(g.state, el).role is EL  # the cards stay
    # on quest 3 they play for their new sides
    to_quest_team(g, (gl, el))
    assert set(cards_for(g, gl)) == {Card.SUCCESS, Card.FAIL}
    assert cards_for(g, el) == (Card.SUCCESS,)
    g.refuse(PlayCard(actor=el, card=Card.FAIL), Reason.CARD_NOT_ALLOWED)
    g.do(PlayCard(actor=gl, card=Card.FAIL))
    g.do(PlayCard(actor=el, card=Card.SUCCESS))
    assert g.last_of(ev.QuestResolved).fails == 1


def test_v1_a_no_change_card_keeps_the_allegiance():
    """docs/rules.md §8 (variant 1): a "no change" card is shown and nothing changes."""
    g = find_game(lambda g: not deck(g)[0], players=5, lancelot=Lancelot.V1)
    gl, el = g.who(GL), g.who(EL)
    g.win_quest()
    events = g.lose_quest()
    draw = [e for e in events if isinstance(e, ev.LoyaltyCardRevealed)][0]
    assert (draw.quest, draw.switch, draw.lancelots_switched) == (3, False, False)
    assert view(g.state, gl).allegiance is Team.GOOD and view(g.state, el).allegiance is Team.EVIL


def test_v1_two_switches_swap_the_lancelots_back():
    """docs/rules.md §8 (variant 1): two switches swap back (the good one is good again)."""
    g = find_game(lambda g: deck(g)[0] and deck(g)[1], players=5, lancelot=Lancelot.V1)
    gl, el = g.who(GL), g.who(EL)
    g.win_quest()
    g.lose_quest()
    assert view(g.state, gl).allegiance is Team.EVIL
    events = g.win_quest()
    draw = [e for e in events if isinstance(e, ev.LoyaltyCardRevealed)][0]
    assert (draw.quest, draw.switch, draw.lancelots_switched) == (4, True, False)
    assert view(g.state, gl).allegiance is Team.GOOD
    assert view(g.state, el).allegiance is Team.EVIL
    to_quest_team(g, fill(g, [gl, el]))
    assert cards_for(g, gl) == (Card.SUCCESS,)
    assert set(cards_for(g, el)) == {Card.SUCCESS, Card.FAIL}


def test_v1_after_a_switch_the_good_lancelot_wins_with_evil():
    """docs/rules.md §8: the switched Lancelot plays for, and wins with, his new side (final reveal)."""
    g = find_game(_first_draw_is_a_switch, players=5, lancelot=Lancelot.V1)
    gl, el = g.who(GL), g.who(EL)
    g.lose_quest()
    g.lose_quest()
    assert g.team_now(gl) is Team.EVIL
    to_quest_team(g, fill(g, [gl]))
    g.play_all({gl: Card.FAIL})
    end = g.last_of(ev.GameEnded)
    assert (end.winner, end.cause) == (Team.EVIL, WinCause.THREE_FAILED_QUESTS)
    teams = dict(end.teams)
    assert teams[gl] is Team.EVIL and teams[el] is Team.GOOD
    roles = dict(end.roles)
    assert roles[gl] is GL and roles[el] is EL


def test_v1_after_a_switch_the_evil_lancelot_wins_with_good_and_leaves_the_evil_conference():
    """docs/rules.md §4, §8: after a switch the conference is the evil side now; good's win includes him."""
    g = find_game(_first_draw_is_a_switch, players=5, lancelot=Lancelot.V1)
    gl, el = g.who(GL), g.who(EL)
    g.win_quest()
    g.win_quest()
    g.win_quest()  # quest 3, after the switch
    assert g.phase is Phase.ASSASSINATION
    members = g.events(ev.ConferenceOpened)[0].members
    assert gl in members and el not in members
    g.refuse(Confer(actor=el, text="I am with you"), Reason.NOT_EVIL)
    g.do(Confer(actor=gl, text="Who is Merlin?"))
    shooter = g.seats[g.state.shooter]
    g.do(Assassinate(actor=shooter, target=g.who(Role.PERCIVAL)))
    end = g.last_of(ev.GameEnded)
    assert end.winner is Team.GOOD
    teams = dict(end.teams)
    assert teams[el] is Team.GOOD and teams[gl] is Team.EVIL


def test_v1_the_lady_sees_the_lancelot_after_the_draw_of_the_quest_it_follows():
    """docs/rules.md §5, §8: the Lady after quest 3 shows a Lancelot's side as of now (after quest 3's switch)."""
    def fits(g: Game) -> bool:
        s = g.state
        holder = s.players[s.lady_holder]
        return deck(g)[0] and not deck(g)[1] and holder not in (g.who(GL), g.who(EL))

    g = find_game(fits, players=7, preset="classic", lady=True, lancelot=Lancelot.V1)
    gl, el = g.who(GL), g.who(EL)
    g.win_quest()
    g.lose_quest()
    assert g.phase is Phase.LADY
    first = view(g.state, None).lady_holder
    second = next(p for p in g.seats if p not in (first, gl, el))
    g.do(UseLady(actor=first, target=second))
    assert g.state.lancelots_switched  # quest 3's card: a switch
    g.win_quest()
    assert g.phase is Phase.LADY
    g.do(UseLady(actor=second, target=gl))
    assert g.last_of(ev.LadyResult).loyalty is Team.EVIL
    assert view(g.state, second).lady_results == ((gl, Team.EVIL),)


# == variant 2 ==================================================================

@pytest.mark.parametrize("preset", ["classic", "online", "forum"])
def test_v2_the_whole_loyalty_schedule_is_shown_to_everyone_at_the_start(preset):
    """docs/rules.md §8 (variant 2): one card per quest, drawn at the start from 5 + 2 and shown to all."""
    for seed in range(1, 15):
        g = Game(players=7, seed=seed, preset=preset, lancelot=Lancelot.V2)
        revealed = g.events(ev.LoyaltyScheduleRevealed)
        assert len(revealed) == 1
        schedule = revealed[0].schedule
        assert revealed[0].audience.kind is AudienceKind.PUBLIC
        assert len(schedule) == 5 and sum(schedule) <= 2
        assert schedule == deck(g)
        assert view(g.state, None).loyalty_schedule == schedule
        first_phase = opened(g.log)[0]
        assert g.log.index(revealed[0]) < g.log.index(first_phase)


def test_v2_switches_happen_at_the_start_of_the_scheduled_quests():
    """docs/rules.md §8 (variant 2): the Lancelots switch at the start of each quest whose card is a switch."""
    tried = 0
    for seed in range(1, 200):
        g = Game(players=5, seed=seed, lancelot=Lancelot.V2)
        schedule = g.events(ev.LoyaltyScheduleRevealed)[0].schedule
        if not any(schedule[1:]):
            continue  # want a switch that the game reaches after it started
        tried += 1
        gl, el = g.who(GL), g.who(EL)
        for quest, result in enumerate(PLAN, start=1):
            assert g.state.quest == quest
            switched = sum(schedule[:quest]) % 2 == 1
            assert view(g.state, gl).allegiance is (Team.EVIL if switched else Team.GOOD)
            assert view(g.state, el).allegiance is (Team.GOOD if switched else Team.EVIL)
            draws = [d for d in g.events(ev.LoyaltyCardRevealed) if d.quest == quest]
            assert [d.switch for d in draws] == ([True] if schedule[quest - 1] else [])
            if draws:
                # the switch came before this quest's first proposal
                proposal = [e for e in opened(g.log, Phase.PROPOSAL) if e.quest == quest][0]
                assert g.log.index(draws[0]) < g.log.index(proposal)
                assert draws[0].lancelots_switched is switched
            play(g, result)
        if tried == 6:
            break
    assert tried == 6


def _no_switch_on_quest_one(g: Game) -> bool:
    return not deck(g)[0]


def test_v2_an_evil_lancelot_on_a_quest_must_play_fail():
    """docs/rules.md §8 (variant 2): while evil, a Lancelot on a quest must play fail."""
    g = find_game(_no_switch_on_quest_one, players=5, lancelot=Lancelot.V2)
    gl, el = g.who(GL), g.who(EL)
    to_quest_team(g, (el, gl))
    assert cards_for(g, el) == (Card.FAIL,)
    g.refuse(PlayCard(actor=el, card=Card.SUCCESS), Reason.CARD_NOT_ALLOWED)
    g.refuse(PlayCard(actor=gl, card=Card.FAIL), Reason.CARD_NOT_ALLOWED)
    g.do(PlayCard(actor=el, card=Card.FAIL))
    g.do(PlayCard(actor=gl, card=Card.SUCCESS))
    assert g.last_of(ev.QuestResolved).failed is True


def test_v2_other_evil_players_still_choose_their_card():
    """docs/rules.md §3, §8 (variant 2): only the Lancelot is forced; the Assassin may play success."""
    g = find_game(_no_switch_on_quest_one, players=5, lancelot=Lancelot.V2)
    assassin = g.who(Role.ASSASSIN)
    to_quest_team(g, fill(g, [assassin]))
    assert set(cards_for(g, assassin)) == {Card.SUCCESS, Card.FAIL}
    g.do(PlayCard(actor=assassin, card=Card.SUCCESS))


def test_v2_after_a_switch_the_formerly_good_lancelot_must_play_fail():
    """docs/rules.md §8 (variant 2): once switched to evil, the good Lancelot must fail; the other must succeed."""
    g = find_game(lambda g: not deck(g)[0] and deck(g)[1], players=5, lancelot=Lancelot.V2)
    gl, el = g.who(GL), g.who(EL)
    g.win_quest()
    assert g.state.quest == 2 and g.team_now(gl) is Team.EVIL
    to_quest_team(g, fill(g, [gl, el]))
    assert cards_for(g, gl) == (Card.FAIL,)
    assert cards_for(g, el) == (Card.SUCCESS,)
    g.refuse(PlayCard(actor=gl, card=Card.SUCCESS), Reason.CARD_NOT_ALLOWED)
    g.refuse(PlayCard(actor=el, card=Card.FAIL), Reason.CARD_NOT_ALLOWED)


def test_v2_the_evil_lancelots_knowledge_matches_variant_one():
    """docs/rules.md §8 (variant 2): the evil players know the evil Lancelot, who knows nobody."""
    g = Game(players=7, lancelot=Lancelot.V2)
    el = g.who(EL)
    for p in g.seats:
        if g.role(p) in (Role.ASSASSIN, Role.MORGANA):
            assert knowledge_of(g, p)[el] is Knowledge.EVIL_LANCELOT
    assert knowledge_of(g, el) == {}


# == variant 3 ==================================================================

@pytest.mark.parametrize("seed", range(1, 6))
def test_v3_the_lancelots_know_each_other_and_the_evil_lancelot_knows_the_evil_team(seed):
    """docs/rules.md §8 (variant 3): the Lancelots know each other; the evil one knows the evil players."""
    g = Game(players=10, seed=seed, lancelot=Lancelot.V3)
    el, gl = g.who(EL), g.who(GL)
    evil_others = [p for p in g.seats if g.role(p) in (Role.ASSASSIN, Role.MORGANA, Role.MORDRED)]
    assert knowledge_of(g, gl) == {el: Knowledge.OTHER_LANCELOT}
    told = knowledge_of(g, el)
    assert told[gl] is Knowledge.OTHER_LANCELOT
    for p in evil_others:
        assert told[p] is Knowledge.EVIL
    assert set(told) == {gl, *evil_others}
    for p in evil_others:
        assert knowledge_of(g, p)[el] is Knowledge.EVIL_LANCELOT


@pytest.mark.parametrize("preset", ["classic", "forum"])
def test_v3_nothing_ever_switches(preset):
    """docs/rules.md §8 (variant 3): no loyalty deck: the Lancelots keep their side all game."""
    for seed in range(1, 6):
        g = Game(players=5, seed=seed, preset=preset, lancelot=Lancelot.V3)
        gl, el = g.who(GL), g.who(EL)
        assert deck(g) == ()
        assert view(g.state, None).loyalty_schedule is None
        for result in PLAN:
            assert g.team_now(gl) is Team.GOOD and g.team_now(el) is Team.EVIL
            play(g, result)
        assert not g.events(ev.LoyaltyCardRevealed)
        assert not g.events(ev.LoyaltyScheduleRevealed)
        assert g.phase is Phase.ASSASSINATION
        assert view(g.state, el).allegiance is Team.EVIL


def test_v3_the_evil_lancelot_may_choose_his_card():
    """docs/rules.md §8 (variant 3): only variant 2 forces the evil Lancelot to fail."""
    g = Game(players=5, lancelot=Lancelot.V3)
    el, gl = g.who(EL), g.who(GL)
    to_quest_team(g, (el, gl))
    assert set(cards_for(g, el)) == {Card.SUCCESS, Card.FAIL}
    assert cards_for(g, gl) == (Card.SUCCESS,)
    g.do(PlayCard(actor=el, card=Card.SUCCESS))
