"""Scenario tests: players, teams, quest sizes, roles and the night (docs/rules.md §1 and §2)."""

from __future__ import annotations

import pytest

from avalon.services.engine.rules import ChangeOptions, CreateGame, Join, Options, StartGame, apply, new_game
from avalon.shared.game.errors import Reason, Rejection
from avalon.shared.game.events import NOBODY, PUBLIC, Dealt, QuestResolved, RoleAssigned
from avalon.shared.game.model import Card, Knowledge, Lancelot, Phase, Role, Team
from avalon.services.engine.rules.view import view

from tests.unit.rules_core_kit import (
    Game, night, night_in_view, started, team_counts, team_with,
)

K = Knowledge

# docs/rules.md §1, copied by hand so a wrong engine table makes these tests fail.
TABLE = {
    #    good evil  quest sizes 1..5
    5: (3, 2, (2, 3, 2, 3, 3)),
    6: (4, 2, (2, 3, 4, 3, 4)),
    7: (4, 3, (2, 3, 3, 4, 4)),
    8: (5, 3, (3, 4, 4, 5, 5)),
    9: (6, 3, (3, 4, 4, 5, 5)),
    10: (6, 4, (3, 4, 4, 5, 5)),
    11: (7, 4, (3, 4, 4, 5, 5)),
    12: (8, 4, (4, 5, 5, 6, 6)),
}


def _preset_for(n: int) -> str:
    return "forum" if n > 10 else "classic"


# -- §1 players and teams --------------------------------------------------------


@pytest.mark.parametrize("n", sorted(TABLE))
def test_dealt_roles_split_good_and_evil_as_the_table_says(n):
    """docs/rules.md §1: good/evil counts for 5..12 players."""
    g = Game(players=n, preset=_preset_for(n))
    good, evil, _ = TABLE[n]
    dealt = [e.team for e in g.events(RoleAssigned)]
    assert len(dealt) == n
    assert (dealt.count(Team.GOOD), dealt.count(Team.EVIL)) == (good, evil)
    assert team_counts(started(g).roles_in_play) == (good, evil)
    assert (len(g.good()), len(g.evil())) == (good, evil)


@pytest.mark.parametrize("n", sorted(TABLE))
def test_game_started_announces_the_quest_sizes_of_the_table(n):
    """docs/rules.md §1: quest sizes, and the starred quest 4 from 7 players."""
    g = Game(players=n, preset=_preset_for(n))
    e = started(g)
    assert e.quest_sizes == TABLE[n][2]
    assert e.fails_needed == ((1, 1, 1, 2, 1) if n >= 7 else (1, 1, 1, 1, 1))
    assert view(g.state, None).quest_sizes == TABLE[n][2]


def _to_quest_four(g: Game) -> None:
    """Two successes and one failure: quest 4 decides nothing yet on its own."""
    g.win_quest()
    g.lose_quest()
    g.win_quest()
    assert g.state.quest == 4 and g.phase is Phase.PROPOSAL


def _quest_four_with_fails(players: int, fails: int) -> QuestResolved:
    g = Game(players=players, seed=5)
    _to_quest_four(g)
    team = team_with(g, evil=fails)
    g.propose(team)
    g.vote_all(True)
    g.play_all({p: Card.FAIL for p in team[:fails]})
    return g.last_of(QuestResolved)


def test_one_fail_on_quest_four_with_seven_players_still_succeeds():
    """docs/rules.md §1 (*): quest 4 from 7 players needs two fail cards."""
    result = _quest_four_with_fails(7, 1)
    assert (result.quest, result.fails, result.failed) == (4, 1, False)


def test_two_fails_on_quest_four_with_seven_players_fail_it():
    """docs/rules.md §1 (*)."""
    result = _quest_four_with_fails(7, 2)
    assert (result.quest, result.fails, result.failed) == (4, 2, True)


def test_one_fail_on_quest_four_with_six_players_fails_it():
    """docs/rules.md §1: below 7 players every quest fails with one fail card."""
    result = _quest_four_with_fails(6, 1)
    assert (result.quest, result.fails, result.failed) == (4, 1, True)


def test_one_fail_on_quest_three_with_seven_players_fails_it():
    """docs/rules.md §1: only quest 4 is starred."""
    g = Game(players=7, seed=5)
    g.win_quest()
    g.win_quest()
    team = team_with(g, evil=1)
    g.propose(team)
    g.vote_all(True)
    g.play_all({team[0]: Card.FAIL})
    assert g.last_of(QuestResolved).failed is True


def test_fewer_than_five_players_cannot_start():
    """docs/rules.md §1: 5 players at least."""
    g = Game(players=4, start=False)
    r = g.refuse(StartGame(actor="p1"), Reason.TOO_FEW_PLAYERS)
    assert "5" in r.message and "4" in r.message
    assert g.phase is Phase.LOBBY


