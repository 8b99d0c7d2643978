"""``decide(state, command)``: the events a command causes, or why it is refused.

``apply`` does the same and also hands back the new state, so a caller does not
evolve the events a second time. Neither touches a clock, a database or the
global random generator: a game replays exactly from its seed and commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from avalon.shared.game import commands as cmd
from . import endgame, lobby, rounds, table, timeouts
from avalon.shared.game.errors import Reason, Rejection, reject
from avalon.shared.game.events import Event
from .evolve import evolve
from .flow import Tx
from avalon.shared.game.model import TABLE_KINDS, CommandKind, Phase
from .phases import PHASES
from .state import GameState

Handler = Callable[[Tx, cmd.Command], Rejection | None]

_HANDLERS: dict[type, Handler] = {
    cmd.CreateGame: lobby.create,
    cmd.Join: lobby.join,
    cmd.Leave: lobby.leave,
    cmd.ChangeOptions: lobby.change_options,
    cmd.StartGame: lobby.start,
    cmd.CancelGame: lobby.cancel,
    cmd.ProposeTeam: rounds.propose,
    cmd.CastVote: rounds.vote,
    cmd.PlayCard: rounds.play_card,
    cmd.UseExcalibur: rounds.use_excalibur,
    cmd.UseLady: rounds.use_lady,
    cmd.Confer: endgame.confer,
    cmd.HandShot: endgame.hand_shot,
    cmd.Accuse: endgame.accuse,
    cmd.SpeakLastWord: endgame.speak_last_word,
    cmd.Assassinate: endgame.assassinate,
    cmd.PhaseTimedOut: timeouts.timed_out,
    cmd.OpenSeat: table.open_seat,
    cmd.TakeSeat: table.take_seat,
    cmd.PauseGame: table.pause,
    cmd.ResumeGame: table.resume,
    cmd.VoidGame: table.void,
    cmd.AnnounceAbsence: table.announce_absence,
    cmd.PassHost: table.pass_host,
    cmd.RemovePlayer: table.remove_player,
    cmd.Watch: table.watch,
    cmd.Unwatch: table.unwatch,
}


_OVER = frozenset({Phase.ENDED, Phase.CANCELLED})


@dataclass(frozen=True, slots=True)
class Accepted:
    state: GameState
    events: tuple[Event, ...]


def new_game() -> GameState:
    """The state before ``CreateGame``."""
    return GameState()


def apply(state: GameState, command: cmd.Command) -> Accepted | Rejection:
    """Decide and evolve in one pass: the new state and the events, or a rejection."""
    handler = _HANDLERS.get(type(command))
    if handler is None:
        return reject(Reason.WRONG_PHASE, phase=state.phase)
    phase = state.phase
    if phase is None:
        if type(command) is not cmd.CreateGame:
            return reject(Reason.GAME_NOT_CREATED)
    elif type(command) is not cmd.PhaseTimedOut:
        if phase in _OVER:
            return reject(Reason.GAME_OVER)
        if command.kind not in _NOT_SEATED:
            problem = _not_a_move(state, command)
            if problem is not None:
                return problem
        if command.kind not in TABLE_KINDS:
            if command.phase_id is not None and command.phase_id != state.phase_id:
                return reject(Reason.STALE_PHASE)  # a button from a phase that is over
            if command.kind not in PHASES[phase].accepts:
                return reject(Reason.WRONG_PHASE, phase=phase)
            if state.paused:
                return reject(Reason.GAME_PAUSED)
    if (type(command) is cmd.PhaseTimedOut) != (command.actor == cmd.SCHEDULER):
        return reject(Reason.NOT_YOUR_TURN)  # only the scheduler says a deadline passed, and only that
    tx = Tx(state, PHASES)
    problem = handler(tx, command)
    if problem is not None:
        return problem
    return Accepted(tx.s, tuple(tx.events))


#: What someone without a seat may ask of a dealt game: watch it, stop watching, take an open seat.
_NOT_SEATED = frozenset({CommandKind.WATCH, CommandKind.UNWATCH, CommandKind.TAKE_SEAT})


def _not_a_move(state: GameState, command: cmd.Command) -> Rejection | None:
    """Why someone who holds no seat of a dealt game cannot act in it, in their own terms: their seat
    was taken over, they handed it over, or they are watching."""
    if not state.started:
        return None
    actor = command.actor
    seat = state.seat_of.get(actor)
    if seat is None:
        if actor in state.former:
            return reject(Reason.SEAT_TAKEN, player=state.former[actor])
        if actor in state.spectators:
            return reject(Reason.SPECTATOR)
        return None
    if seat in state.vacant:
        return reject(Reason.SEAT_LEFT)
    return None


def decide(state: GameState, command: cmd.Command) -> list[Event] | Rejection:
    result = apply(state, command)
    return result if isinstance(result, Rejection) else list(result.events)


def replay_events(events: Iterable[Event], state: GameState | None = None) -> GameState:
    """Fold ``evolve`` over an event log."""
    state = new_game() if state is None else state
    for event in events:
        state = evolve(state, event)
    return state


def replay_commands(commands: Iterable[cmd.Command]) -> tuple[GameState, list[Event]]:
    """Play ``commands`` from the start (the first is ``CreateGame``, which holds the seed).

    Rejected commands change nothing, exactly as when they were first sent.
    """
    state = new_game()
    log: list[Event] = []
    for command in commands:
        result = apply(state, command)
        if isinstance(result, Accepted):
            state = result.state
            log.extend(result.events)
    return state, log
