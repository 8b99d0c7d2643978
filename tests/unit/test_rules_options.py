"""Scenario tests: per-game options, presets, the lobby and cancelling (docs/rules.md §9)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from avalon.services.engine.rules import (
    CancelGame, CastVote, ChangeOptions, CreateGame, Join, Leave, Options, PlayCard, StartGame, Timers, apply,
    new_game,
)
from avalon.shared.game.errors import Reason, Rejection
from avalon.shared.game.events import PUBLIC, GameCancelled, GameStarted, OptionsChanged, PlayerLeft
from avalon.shared.game.model import Card, Conference, Hammer, Lancelot, MissedVote, Phase, Preset, Role
from avalon.services.engine.rules.view import view

from tests.unit.rules_core_kit import Game, started, team_with

H = 3600


# -- the presets -------------------------------------------------------------------------


def test_classic_preset_is_five_to_ten_players_with_the_hammer_named_votes_and_a_private_conference():
    """docs/rules.md §9, column classic."""
    o = Options.preset_defaults("classic")
    assert o.preset is Preset.CLASSIC
    assert o.max_players == 10
    assert o.hammer is Hammer.CLASSIC
    assert o.anonymous_votes is False and o.good_may_fail is False
    assert o.conference is Conference.PRIVATE
    assert (o.lady, o.excalibur, o.lancelot) == (False, False, Lancelot.NONE)
    assert o.roles is None  # the standard set (§2)


def test_online_preset_auto_approves_the_fifth_proposal_and_keeps_its_options_off():
    """docs/rules.md §9, column online (fa: both optional settings are off by default)."""
    o = Options.preset_defaults("online")
    assert o.preset is Preset.ONLINE
    assert o.max_players == 10
    assert o.hammer is Hammer.ONLINE
    assert o.anonymous_votes is False and o.good_may_fail is False
    assert o.conference is Conference.PRIVATE
    assert (o.lady, o.excalibur, o.lancelot) == (False, False, Lancelot.NONE)


def test_forum_preset_is_five_to_twelve_players_with_a_public_conference_and_forum_deadlines():
    """docs/rules.md §9, column forum, and §7 (forum timings and a silent voter)."""
    o = Options.preset_defaults("forum")
    assert o.preset is Preset.FORUM
    assert o.max_players == 12
    assert o.hammer is Hammer.FORUM
    assert o.anonymous_votes is False and o.good_may_fail is False
    assert o.conference is Conference.PUBLIC
    assert o.missed_vote is MissedVote.NOT_COUNTED
    t = o.timers
    assert (t.proposal, t.vote, t.quest, t.assassination) == (48 * H, 24 * H, 24 * H, 48 * H)
    assert (o.lady, o.excalibur, o.lancelot) == (False, False, Lancelot.NONE)


def test_online_optional_settings_can_be_switched_on():
    """docs/rules.md §9: ``good_may_fail`` and ``anonymous_votes`` optional in online."""
    g = Game(players=5, preset="online", good_may_fail=True, anonymous_votes=True)
    v = view(g.state, g.seats[0])
    assert v.options.good_may_fail is True and v.options.anonymous_votes is True
    g.propose(team_with(g, evil=0))
    g.vote_all(True)
    g.do(PlayCard(actor=g.state.players[g.state.team[0]], card=Card.FAIL))


@pytest.mark.parametrize("preset", ["classic", "online", "forum"])
def test_lady_excalibur_and_lancelot_are_optional_in_every_preset(preset):
    """docs/rules.md §9: Lady, Excalibur, Lancelot optional."""
    g = Game(players=8, preset=preset, lady=True, excalibur=True, lancelot=Lancelot.V1)
    assert g.phase in (Phase.PROPOSAL, Phase.LADY)
    o = started(g).options
    assert (o.lady, o.excalibur, o.lancelot) == (True, True, Lancelot.V1)


# -- the options in force are shown ----------------------------------------------------------


@pytest.mark.parametrize("preset", ["classic", "online", "forum"])
def test_the_options_in_force_are_visible_to_every_player(preset):
    """docs/rules.md §9 / §7: the rule in force is shown to players."""
    g = Game(players=6, preset=preset, last_word=True)
    o = g.state.options
    assert o.preset.value == preset and o.last_word is True
    assert started(g).options == o and started(g).audience == PUBLIC
    for p in (*g.seats, None):
        assert view(g.state, p).options == o


def test_changed_options_are_announced_in_the_lobby():
    """docs/rules.md §9: the host sets the options per game; everyone sees them."""
    g = Game(players=5, start=False)
    new = Options.preset_defaults("forum", anonymous_votes=True, roles=(Role.PERCIVAL, Role.MORGANA))
    g.do(ChangeOptions(actor="p1", options=new))
    changed = g.last_of(OptionsChanged)
    assert changed.audience == PUBLIC and changed.options == new
    assert view(g.state, "p3").options == new
    g.do(StartGame(actor="p1"))
    assert started(g).options == new and view(g.state, "p2").options.preset is Preset.FORUM


def test_only_the_host_changes_the_options():
    """docs/rules.md §9."""
    g = Game(players=5, start=False)
    g.refuse(ChangeOptions(actor="p2", options=Options(anonymous_votes=True)), Reason.NOT_HOST)
    g.refuse(ChangeOptions(actor="stranger", options=Options()), Reason.NOT_HOST)


def test_options_cannot_change_once_the_game_has_started():
    """docs/rules.md §9: the options are fixed per game."""
    g = Game(players=5)
    g.refuse(ChangeOptions(actor="p1", options=Options(anonymous_votes=True)), Reason.WRONG_PHASE)


@pytest.mark.parametrize("timers", [
    Timers(vote=29), Timers(proposal=0), Timers(quest=-60), Timers(assassination=14 * 24 * H + 1),
    Timers(last_word=1.5),
])
def test_a_timer_outside_thirty_seconds_to_fourteen_days_is_refused(timers):
    """docs/rules.md §7 and §9: each phase's timer is set by the host, within bounds."""
    g = Game(players=5, start=False)
    r = g.refuse(ChangeOptions(actor="p1", options=Options(timers=timers)), Reason.INVALID_OPTION)
    assert "timers." in r.message
    r = apply(new_game(), CreateGame(actor="h", game_id="g", seed=1, options=Options(timers=timers)))
    assert isinstance(r, Rejection) and r.reason is Reason.INVALID_OPTION


