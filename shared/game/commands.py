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