@pytest.mark.parametrize("n", [11, 12])
@pytest.mark.parametrize("preset", ["classic", "online"])
def test_eleven_or_twelve_players_are_refused_outside_the_forum_preset(preset, n):
    """docs/rules.md §1 and §9: 11-12 players only in the forum preset."""
    g = Game(players=n, preset="forum", start=False)
    g.refuse(ChangeOptions(actor="p1", options=Options.preset_defaults(preset)), Reason.TOO_MANY_PLAYERS)
    assert g.state.options.preset.value == "forum"


@pytest.mark.parametrize("preset", ["classic", "online"])
def test_an_eleventh_player_cannot_join_a_classic_or_online_lobby(preset):
    """docs/rules.md §9: classic and online seat 5-10 players."""
    g = Game(players=10, preset=preset, start=False)
    g.refuse(Join(actor="p11"), Reason.LOBBY_FULL)


@pytest.mark.parametrize("preset", ["classic", "online"])
def test_raising_max_players_does_not_seat_eleven_in_classic_or_online(preset):
    """docs/rules.md §9: classic and online are 5-10 players, whatever max_players says.

    Either the setting is refused, or the lobby stops at ten, or the start is refused.
    """
    options = Options.preset_defaults(preset, max_players=11)
    state = new_game()
    r = apply(state, CreateGame(actor="p1", game_id="g", seed=1, options=options))
    if isinstance(r, Rejection):
        assert r.reason is Reason.INVALID_OPTION
        return
    state = r.state
    for i in range(2, 12):
        r = apply(state, Join(actor=f"p{i}"))
        if isinstance(r, Rejection):
            assert r.reason is Reason.LOBBY_FULL and i == 11
            return
        state = r.state
    r = apply(state, StartGame(actor="p1"))
    assert isinstance(r, Rejection), "a classic/online game started with 11 players"
    assert r.reason is Reason.TOO_MANY_PLAYERS


@pytest.mark.parametrize("n", [11, 12])
def test_forum_preset_plays_with_eleven_and_twelve(n):
    """docs/rules.md §1, §9: forum 5-12."""
    g = Game(players=n, preset="forum")
    assert g.phase is Phase.PROPOSAL and len(g.seats) == n


# -- §2 the night -----------------------------------------------------------------


def _ten() -> Game:
    """10 players, standard set: Merlin, Percival, Assassin, Morgana, Mordred, Oberon."""
    g = Game(players=10, seed=2)
    assert {g.role(p) for p in g.seats} >= {Role.MERLIN, Role.PERCIVAL, Role.ASSASSIN, Role.MORGANA,
                                             Role.MORDRED, Role.OBERON}
    return g


def _both(g: Game, player: str) -> dict[str, Knowledge]:
    told = night(g, player)
    assert night_in_view(g, player) == told, "the view and the RoleAssigned event disagree"
    return told


def test_merlin_sees_every_evil_player_but_mordred_and_sees_oberon():
    """docs/rules.md §2: Merlin sees evil except Mordred; Oberon included; names only."""
    g = _ten()
    w = g.who
    assert _both(g, w(Role.MERLIN)) == {w(Role.ASSASSIN): K.EVIL, w(Role.MORGANA): K.EVIL,
                                        w(Role.OBERON): K.EVIL}


def test_percival_sees_merlin_and_morgana_without_knowing_which_is_which():
    """docs/rules.md §2."""
    g = _ten()
    w = g.who
    assert _both(g, w(Role.PERCIVAL)) == {w(Role.MERLIN): K.MERLIN_OR_MORGANA,
                                          w(Role.MORGANA): K.MERLIN_OR_MORGANA}


def test_percival_sees_only_merlin_when_morgana_is_absent():
    """docs/rules.md §2: only Merlin if Morgana is absent."""
    g = Game(players=7, roles=(Role.PERCIVAL, Role.MORDRED))
    assert Role.MORGANA not in started(g).roles_in_play
    assert _both(g, g.who(Role.PERCIVAL)) == {g.who(Role.MERLIN): K.MERLIN_OR_MORGANA}


@pytest.mark.parametrize("role", [Role.ASSASSIN, Role.MORGANA, Role.MORDRED])
def test_evil_players_see_each_other_but_not_oberon(role):
    """docs/rules.md §2: the evil see one another except Oberon."""
    g = _ten()
    me = g.who(role)
    others = {g.who(r) for r in (Role.ASSASSIN, Role.MORGANA, Role.MORDRED)} - {me}
    assert _both(g, me) == {p: K.EVIL for p in others}