def test_timers_at_the_bounds_are_accepted():
    """docs/rules.md §7: a live game wants minutes, a forum game days."""
    g = Game(players=5, start=False)
    g.do(ChangeOptions(actor="p1", options=Options(timers=Timers(vote=30, proposal=14 * 24 * H))))
    g.do(StartGame(actor="p1"))
    assert view(g.state, None).timeout_seconds == 14 * 24 * H


@pytest.mark.parametrize("max_players", [4, 13])
def test_a_player_limit_outside_five_to_twelve_is_refused(max_players):
    """docs/rules.md §1."""
    g = Game(players=5, start=False)
    g.refuse(ChangeOptions(actor="p1", options=replace(Options.preset_defaults("forum"), max_players=max_players)),
             Reason.INVALID_OPTION)


# -- cancelling ---------------------------------------------------------------------


def test_the_host_can_cancel_the_game_in_the_lobby():
    """docs/rules.md §9 (host controls)."""
    g = Game(players=5, start=False)
    g.refuse(CancelGame(actor="p2"), Reason.NOT_HOST)
    g.do(CancelGame(actor="p1"))
    assert g.last_of(GameCancelled).by == "p1" and g.last_of(GameCancelled).audience == PUBLIC
    assert g.phase is Phase.CANCELLED
    g.refuse(Join(actor="late"), Reason.GAME_OVER)
    g.refuse(StartGame(actor="p1"), Reason.GAME_OVER)


def test_the_host_can_cancel_a_game_in_progress_and_nobody_else_can():
    """docs/rules.md §9."""
    g = Game(players=5)
    g.propose()
    g.refuse(CancelGame(actor="p3"), Reason.NOT_HOST)
    g.do(CancelGame(actor="p1"))
    assert g.phase is Phase.CANCELLED
    g.refuse(CastVote(actor="p2", approve=True), Reason.GAME_OVER)
    assert g.state.winner is None


# -- the lobby -------------------------------------------------------------------------


def test_a_player_cannot_join_twice():
    g = Game(players=5, start=False)
    g.refuse(Join(actor="p2"), Reason.ALREADY_JOINED)
    g.refuse(Join(actor="p1"), Reason.ALREADY_JOINED)


def test_the_host_cannot_leave_but_another_player_can_and_may_rejoin():
    g = Game(players=5, start=False)
    g.refuse(Leave(actor="p1"), Reason.HOST_CANNOT_LEAVE)
    g.do(Leave(actor="p3"))
    assert g.last_of(PlayerLeft).player == "p3" and "p3" not in g.state.players
    g.refuse(Leave(actor="p3"), Reason.NOT_A_PLAYER)
    g.do(Join(actor="p3"))
    assert "p3" in g.state.players


@pytest.mark.parametrize("preset,limit", [("classic", 10), ("online", 10), ("forum", 12)])
def test_the_lobby_is_full_at_the_preset_limit(preset, limit):
    """docs/rules.md §9: players 5-10 (classic, online), 5-12 (forum)."""
    g = Game(players=limit, preset=preset, start=False)
    r = g.refuse(Join(actor="extra"), Reason.LOBBY_FULL)
    assert str(limit) in r.message


def test_only_the_host_starts_the_game_and_nobody_joins_afterwards():
    g = Game(players=5, start=False)
    g.refuse(StartGame(actor="p2"), Reason.NOT_HOST)
    g.do(StartGame(actor="p1"))
    assert g.last_of(GameStarted).seats
    g.refuse(Join(actor="late"), Reason.WRONG_PHASE)
    g.refuse(StartGame(actor="p1"), Reason.WRONG_PHASE)


def test_a_game_is_created_only_once():
    g = Game(players=5, start=False)
    r = apply(g.state, CreateGame(actor="p2", game_id="g1", seed=3))
    assert isinstance(r, Rejection) and r.reason in (Reason.GAME_ALREADY_CREATED, Reason.WRONG_PHASE)
    r = apply(new_game(), Join(actor="p1"))
    assert isinstance(r, Rejection) and r.reason is Reason.GAME_NOT_CREATED
