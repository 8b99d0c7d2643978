"""Typed rejections: why a command changed nothing, in words a player understands.

A rejection carries a stable ``reason`` code (the narration layer translates
it) and the parameters that make the sentence precise; ``message`` is the
English sentence used by the command line and logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Reason(str, Enum):
    # who and when
    GAME_NOT_CREATED = "game_not_created"
    GAME_ALREADY_CREATED = "game_already_created"
    GAME_OVER = "game_over"
    WRONG_PHASE = "wrong_phase"
    STALE_PHASE = "stale_phase"
    NOT_A_PLAYER = "not_a_player"
    NOT_YOUR_TURN = "not_your_turn"
    NOT_HOST = "not_host"
    ALREADY_ACTED = "already_acted"
    # lobby and setup
    ALREADY_JOINED = "already_joined"
    LOBBY_FULL = "lobby_full"
    HOST_CANNOT_LEAVE = "host_cannot_leave"
    TOO_FEW_PLAYERS = "too_few_players"
    TOO_MANY_PLAYERS = "too_many_players"
    INVALID_OPTION = "invalid_option"
    ROLE_NOT_SELECTABLE = "role_not_selectable"
    TOO_MANY_EVIL_ROLES = "too_many_evil_roles"
    TOO_MANY_GOOD_ROLES = "too_many_good_roles"
    NO_SHOOTER = "no_shooter"
    # rounds
    WRONG_TEAM_SIZE = "wrong_team_size"
    DUPLICATE_PLAYER = "duplicate_player"
    UNKNOWN_PLAYER = "unknown_player"
    EXCALIBUR_REQUIRED = "excalibur_required"
    EXCALIBUR_NOT_IN_PLAY = "excalibur_not_in_play"
    EXCALIBUR_INVALID_HOLDER = "excalibur_invalid_holder"
    EXCALIBUR_INVALID_TARGET = "excalibur_invalid_target"
    CARD_NOT_ALLOWED = "card_not_allowed"
    LADY_INVALID_TARGET = "lady_invalid_target"
    # assassination
    NOT_EVIL = "not_evil"
    INVALID_TARGET = "invalid_target"
    SHOT_ALREADY_HANDED = "shot_already_handed"
    HOUSE_RULE_OFF = "house_rule_off"
    EMPTY_MESSAGE = "empty_message"
    MESSAGE_TOO_LONG = "message_too_long"
    # the people around the table
    NOT_STARTED = "not_started"
    SEAT_NOT_OPEN = "seat_not_open"
    SEAT_ALREADY_OPEN = "seat_already_open"
    ALREADY_SEATED = "already_seated"
    SEAT_TAKEN = "seat_taken"
    SEAT_LEFT = "seat_left"
    GAME_PAUSED = "game_paused"
    NOT_PAUSED = "not_paused"
    SPECTATOR = "spectator"
    SPECTATORS_CLOSED = "spectators_closed"
    SPECTATORS_FULL = "spectators_full"
    ALREADY_WATCHING = "already_watching"
    NOT_WATCHING = "not_watching"
    NO_ABSENCES_LEFT = "no_absences_left"


_MESSAGES = {
    Reason.GAME_NOT_CREATED: "There is no game here yet.",
    Reason.GAME_ALREADY_CREATED: "This game already exists.",
    Reason.GAME_OVER: "The game is over.",
    Reason.WRONG_PHASE: "That cannot be done now: the game is in the {phase} phase.",
    Reason.STALE_PHASE: "That button belongs to a phase that is already over.",
    Reason.NOT_A_PLAYER: "You are not playing in this game.",
    Reason.NOT_YOUR_TURN: "It is not your turn to do that.",
    Reason.NOT_HOST: "Only the host can do that.",
    Reason.ALREADY_ACTED: "You have already done that in this phase.",
    Reason.ALREADY_JOINED: "You have already joined.",
    Reason.LOBBY_FULL: "The game is full ({max} players).",
    Reason.HOST_CANNOT_LEAVE: "The host cannot leave; cancel the game instead.",
    Reason.TOO_FEW_PLAYERS: "At least {min} players are needed; there are {count}.",
    Reason.TOO_MANY_PLAYERS: "At most {max} players can play with these settings; there are {count}.",
    Reason.INVALID_OPTION: "Invalid setting {option}: {problem}.",
    Reason.ROLE_NOT_SELECTABLE: "{role} cannot be chosen as an optional role.",
    Reason.TOO_MANY_EVIL_ROLES: "{count} players have {seats} evil seats, but {wanted} special evil roles were chosen.",
    Reason.TOO_MANY_GOOD_ROLES: "{count} players have {seats} good seats, but {wanted} special good roles were chosen.",
    Reason.NO_SHOOTER: "No evil seat is left for the Assassin and neither Morgana nor Mordred is in play to take the shot.",
    Reason.WRONG_TEAM_SIZE: "Quest {quest} needs exactly {size} players; you picked {picked}.",
    Reason.DUPLICATE_PLAYER: "A player can be picked only once.",
    Reason.UNKNOWN_PLAYER: "{player} is not playing in this game.",
    Reason.EXCALIBUR_REQUIRED: "Excalibur is in play: hand it to a team member other than yourself.",
    Reason.EXCALIBUR_NOT_IN_PLAY: "Excalibur is not in play in this game.",
    Reason.EXCALIBUR_INVALID_HOLDER: "Excalibur must go to a team member other than the leader.",
    Reason.EXCALIBUR_INVALID_TARGET: "Excalibur can only be used on another member of the team.",
    Reason.CARD_NOT_ALLOWED: "You cannot play {card}: your side must play {allowed}.",
    Reason.LADY_INVALID_TARGET: "The Lady of the Lake can examine only another player who has not held her.",
    Reason.NOT_EVIL: "Only the evil players take part in this.",
    Reason.INVALID_TARGET: "You cannot target that player.",
    Reason.SHOT_ALREADY_HANDED: "The shot has already been handed over once.",
    Reason.HOUSE_RULE_OFF: "That house rule is not in play in this game.",
    Reason.EMPTY_MESSAGE: "The message is empty.",
    Reason.MESSAGE_TOO_LONG: "The message is too long (at most {max} characters).",
    Reason.NOT_STARTED: "The game has not started yet.",
    Reason.SEAT_NOT_OPEN: "{player}'s seat is not open for a substitute.",
    Reason.SEAT_ALREADY_OPEN: "{player}'s seat is already open for a substitute.",
    Reason.ALREADY_SEATED: "You already have a seat in this game.",
    Reason.SEAT_TAKEN: "{player} took over your seat: you no longer play in this game.",
    Reason.SEAT_LEFT: "You handed your seat over: you no longer play in this game.",
    Reason.GAME_PAUSED: "The game is paused until the host resumes it.",
    Reason.NOT_PAUSED: "The game is not paused.",
    Reason.SPECTATOR: "You are watching this game: spectators cannot play.",
    Reason.SPECTATORS_CLOSED: "This game is not open to spectators.",
    Reason.SPECTATORS_FULL: "This game has as many spectators as it takes ({max}).",
    Reason.ALREADY_WATCHING: "You are already watching this game.",
    Reason.NOT_WATCHING: "You are not watching this game.",
    Reason.NO_ABSENCES_LEFT: "You have no excused absence left in this game ({budget} per player).",
}


@dataclass(frozen=True, slots=True)
class Rejection:
    """A command that changes nothing, with the reason why."""

    reason: Reason
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        text = _MESSAGES[self.reason]
        try:
            return text.format(**{k: _plain(v) for k, v in self.params.items()})
        except (KeyError, IndexError):
            return text


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def reject(reason: Reason, **params: Any) -> Rejection:
    return Rejection(reason, params)
