"""The people around the table: open seats and substitutes, pauses, absences, voiding a game, the
host's duties passing on, removing a player from the lobby, spectators.

These commands are the table's business, not moves of the game: ``decide`` lets them through in any
phase until the game is over (``TABLE_KINDS``), and each handler here says when it applies.
"""

from __future__ import annotations

from avalon.shared.game import commands as cmd
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason, Rejection, reject
from avalon.shared.game.model import Conference, HostChange, Phase, SeatReason, Team
from avalon.shared.game.numbers import MAX_SPECTATORS, MIN_RESUMED_SECONDS
from .flow import Tx
from .knowledge import night_knowledge
from .lobby import would_deal
from .state import GameState

MAX_ID_LENGTH = 200


def _valid_id(player: str) -> bool:
    return bool(player) and len(player) <= MAX_ID_LENGTH and not player.startswith("@")


def _in_play(s: GameState) -> Rejection | None:
    return None if s.started else reject(Reason.NOT_STARTED)


def next_host(s: GameState, after: int) -> str | None:
    """The next seated player after seat ``after`` who still plays (not handed over, seat not open)."""
    n = len(s.players)
    for step in range(1, n):
        seat = (after + step) % n
        if seat not in s.vacant and seat not in s.open_seats:
            return s.players[seat]
    for step in range(1, n):  # everyone else's seat is open: the next one still held
        seat = (after + step) % n
        if seat not in s.vacant:
            return s.players[seat]
    return None


def open_seat(tx: Tx, c: cmd.OpenSeat) -> Rejection | None:
    s = tx.s
    problem = _in_play(s)
    if problem:
        return problem
    seat = s.seat_of.get(c.player)
    if seat is None:
        return reject(Reason.UNKNOWN_PLAYER, player=c.player)
    if c.actor == c.player:  # (a seat already handed over: decide refused its holder with seat_left)
        reason = SeatReason.LEFT
    elif c.actor == s.host:
        if seat in s.open_seats:
            return reject(Reason.SEAT_ALREADY_OPEN, player=c.player)
        reason = SeatReason.HOST
    else:
        return reject(Reason.NOT_HOST)
    tx.emit(ev.SeatOpened(player=c.player, seat=seat, reason=reason, by=c.actor, missed=s.missed_at(seat)))
    if reason is SeatReason.LEFT and c.player == s.host:
        successor = next_host(tx.s, seat)
        if successor is not None:
            tx.emit(ev.HostChanged(host=successor, previous=c.player, reason=HostChange.LEFT))
    return None


def open_absent_seats(tx: Tx) -> None:
    """After a missed deadline: each seat that has now missed ``seat_opens_after`` in a row opens."""
    s = tx.s
    limit = s.options.seat_opens_after
    if limit <= 0:
        return
    for seat, count in enumerate(s.missed):
        if count >= limit and seat not in s.open_seats:
            player = s.players[seat]
            tx.emit(ev.SeatOpened(player=player, seat=seat, reason=SeatReason.ABSENT, missed=count))
            if player == tx.s.host:  # a host who stopped answering cannot pause or void: the duties pass on
                successor = next_host(tx.s, seat)
                if successor is not None and successor != player:
                    tx.emit(ev.HostChanged(host=successor, previous=player, reason=HostChange.ABSENT))


def take_seat(tx: Tx, c: cmd.TakeSeat) -> Rejection | None:
    s = tx.s
    problem = _in_play(s)
    if problem:
        return problem
    if c.actor in s.seat_of:
        return reject(Reason.ALREADY_SEATED)
    if not _valid_id(c.actor):
        return reject(Reason.UNKNOWN_PLAYER, player=c.actor)
    seat = s.seat_of.get(c.player)
    if seat is None:
        return reject(Reason.UNKNOWN_PLAYER, player=c.player)
    if seat not in s.open_seats:
        return reject(Reason.SEAT_NOT_OPEN, player=c.player)
    was_host = c.player == s.host
    tx.emit(ev.SeatTaken(player=c.actor, previous=c.player, seat=seat))
    brief(tx, seat, c.player)
    if was_host:
        successor = next_host(tx.s, seat) or c.actor
        tx.emit(ev.HostChanged(host=successor, previous=c.player, reason=HostChange.REPLACED))
    return None


def brief(tx: Tx, seat: int, previous: str) -> None:
    """Everything seat ``seat`` has learned, privately to whoever holds it now: the role card and the
    night's knowledge (``role_assigned``), then the rest (``seat_briefing``)."""
    s = tx.s
    player = s.players[seat]
    role = s.roles[seat]
    to = ev.Audience.to(player)
    tx.emit(ev.RoleAssigned(
        audience=to, player=player, role=role, team=role.team,
        knowledge=tuple((s.players[o], k) for o, k in night_knowledge(s.roles, seat, s.options))))
    team = s.team_of(seat)
    in_conference = s.phase in (Phase.ASSASSINATION, Phase.LAST_WORD) and (
        team is Team.EVIL or s.options.conference is Conference.PUBLIC)
    tx.emit(ev.SeatBriefing(
        audience=to, player=player, seat=seat, previous=previous, team=team,
        lancelots_switched=s.lancelots_switched,
        lady_results=tuple((t, loyalty) for h, t, loyalty in s.lady_results if h == player),
        excalibur_peeks=tuple((t, card) for h, t, card in s.excalibur_log if h == player),
        conference=tuple(s.players[i] for i in s.evil_seats()) if in_conference else (),
        shooter=s.players[s.shooter] if in_conference else None,
        conference_log=s.conference_log if in_conference else (),
        vote=s.votes.get(seat) if s.phase is Phase.VOTE else None,
        card=s.cards.get(seat) if s.phase in (Phase.QUEST, Phase.EXCALIBUR) else None,
    ))


