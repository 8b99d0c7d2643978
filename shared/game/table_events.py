"""Events of the people around the table: a seat opened and taken (with what the seat learned, to its new
holder alone), a pause and a resume, a game voided, an absence, the host's duties passing on,
spectators. Part of ``events`` (which re-exports them), kept apart by concept."""

from __future__ import annotations

from dataclasses import dataclass

from .event_base import Event
from .model import Card, HostChange, Role, SeatReason, Team

@dataclass(frozen=True, slots=True, kw_only=True)
class SeatOpened(Event):
    """``player``'s seat (``seat``, from 0) is open for a substitute; ``by`` is the host or the
    player who opened it ("" when missed deadlines did); ``missed``: deadlines missed in a row."""

    player: str
    seat: int
    reason: SeatReason
    by: str = ""
    missed: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatTaken(Event):
    """``player`` took seat ``seat`` from ``previous``, who no longer plays (the table reads it, and
    so does ``previous``)."""

    player: str
    previous: str
    seat: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatBriefing(Event):
    """Private to a substitute, right after their role card: everything else the seat has learned.
    ``vote``/``card``: what the seat already did in the open vote or quest (None: nothing yet)."""

    player: str
    seat: int
    previous: str
    team: Team  # the seat's side now (a Lancelot may have switched)
    lancelots_switched: bool
    lady_results: tuple[tuple[str, Team], ...] = ()
    excalibur_peeks: tuple[tuple[str, Card], ...] = ()
    conference: tuple[str, ...] = ()  # the evil players, when the conference is under way and theirs
    shooter: str | None = None
    conference_log: tuple[tuple[str, str], ...] = ()  # (sender, text) said in it so far
    vote: bool | None = None
    card: Card | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GamePaused(Event):
    by: str
    phase_id: int
    seconds_left: int  # the open phase's time left, kept for the resume (0: it has no deadline)


@dataclass(frozen=True, slots=True, kw_only=True)
class GameResumed(Event):
    """The clock runs again: ``phase_id`` is new (a button from before the pause is stale; the
    actors are offered their choices again); the phase has ``seconds_left``."""

    by: str
    phase_id: int
    seconds_left: int


@dataclass(frozen=True, slots=True, kw_only=True)
class VoidRequested(Event):
    player: str
    votes: int
    needed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GameVoided(Event):
    """The game ends without a winner (the host, or ``by`` "" for a majority of the players); the
    roles are revealed only with ``Options.void_reveals_roles`` (else empty)."""

    by: str
    roles: tuple[tuple[str, Role], ...] = ()
    teams: tuple[tuple[str, Team], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AbsenceAnnounced(Event):
    player: str
    excused_left: int  # excused missed deadlines left to them in this game


@dataclass(frozen=True, slots=True, kw_only=True)
class HostChanged(Event):
    host: str
    previous: str
    reason: HostChange


@dataclass(frozen=True, slots=True, kw_only=True)
class SpectatorJoined(Event):
    spectator: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SpectatorLeft(Event):
    spectator: str