def test_a_minion_sees_the_other_evil_players_and_merlin_sees_him():
    """docs/rules.md §2: Minion of Mordred as Assassin."""
    g = Game(players=8, roles=(Role.PERCIVAL, Role.MORGANA))
    minion = g.who(Role.MINION)
    assert _both(g, minion) == {g.who(Role.ASSASSIN): K.EVIL, g.who(Role.MORGANA): K.EVIL}
    assert _both(g, g.who(Role.MERLIN)) == {p: K.EVIL for p in g.evil()}


def test_oberon_sees_nobody():
    """docs/rules.md §2."""
    g = _ten()
    assert _both(g, g.who(Role.OBERON)) == {}


def test_a_loyal_servant_learns_nothing():
    """docs/rules.md §2."""
    g = _ten()
    for p in g.seats:
        if g.role(p) is Role.LOYAL_SERVANT:
            assert _both(g, p) == {}


def test_with_oberon_known_to_evil_the_evil_team_sees_oberon_but_he_still_sees_nobody():
    """docs/rules.md §2, vi variant ``oberon_known_to_evil``."""
    g = Game(players=10, seed=2, oberon_known_to_evil=True)
    w = g.who
    oberon = w(Role.OBERON)
    for role in (Role.ASSASSIN, Role.MORGANA, Role.MORDRED):
        assert _both(g, w(role)).get(oberon) is K.EVIL
    assert _both(g, oberon) == {}
    assert _both(g, w(Role.MERLIN))[oberon] is K.EVIL


def test_the_night_tells_names_never_roles():
    """docs/rules.md §2: names without roles (the knowledge is only EVIL / MERLIN_OR_MORGANA)."""
    g = _ten()
    for e in g.events(RoleAssigned):
        assert {k for _, k in e.knowledge} <= {K.EVIL, K.MERLIN_OR_MORGANA}


def test_each_role_assigned_event_goes_only_to_its_player():
    """docs/rules.md §2: the role and the night are private."""
    g = _ten()
    events = g.events(RoleAssigned)
    assert sorted(e.player for e in events) == sorted(g.seats)
    for e in events:
        assert e.audience.players == (e.player,)
        assert e.audience.includes(e.player)
        assert not any(e.audience.includes(p) for p in g.seats if p != e.player)
        assert not e.audience.includes(None)
        assert e.role is g.role(e.player) and e.team is e.role.team
    assert g.events(Dealt)[-1].audience == NOBODY
    # the public announcement names the cards in play, never who holds them
    assert started(g).audience == PUBLIC
    assert not hasattr(started(g), "roles")


def test_a_player_view_shows_his_own_role_and_nobody_elses():
    """docs/rules.md §2."""
    g = _ten()
    merlin = g.who(Role.MERLIN)
    v = view(g.state, merlin)
    assert v.role is Role.MERLIN and v.allegiance is Team.GOOD
    assert view(g.state, None).role is None and view(g.state, None).knowledge == ()
    assert view(g.state, "stranger").role is None


# -- §2 role sets ---------------------------------------------------------------------

STANDARD = {
    5: [Role.ASSASSIN, Role.MORGANA],
    6: [Role.ASSASSIN, Role.MORGANA],
    7: [Role.ASSASSIN, Role.MORGANA, Role.MORDRED],
    8: [Role.ASSASSIN, Role.MORGANA, Role.MORDRED],
    9: [Role.ASSASSIN, Role.MORGANA, Role.MORDRED],
    10: [Role.ASSASSIN, Role.MORGANA, Role.MORDRED, Role.OBERON],
}


@pytest.mark.parametrize("n", sorted(STANDARD))
def test_the_standard_set_is_merlin_percival_and_the_recommended_evil_roles(n):
    """docs/rules.md §2: standard set per player count; other seats are Servants and Minions."""
    g = Game(players=n)
    good, evil, _ = TABLE[n]
    specials_evil = STANDARD[n]
    expected = ([Role.MERLIN, Role.PERCIVAL] + [Role.LOYAL_SERVANT] * (good - 2)
                + specials_evil + [Role.MINION] * (evil - len(specials_evil)))
    assert sorted(started(g).roles_in_play) == sorted(expected)
    assert sorted(g.role(p) for p in g.seats) == sorted(expected)


def _start_with_roles(players: int, roles, **options):
    g = Game(players=players, start=False, roles=tuple(roles), **options)
    return g, apply(g.state, StartGame(actor="p1"))


def test_more_special_evil_roles_than_evil_seats_is_refused_with_the_numbers():
    """docs/rules.md §2: a selection that does not fit is refused with a clear reason."""
    g, r = _start_with_roles(5, (Role.MORGANA, Role.MORDRED, Role.OBERON))
    assert isinstance(r, Rejection) and r.reason is Reason.TOO_MANY_EVIL_ROLES
    assert "2 evil seats" in r.message and "3" in r.message
    assert g.phase is Phase.LOBBY


