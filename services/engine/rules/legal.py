"""What a player may do now, and whom the open phase waits for, read from the phase table.

``decide`` validates against the same table, so the buttons a gateway shows
are exactly the commands the engine accepts.
"""

from __future__ import annotations

from avalon.shared.game.model import CommandKind, Phase
from avalon.shared.game.numbers import MAX_SPECTATORS
from .phase_rules import Legal
from .phases import PHASES
from .state import GameState

__all__ = ["ACCEPTS", "Legal", "legal_commands", "pending_players", "table_commands"]

#: The command kinds each phase accepts (the table's ``accepts``, by phase).
ACCEPTS: dict[Phase, frozenset[CommandKind]] = {phase: rules.accepts for phase, rules in PHASES.items()}


def legal_commands(s: GameState, player: str | None) -> tuple[Legal, ...]:
    """What ``player`` may do now; the gateways build their buttons from it."""
    if player is None or s.phase is None or s.over or s.paused:
        return ()
    seat = s.seat_of.get(player)
    if seat is not None and seat in s.vacant:
        return ()  # handed over: the missed-deadline rule plays the seat
    return PHASES[s.phase].offers(s, player)


def pending_players(s: GameState) -> tuple[str, ...]:
    """The players the open phase waits for, by id."""
    if s.phase is None:
        return ()
    names = s.players
    return tuple(names[i] for i in PHASES[s.phase].actors(s, s.leader))


def table_commands(s: GameState, player: str | None) -> tuple[Legal, ...]:
    """What ``player`` may ask of the table now (``TABLE_KINDS``: seats, pause, void, host, spectators),
    whatever the phase; ``targets``: whom it may name. Not tied to a phase: no phase id to match."""
    K = CommandKind
    if player is None or s.phase is None or s.over or not player or player.startswith("@") or len(player) > 200:
        return ()
    out: list[Legal] = []
    seat = s.seat_of.get(player)
    holds = seat is not None and seat not in s.vacant
    host = player == s.host
    others = tuple(p for p in s.players if p != player)
    if not s.started:
        if host and others:
            out += [Legal(K.PASS_HOST, targets=others), Legal(K.REMOVE_PLAYER, targets=others)]
    elif holds:
        mine = (player,) if not host else (player, *(p for i, p in enumerate(s.players)
                                                      if p != player and i not in s.open_seats))
        out.append(Legal(K.OPEN_SEAT, targets=mine))
        if host:
            out.append(Legal(K.RESUME_GAME if s.paused else K.PAUSE_GAME))
            successors = tuple(p for p in others if s.seated(p) is not None)
            if successors:
                out.append(Legal(K.PASS_HOST, targets=successors))
        if host or seat not in s.void_votes:
            out.append(Legal(K.VOID_GAME))
        if s.excused_used.get(seat, 0) < s.options.excused_absences:
            out.append(Legal(K.ANNOUNCE_ABSENCE))
    elif seat is None and s.open_seats:  # anyone without a seat (a spectator, someone replaced) may take one
        out.append(Legal(K.TAKE_SEAT, targets=tuple(s.players[i] for i in sorted(s.open_seats))))
    if player in s.spectators:
        out.append(Legal(K.UNWATCH))
    elif player not in s.players and s.options.spectators and len(s.spectators) < MAX_SPECTATORS:
        out.append(Legal(K.WATCH))
    return tuple(out)
