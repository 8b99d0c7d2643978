"""The people around the table, in the rules core: seats opened and taken, pauses, absences, voiding a
game, the host's duties, removing a player from the lobby, spectators. Given a game, when someone
does something, then these events (or this refusal, which changes nothing)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from avalon.services.engine.rules import Options, Rejection, apply, legal_commands, pending_players, table_commands
from avalon.services.engine.simulate import random_game, setup
from avalon.shared.game import commands as cmd
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason
from avalon.shared.game.model import HostChange, Phase, SeatReason, Team
from avalon.shared.game.numbers import MAX_SPECTATORS, MIN_RESUMED_SECONDS

from .bad_command_kit import build


def accepted(state, command):
    result = apply(state, command)
    assert not isinstance(result, Rejection), f"{command!r} refused: {result.message}"
    return result.state, result.events


def refused(state, command, reason: Reason):
    result = apply(state, command)
    assert isinstance(result, Rejection), f"{command!r} was accepted"
    assert result.reason is reason, result.message
    return result


def of(events, kind):
    return [e for e in events if type(e) is kind]


def started(players: int = 7, **options):
    return setup(players, replace(Options(), **options), seed=11).state


def voting(players: int = 7, **options):
    state = build(players, replace(Options(), **options), 5, Phase.VOTE)
    assert state.phase is Phase.VOTE
    return state


def time_out(state):
    return accepted(state, cmd.PhaseTimedOut(phase_id=state.phase_id))


# -- opening a seat -------------------------------------------------------------------------------

def test_the_host_opens_a_players_seat_and_only_the_host_may_open_anothers():
    state = started()
    host, p3, p4 = state.host, state.players[2], state.players[3]
    refused(state, cmd.OpenSeat(actor=p4, player=p3), Reason.NOT_HOST)
    after, events = accepted(state, cmd.OpenSeat(actor=host, player=p3))
    assert of(events, ev.SeatOpened) == [ev.SeatOpened(player=p3, seat=2, reason=SeatReason.HOST, by=host)]
    assert after.open_seats == {2}
    refused(after, cmd.OpenSeat(actor=host, player=p3), Reason.SEAT_ALREADY_OPEN)
    refused(state, cmd.OpenSeat(actor=host, player="ghost"), Reason.UNKNOWN_PLAYER)


def test_a_seat_cannot_be_opened_in_the_lobby_or_once_the_game_is_over():
    lobby = build(7, Options(), 3, Phase.LOBBY)
    refused(lobby, cmd.OpenSeat(actor=lobby.host, player=lobby.players[1]), Reason.NOT_STARTED)
    refused(lobby, cmd.TakeSeat(actor="sub", player=lobby.players[1]), Reason.NOT_STARTED)
    over = random_game(5, Options(), 4).state
    refused(over, cmd.OpenSeat(actor=over.host, player=over.players[1]), Reason.GAME_OVER)
    refused(over, cmd.TakeSeat(actor="sub", player=over.players[1]), Reason.GAME_OVER)


def test_a_player_who_hands_over_no_longer_acts_and_the_missed_deadline_rule_plays_the_seat():
    state = voting()
    leaver = state.players[3]
    after, events = accepted(state, cmd.OpenSeat(actor=leaver, player=leaver))
    assert of(events, ev.SeatOpened)[0].reason is SeatReason.LEFT
    assert legal_commands(after, leaver) == () and table_commands(after, leaver) == ()
    refused(after, cmd.CastVote(actor=leaver, approve=True, phase_id=after.phase_id), Reason.SEAT_LEFT)
    refused(after, cmd.VoidGame(actor=leaver), Reason.SEAT_LEFT)
    for p in after.players:  # everyone else votes: the vote waits for the deadline, which plays the seat
        if p != leaver and table_commands(after, p) and legal_commands(after, p):
            after, _ = accepted(after, cmd.CastVote(actor=p, approve=True, phase_id=after.phase_id))
    assert after.phase is Phase.VOTE and pending_players(after) == (leaver,)
    after, events = time_out(after)
    assert of(events, ev.DeadlineMissed)[0].missing == (leaver,)
    assert after.phase is not Phase.VOTE


def test_a_host_who_hands_over_passes_the_hosts_duties_to_the_next_seated_player():
    state = started()
    host = state.host
    following = state.players[(state.seat_of[host] + 1) % len(state.players)]
    after, events = accepted(state, cmd.OpenSeat(actor=host, player=host))
    assert of(events, ev.HostChanged) == [ev.HostChanged(host=following, previous=host, reason=HostChange.LEFT)]
    assert after.host == following
    refused(after, cmd.PauseGame(actor=host), Reason.SEAT_LEFT)
    accepted(after, cmd.PauseGame(actor=following))


def test_deadlines_missed_in_a_row_are_counted_and_open_the_seat_and_acting_resets_the_count():
    state = voting(seat_opens_after=2)
    a, b = state.players[1], state.players[2]
    for p in state.players:
        if p not in (a, b):
            state, _ = accepted(state, cmd.CastVote(actor=p, approve=False, phase_id=state.phase_id))
    state, _ = accepted(state, cmd.CastVote(actor=b, approve=False, phase_id=state.phase_id)) \
        if pending_players(state) == (a, b) else (state, ())
    state, events = time_out(state)
    assert (a, 1) in of(events, ev.DeadlineMissed)[0].in_a_row and state.missed_at(1) == 1
    assert not of(events, ev.SeatOpened)
    rng = random.Random(1)
    while state.missed_at(1) < 2 and not state.over:  # a keeps missing; everyone else acts when asked
        waiting = pending_players(state)
        if a in waiting:
            state, events = time_out(state)
        else:
            from avalon.services.engine.simulate import random_command
            state, events = accepted(state, random_command(state, rng))
    opened = of(events, ev.SeatOpened)
    assert opened == [ev.SeatOpened(player=a, seat=1, reason=SeatReason.ABSENT, missed=2)]
    assert state.open_seats == {1} and a not in state.vacant  # still a's to play until someone takes it


# -- taking a seat --------------------------------------------------------------------------------

def test_a_newcomer_takes_an_open_seat_and_learns_privately_everything_the_seat_learned():
    state = voting(lady=True)
    old = state.players[4]
    state, _ = accepted(state, cmd.OpenSeat(actor=state.host, player=old))
    after, events = accepted(state, cmd.TakeSeat(actor="sub1", player=old))
    assert of(events, ev.SeatTaken) == [ev.SeatTaken(player="sub1", previous=old, seat=4)]
    card, briefing = of(events, ev.RoleAssigned)[0], of(events, ev.SeatBriefing)[0]
    assert card.audience.players == ("sub1",) and briefing.audience.players == ("sub1",)
    assert card.role is state.roles[4] and briefing.team is state.team_of(4)
    assert briefing.vote == state.votes.get(4)
    assert after.players[4] == "sub1" and after.former == {old: "sub1"} and not after.open_seats
    refused(after, cmd.CastVote(actor=old, approve=True, phase_id=after.phase_id), Reason.SEAT_TAKEN)
    if 4 not in state.votes:
        accepted(after, cmd.CastVote(actor="sub1", approve=True, phase_id=after.phase_id))


def test_a_seat_changes_hands_again_and_the_first_occupant_is_told_who_holds_it_now():
    state = voting()
    first = state.players[2]
    state, _ = accepted(state, cmd.OpenSeat(actor=state.host, player=first))
    state, _ = accepted(state, cmd.TakeSeat(actor="sub1", player=first))
    state, _ = accepted(state, cmd.OpenSeat(actor="sub1", player="sub1"))
    state, _ = accepted(state, cmd.TakeSeat(actor="sub2", player="sub1"))
    assert state.players[2] == "sub2" and state.former == {first: "sub2", "sub1": "sub2"}
    assert refused(state, cmd.VoidGame(actor=first), Reason.SEAT_TAKEN).params == {"player": "sub2"}


@pytest.mark.parametrize("who, reason", [("seated", Reason.ALREADY_SEATED), ("closed", Reason.SEAT_NOT_OPEN),
                                         ("ghost", Reason.UNKNOWN_PLAYER)])
def test_taking_a_seat_is_refused_to_the_seated_for_a_seat_not_open_or_a_stranger(who, reason):
    state = voting()
    state, _ = accepted(state, cmd.OpenSeat(actor=state.host, player=state.players[3]))
    command = {"seated": cmd.TakeSeat(actor=state.players[1], player=state.players[3]),
               "closed": cmd.TakeSeat(actor="sub", player=state.players[2]),
               "ghost": cmd.TakeSeat(actor="sub", player="nobody")}[who]
    refused(state, command, reason)


def test_a_lady_result_and_an_excalibur_peek_reach_whoever_takes_the_seat_and_nobody_else():
    for seed in range(200):
        record = random_game(8, replace(Options(), lady=True, excalibur=True), seed, keep=True)
        results = [e for e in record.events if type(e) in (ev.LadyResult, ev.ExcaliburUsed)
                   and getattr(e, "card", 1) is not None]
        if results:
            break
    else:
        raise AssertionError("no game with a Lady result")
    # replay the game to just after its first private result, then hand that seat over
    state = setup(8, replace(Options(), lady=True, excalibur=True), seed).state
    for command in record.commands[len(state.players) + 1:]:
        state, events = accepted(state, command)
        private = [e for e in events if type(e) in (ev.LadyResult, ev.ExcaliburUsed)]
        if private:
            break
    seen = private[0]
    holder = seen.holder
    state, _ = accepted(state, cmd.OpenSeat(actor=state.host, player=holder) if holder != state.host
                        else cmd.OpenSeat(actor=holder, player=holder))
    state, events = accepted(state, cmd.TakeSeat(actor="sub", player=holder))
    briefing = of(events, ev.SeatBriefing)[0]
    if type(seen) is ev.LadyResult:
        assert briefing.lady_results == ((seen.target, seen.loyalty),)
    else:
        assert [t for t, _ in briefing.excalibur_peeks] == [seen.target]
    assert all(e.audience.players == ("sub",) for e in events if e.audience.kind.value == "players")


def test_an_evil_seat_taken_during_the_evil_conference_learns_the_conference_so_far():
    state = build(7, Options(), 9, Phase.ASSASSINATION, lucky=True)
    assert state.phase is Phase.ASSASSINATION
    evil = [state.players[i] for i in state.evil_seats()]
    speaker, other = evil[0], evil[-1]
    state, _ = accepted(state, cmd.Confer(actor=speaker, text="Merlin is p2", phase_id=state.phase_id))
    state, _ = accepted(state, cmd.OpenSeat(actor=state.host, player=other) if other != state.host
                        else cmd.OpenSeat(actor=other, player=other))
    state, events = accepted(state, cmd.TakeSeat(actor="sub", player=other))
    briefing = of(events, ev.SeatBriefing)[0]
    assert briefing.team is Team.EVIL and briefing.conference_log == ((speaker, "Merlin is p2"),)
    assert "sub" in briefing.conference and briefing.shooter is not None
    state, events = accepted(state, cmd.Confer(actor="sub", text="agreed", phase_id=state.phase_id))
    assert "sub" in of(events, ev.ConferenceMessage)[0].audience.players
    assert other not in of(events, ev.ConferenceMessage)[0].audience.players


# -- pause and resume -----------------------------------------------------------------------------

def test_the_host_pauses_the_clock_moves_wait_and_the_resume_keeps_the_time_left():
    state = voting()
    voter = pending_players(state)[0]
    refused(state, cmd.PauseGame(actor=voter if voter != state.host else state.players[-1]), Reason.NOT_HOST)
    paused, events = accepted(state, cmd.PauseGame(actor=state.host, seconds_left=123))
    assert of(events, ev.GamePaused) == [ev.GamePaused(by=state.host, phase_id=state.phase_id, seconds_left=123)]
    refused(paused, cmd.CastVote(actor=voter, approve=True, phase_id=paused.phase_id), Reason.GAME_PAUSED)
    assert legal_commands(paused, voter) == ()
    assert time_out(paused)[1] == ()  # the deadline that was armed before the pause changes nothing
    refused(paused, cmd.PauseGame(actor=state.host), Reason.GAME_PAUSED)
    resumed, events = accepted(paused, cmd.ResumeGame(actor=state.host))
    assert of(events, ev.GameResumed) == [ev.GameResumed(by=state.host, phase_id=state.phase_id + 1,
                                                         seconds_left=123)]
    refused(resumed, cmd.CastVote(actor=voter, approve=True, phase_id=state.phase_id), Reason.STALE_PHASE)
    accepted(resumed, cmd.CastVote(actor=voter, approve=True, phase_id=resumed.phase_id))
    refused(resumed, cmd.ResumeGame(actor=state.host), Reason.NOT_PAUSED)


def test_a_phase_paused_in_its_last_seconds_resumes_with_time_to_act():
    state = voting()
    paused, _ = accepted(state, cmd.PauseGame(actor=state.host, seconds_left=2))
    _, events = accepted(paused, cmd.ResumeGame(actor=state.host))
    assert of(events, ev.GameResumed)[0].seconds_left == MIN_RESUMED_SECONDS


# -- voiding --------------------------------------------------------------------------------------

def test_the_host_voids_a_game_at_once_and_the_roles_stay_secret_unless_the_option_says_so():
    state = voting()
    after, events = accepted(state, cmd.VoidGame(actor=state.host))
    assert of(events, ev.GameVoided) == [ev.GameVoided(by=state.host)] and after.phase is Phase.CANCELLED
    refused(after, cmd.CastVote(actor=state.players[1], approve=True), Reason.GAME_OVER)
    shown = voting(void_reveals_roles=True)
    _, events = accepted(shown, cmd.VoidGame(actor=shown.host))
    assert dict(of(events, ev.GameVoided)[0].roles) == dict(zip(shown.players, shown.roles))


def test_a_majority_of_the_players_voids_a_game_each_counted_once():
    state = voting(players=7)
    players = [p for p in state.players if p != state.host]
    for i, p in enumerate(players[:3], 1):
        state, events = accepted(state, cmd.VoidGame(actor=p))
        assert of(events, ev.VoidRequested) == [ev.VoidRequested(player=p, votes=i, needed=4)]
        assert not of(events, ev.GameVoided)
    refused(state, cmd.VoidGame(actor=players[0]), Reason.ALREADY_ACTED)
    refused(state, cmd.VoidGame(actor="stranger"), Reason.NOT_A_PLAYER)
    state, events = accepted(state, cmd.VoidGame(actor=players[3]))
    assert of(events, ev.GameVoided) == [ev.GameVoided(by="")] and state.over


# -- absences -------------------------------------------------------------------------------------

def test_an_announced_absence_excuses_missed_deadlines_within_the_budget():
    state = voting(excused_absences=1, seat_opens_after=1)
    away = state.players[2]
    state, events = accepted(state, cmd.AnnounceAbsence(actor=away))
    assert of(events, ev.AbsenceAnnounced) == [ev.AbsenceAnnounced(player=away, excused_left=1)]
    for p in pending_players(state):
        if p != away:
            state, _ = accepted(state, cmd.CastVote(actor=p, approve=False, phase_id=state.phase_id))
    state, events = time_out(state)
    missed = of(events, ev.DeadlineMissed)[0]
    assert missed.excused == (away,) and dict(missed.in_a_row).get(away) is None
    assert not of(events, ev.SeatOpened) and state.missed_at(2) == 0
    refused(state, cmd.AnnounceAbsence(actor=away), Reason.NO_ABSENCES_LEFT)


def test_absences_are_refused_where_the_game_grants_none():
    state = voting()
    assert refused(state, cmd.AnnounceAbsence(actor=state.players[1]), Reason.NO_ABSENCES_LEFT).params == {"budget": 0}
    refused(state, cmd.AnnounceAbsence(actor="stranger"), Reason.NOT_A_PLAYER)


# -- the host's duties; the lobby -----------------------------------------------------------------

def test_the_host_passes_the_duties_to_a_seated_player_only():
    state = voting()
    new, other = [p for p in state.players if p != state.host][:2]
    refused(state, cmd.PassHost(actor=new, to=other), Reason.NOT_HOST)
    refused(state, cmd.PassHost(actor=state.host, to="stranger"), Reason.INVALID_TARGET)
    after, events = accepted(state, cmd.PassHost(actor=state.host, to=new))
    assert of(events, ev.HostChanged) == [ev.HostChanged(host=new, previous=state.host, reason=HostChange.PASSED)]
    refused(after, cmd.PauseGame(actor=state.host), Reason.NOT_HOST)
    accepted(after, cmd.PauseGame(actor=new))


def test_the_host_removes_a_player_from_the_lobby_but_not_from_a_game_under_way():
    lobby = build(7, Options(), 4, Phase.LOBBY)
    gone = lobby.players[1]
    refused(lobby, cmd.RemovePlayer(actor=lobby.players[2], player=gone), Reason.NOT_HOST)
    after, events = accepted(lobby, cmd.RemovePlayer(actor=lobby.host, player=gone))
    assert of(events, ev.PlayerLeft)[0].player == gone and of(events, ev.PlayerLeft)[0].by == lobby.host
    assert gone not in after.players
    refused(lobby, cmd.RemovePlayer(actor=lobby.host, player=lobby.host), Reason.INVALID_TARGET)
    state = voting()
    refused(state, cmd.RemovePlayer(actor=state.host, player=state.players[1]), Reason.WRONG_PHASE)


# -- spectators -----------------------------------------------------------------------------------

def test_a_spectator_follows_a_game_open_to_spectators_and_cannot_act():
    closed = voting()
    refused(closed, cmd.Watch(actor="friend"), Reason.SPECTATORS_CLOSED)
    state = voting(spectators=True)
    refused(state, cmd.Watch(actor=state.players[1]), Reason.ALREADY_SEATED)
    state, events = accepted(state, cmd.Watch(actor="friend"))
    assert of(events, ev.SpectatorJoined) == [ev.SpectatorJoined(spectator="friend")]
    assert "friend" not in state.players and legal_commands(state, "friend") == ()
    refused(state, cmd.Watch(actor="friend"), Reason.ALREADY_WATCHING)
    refused(state, cmd.CastVote(actor="friend", approve=True, phase_id=state.phase_id), Reason.SPECTATOR)
    refused(state, cmd.VoidGame(actor="friend"), Reason.SPECTATOR)
    state, events = accepted(state, cmd.Unwatch(actor="friend"))
    assert state.spectators == () and of(events, ev.SpectatorLeft)
    refused(state, cmd.Unwatch(actor="friend"), Reason.NOT_WATCHING)


def test_a_game_takes_a_bounded_number_of_spectators():
    state = voting(spectators=True)
    for i in range(MAX_SPECTATORS):
        state, _ = accepted(state, cmd.Watch(actor=f"s{i}"))
    refused(state, cmd.Watch(actor="one-more"), Reason.SPECTATORS_FULL)


def test_a_spectator_who_takes_an_open_seat_plays_and_no_longer_watches():
    state = voting(spectators=True)
    state, _ = accepted(state, cmd.Watch(actor="friend"))
    state, _ = accepted(state, cmd.OpenSeat(actor=state.host, player=state.players[2]))
    state, _ = accepted(state, cmd.TakeSeat(actor="friend", player=state.players[2]))
    assert state.spectators == () and state.players[2] == "friend"


# -- random playouts ------------------------------------------------------------------------------

PRESETS = ("classic", "online", "forum")


@pytest.mark.parametrize("batch", range(4))
def test_random_games_with_takeovers_pauses_and_spectators_all_end_and_keep_every_secret(batch):
    """300 random games in which, at random moments, seats open and are taken (several times), the host
    pauses and resumes, spectators come and go, absences are announced and voids asked for: every game
    ends; every private event reaches only the seat's occupant at that moment (never a spectator, never
    someone replaced); and a newcomer's card is the seat's role."""
    takeovers = pauses = spectators = 0
    for seed in range(batch * 75, batch * 75 + 75):
        options = Options.preset_defaults(PRESETS[seed % 3], lady=seed % 2 == 0, excalibur=seed % 4 < 2,
                                          last_word=seed % 5 == 0, spectators=True, excused_absences=2)
        record = random_game(5 + seed % 6, options, seed, timeout_rate=0.2, keep=True, table_rate=0.15)
        assert record.state.over, seed
        state = setup(5 + seed % 6, options, seed).state
        for command in record.commands[5 + seed % 6 + 1:]:
            result = apply(state, command)
            assert not isinstance(result, Rejection), (seed, command, result)
            state = result.state
            for e in result.events:
                if e.audience.kind.value != "players":
                    continue
                for reader in e.audience.players:
                    assert reader in state.seat_of and state.seat_of[reader] not in state.vacant, (seed, e, reader)
                    assert reader not in state.spectators and reader not in state.former, (seed, e)
                if type(e) is ev.RoleAssigned:
                    assert e.role is state.roles[state.seat_of[e.player]]
            takeovers += sum(type(e) is ev.SeatTaken for e in result.events)
            pauses += sum(type(e) is ev.GamePaused for e in result.events)
            spectators += sum(type(e) is ev.SpectatorJoined for e in result.events)
    assert takeovers and pauses and spectators  # the churn happened


def test_a_host_whose_seat_opens_for_missed_deadlines_passes_the_hosts_duties_on():
    state = voting(seat_opens_after=1)
    host = state.host
    for p in pending_players(state):
        if p != host:
            state, _ = accepted(state, cmd.CastVote(actor=p, approve=True, phase_id=state.phase_id))
    state, events = time_out(state)
    following = state.players[(state.seat_of[host] + 1) % len(state.players)]
    assert of(events, ev.SeatOpened)[0].player == host
    assert of(events, ev.HostChanged) == [ev.HostChanged(host=following, previous=host, reason=HostChange.ABSENT)]
    accepted(state, cmd.PauseGame(actor=following))