def pause(tx: Tx, c: cmd.PauseGame) -> Rejection | None:
    s = tx.s
    if c.actor != s.host:
        return reject(Reason.NOT_HOST)
    problem = _in_play(s)
    if problem:
        return problem
    if s.paused:
        return reject(Reason.GAME_PAUSED)
    left = max(0, int(c.seconds_left)) if s.timeout_seconds else 0
    tx.emit(ev.GamePaused(by=c.actor, phase_id=s.phase_id, seconds_left=min(left, s.timeout_seconds)))
    return None


def resume(tx: Tx, c: cmd.ResumeGame) -> Rejection | None:
    s = tx.s
    if c.actor != s.host:
        return reject(Reason.NOT_HOST)
    if not s.paused:
        return reject(Reason.NOT_PAUSED)
    left = max(s.paused_left, min(MIN_RESUMED_SECONDS, s.timeout_seconds)) if s.timeout_seconds else 0
    tx.emit(ev.GameResumed(by=c.actor, phase_id=s.phase_id + 1, seconds_left=left))
    return None


def void(tx: Tx, c: cmd.VoidGame) -> Rejection | None:
    s = tx.s
    problem = _in_play(s)
    if problem:
        return problem
    if c.actor == s.host:
        _voided(tx, c.actor)
        return None
    seat = s.seated(c.actor)
    if seat is None:
        return reject(Reason.NOT_A_PLAYER)
    if seat in s.void_votes:
        return reject(Reason.ALREADY_ACTED)
    needed = len(s.players) // 2 + 1
    votes = len(s.void_votes) + 1
    tx.emit(ev.VoidRequested(player=c.actor, votes=votes, needed=needed))
    if votes >= needed:
        _voided(tx, "")
    return None


def _voided(tx: Tx, by: str) -> None:
    s = tx.s
    if s.options.void_reveals_roles:
        tx.emit(ev.GameVoided(by=by, roles=tuple(zip(s.players, s.roles)),
                              teams=tuple((p, s.team_of(i)) for i, p in enumerate(s.players))))
    else:
        tx.emit(ev.GameVoided(by=by))


def announce_absence(tx: Tx, c: cmd.AnnounceAbsence) -> Rejection | None:
    s = tx.s
    problem = _in_play(s)
    if problem:
        return problem
    seat = s.seated(c.actor)
    if seat is None:
        return reject(Reason.NOT_A_PLAYER)
    budget = s.options.excused_absences
    left = budget - s.excused_used.get(seat, 0)
    if left <= 0:
        return reject(Reason.NO_ABSENCES_LEFT, budget=budget)
    tx.emit(ev.AbsenceAnnounced(player=c.actor, excused_left=left))
    return None


def pass_host(tx: Tx, c: cmd.PassHost) -> Rejection | None:
    s = tx.s
    if c.actor != s.host:
        return reject(Reason.NOT_HOST)
    if c.to == s.host or c.to not in s.players or (s.started and s.seated(c.to) is None):
        return reject(Reason.INVALID_TARGET)
    tx.emit(ev.HostChanged(host=c.to, previous=c.actor, reason=HostChange.PASSED))
    return None


def remove_player(tx: Tx, c: cmd.RemovePlayer) -> Rejection | None:
    s = tx.s
    if c.actor != s.host:
        return reject(Reason.NOT_HOST)
    if s.phase is not Phase.LOBBY:
        return reject(Reason.WRONG_PHASE, phase=s.phase)
    if c.player not in s.players:
        return reject(Reason.UNKNOWN_PLAYER, player=c.player)
    if c.player == s.host:
        return reject(Reason.INVALID_TARGET)
    tx.emit(ev.PlayerLeft(player=c.player, deals=would_deal(s.options, len(s.players) - 1), by=c.actor))
    return None


def watch(tx: Tx, c: cmd.Watch) -> Rejection | None:
    s = tx.s
    if c.actor in s.players:
        return reject(Reason.ALREADY_SEATED)
    if not _valid_id(c.actor):
        return reject(Reason.UNKNOWN_PLAYER, player=c.actor)
    if not s.options.spectators:
        return reject(Reason.SPECTATORS_CLOSED)
    if c.actor in s.spectators:
        return reject(Reason.ALREADY_WATCHING)
    if len(s.spectators) >= MAX_SPECTATORS:
        return reject(Reason.SPECTATORS_FULL, max=MAX_SPECTATORS)
    tx.emit(ev.SpectatorJoined(spectator=c.actor))
    return None


def unwatch(tx: Tx, c: cmd.Unwatch) -> Rejection | None:
    if c.actor not in tx.s.spectators:
        return reject(Reason.NOT_WATCHING)
    tx.emit(ev.SpectatorLeft(spectator=c.actor))
    return None