@pytest.mark.parametrize("role", [Role.LOYAL_SERVANT, Role.MINION, Role.MERLIN, Role.ASSASSIN])
def test_a_role_that_is_not_optional_cannot_be_selected(role):
    """docs/rules.md §2: the host picks only optional roles (Percival, Morgana, Mordred, Oberon)."""
    g = Game(players=5, start=False)
    r = g.refuse(ChangeOptions(actor="p1", options=Options(roles=(Role.PERCIVAL, role))),
                 Reason.ROLE_NOT_SELECTABLE)
    assert role.value in r.message
    r = apply(new_game(), CreateGame(actor="h", game_id="g", seed=1, options=Options(roles=(role,))))
    assert isinstance(r, Rejection) and r.reason is Reason.ROLE_NOT_SELECTABLE


def test_a_role_listed_twice_is_refused():
    """docs/rules.md §2."""
    g = Game(players=5, start=False)
    r = g.refuse(ChangeOptions(actor="p1", options=Options(roles=(Role.MORGANA, Role.MORGANA))),
                 Reason.INVALID_OPTION)
    assert "roles" in r.message


def test_the_host_may_pick_any_optional_roles_that_fit():
    """docs/rules.md §2: remaining seats are Loyal Servants or Minions; Merlin and Assassin always."""
    g = Game(players=7, roles=(Role.OBERON,))
    assert sorted(started(g).roles_in_play) == sorted(
        [Role.MERLIN] + [Role.LOYAL_SERVANT] * 3 + [Role.ASSASSIN, Role.OBERON, Role.MINION])


# -- §2 the assassin fallback -------------------------------------------------------


def test_no_assassin_is_dealt_when_morgana_and_mordred_fill_five_players_evil_seats():
    """docs/rules.md §2 (fa): Morgana takes the shot."""
    g, r = _start_with_roles(5, (Role.MORGANA, Role.MORDRED))
    assert not isinstance(r, Rejection)
    g.state = r.state
    g.log.extend(r.events)
    assert Role.ASSASSIN not in started(g).roles_in_play
    assert g.events(Dealt)[-1].shooter == g.who(Role.MORGANA)


def test_mordred_takes_the_shot_when_morgana_is_absent_and_no_assassin_fits():
    """docs/rules.md §2 (fa)."""
    g = Game(players=5, roles=(Role.MORDRED, Role.OBERON))
    assert Role.ASSASSIN not in started(g).roles_in_play
    assert g.events(Dealt)[-1].shooter == g.who(Role.MORDRED)


def test_the_assassin_is_dealt_whenever_an_evil_seat_is_left():
    """docs/rules.md §2: Merlin and the Assassin are always in play when they fit."""
    g = Game(players=5, roles=(Role.OBERON,))
    assert Role.ASSASSIN in started(g).roles_in_play
    assert g.events(Dealt)[-1].shooter == g.who(Role.ASSASSIN)


def test_a_deal_with_nobody_to_shoot_is_refused():
    """docs/rules.md §2: Oberon and the evil Lancelot fill 5 players' evil seats: no shooter."""
    g, r = _start_with_roles(5, (Role.OBERON,), lancelot=Lancelot.V1)
    assert isinstance(r, Rejection) and r.reason is Reason.NO_SHOOTER
    assert "Morgana" in r.message and "Mordred" in r.message


# -- §2 seats and the first leader from the seed -----------------------------------


def _deal(seed: int, players: int = 7):
    g = Game(players=players, seed=seed)
    e = started(g)
    return e.seats, tuple(g.role(p) for p in e.seats), e.first_leader


def test_the_same_seed_deals_the_same_seats_roles_and_first_leader():
    """docs/rules.md §2 / §9: the deal is random, from the game's seed, and replays exactly."""
    assert _deal(42) == _deal(42)


def test_different_seeds_deal_differently():
    """docs/rules.md §9: seat order is random."""
    deals = {_deal(seed) for seed in range(1, 6)}
    assert len(deals) > 1
    assert len({seats for seats, _, _ in deals}) > 1
    assert any(seats != tuple(f"p{i}" for i in range(1, 8)) for seats, _, _ in deals)


def test_the_seat_order_and_first_leader_are_published():
    """docs/rules.md §9: seat order random, published."""
    g = Game(players=7, seed=9)
    e = started(g)
    assert e.audience == PUBLIC
    assert sorted(e.seats) == sorted(g.ids)
    assert e.first_leader in e.seats
    assert view(g.state, None).players == e.seats
    assert view(g.state, None).leader == e.first_leader == g.leader
