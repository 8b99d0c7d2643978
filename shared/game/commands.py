"""Commands: what a player (or the scheduler) asks the engine to do.

Imperative names. ``phase_id`` is the phase the actor saw when they pressed the
button; a command for a phase that is already over is refused as stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .model import Card, CommandKind
from .options import Options

SCHEDULER = "@scheduler"


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    kind: ClassVar[CommandKind]
    actor: str
    phase_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateGame(Command):
    kind = CommandKind.CREATE_GAME
    game_id: str
    seed: int
    options: Options = Options()
    #: the group the game is played in, as its channel names it (a Telegram group: ``tg<chat id>``);
    #: the record of finished games counts a group's games by it. Empty: the host's own table.
    table: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Join(Command):
    kind = CommandKind.JOIN


@dataclass(frozen=True, slots=True, kw_only=True)
class Leave(Command):
    kind = CommandKind.LEAVE


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeOptions(Command):
    kind = CommandKind.CHANGE_OPTIONS
    options: Options


@dataclass(frozen=True, slots=True, kw_only=True)
class StartGame(Command):
    kind = CommandKind.START_GAME


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelGame(Command):
    kind = CommandKind.CANCEL_GAME


@dataclass(frozen=True, slots=True, kw_only=True)
class ProposeTeam(Command):
    kind = CommandKind.PROPOSE_TEAM
    team: tuple[str, ...]
    excalibur: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CastVote(Command):
    kind = CommandKind.CAST_VOTE
    approve: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayCard(Command):
    kind = CommandKind.PLAY_CARD
    card: Card


@dataclass(frozen=True, slots=True, kw_only=True)
class UseExcalibur(Command):
    """Flip another team member's card, or ``target=None`` to leave it sheathed."""

    kind = CommandKind.USE_EXCALIBUR
    target: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class UseLady(Command):
    kind = CommandKind.USE_LADY
    target: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Confer(Command):
    """A message in the evil conference before the shot."""

    kind = CommandKind.CONFER
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HandShot(Command):
    kind = CommandKind.HAND_SHOT
    to: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Accuse(Command):
    """With the "last word" house rule: name the accused, who speaks before the shot."""

    kind = CommandKind.ACCUSE
    target: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeakLastWord(Command):
    kind = CommandKind.SPEAK_LAST_WORD
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Assassinate(Command):
    kind = CommandKind.ASSASSINATE
    target: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseTimedOut(Command):
    """Sent by the scheduler when phase ``phase_id``'s deadline passes."""

    kind = CommandKind.PHASE_TIMED_OUT
    actor: str = SCHEDULER
    phase_id: int


# -- the people around the table ------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class OpenSeat(Command):
    """Open ``player``'s seat for a substitute: the host, or the player themselves (handing it over:
    until someone takes it, the missed-deadline rule plays it)."""

    kind = CommandKind.OPEN_SEAT
    player: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TakeSeat(Command):
    """Someone not seated takes ``player``'s open seat, with everything the seat has learned."""

    kind = CommandKind.TAKE_SEAT
    player: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PauseGame(Command):
    """The host stops the clock. ``seconds_left`` is the engine's to fill in (the open phase's time
    left by its clock); a gateway does not send it."""

    kind = CommandKind.PAUSE_GAME
    seconds_left: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeGame(Command):
    kind = CommandKind.RESUME_GAME


@dataclass(frozen=True, slots=True, kw_only=True)
class VoidGame(Command):
    """End the game without a winner: the host at once, or a majority of the seated players."""

    kind = CommandKind.VOID_GAME


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnounceAbsence(Command):
    """A player will be away: their next missed deadlines are excused (not counted towards opening
    their seat) while their budget lasts (``Options.excused_absences``), until they act again."""

    kind = CommandKind.ANNOUNCE_ABSENCE


@dataclass(frozen=True, slots=True, kw_only=True)
class PassHost(Command):
    kind = CommandKind.PASS_HOST
    to: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RemovePlayer(Command):
    """The host removes a player from the lobby (before the deal)."""

    kind = CommandKind.REMOVE_PLAYER
    player: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Watch(Command):
    """Follow the game as a spectator: every public event, never a private one; no seat, no move."""

    kind = CommandKind.WATCH


@dataclass(frozen=True, slots=True, kw_only=True)
class Unwatch(Command):
    kind = CommandKind.UNWATCH
