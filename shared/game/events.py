"""Events: what happened, past tense, each with its audience.

The audience is part of the event, fixed by the engine: a private fact (a role,
a vote before the reveal, a quest card, a Lady result) only ever travels in an
event addressed to the players allowed to know it. ``NOBODY`` events are the
engine's own record (the seed, the deal) and are never delivered.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Card, Knowledge, MissedRule, Phase, Role, Team, WinCause
from .options import Options
from .event_base import NOBODY, PUBLIC, Audience, AudienceKind, Event  # noqa: F401 - the protocol's names


# -- engine records (never delivered) ----------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class GameCreated(Event):
    audience: Audience = NOBODY
    game_id: str
    host: str
    seed: int
    options: Options
    table: str = ""  # CreateGame.table: the group the game is played in ("": the host's)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dealt(Event):
    audience: Audience = NOBODY
    seats: tuple[str, ...]
    roles: tuple[Role, ...]  # by seat
    first_leader: str
    shooter: str
    lancelot_deck: tuple[bool, ...]  # True = switch; v1: the deck; v2: the five quests


@dataclass(frozen=True, slots=True, kw_only=True)
class MissedCardsCounted(Event):
    """Quest cards the deadline filled in for silent team members."""

    audience: Audience = NOBODY
    cards: tuple[tuple[str, Card], ...]


# -- lobby ------------------------------------------------------------------
#
# Each lobby event that can change which cards a start would deal says what it
# would deal now (``deals``): the role cards, one per seat in card order, at
# the lobby's player count (at least MIN_PLAYERS, at most ``max_players``);
# empty when the options cannot be dealt at that count. A gateway shows it and
# never works it out. Older event logs have no ``deals``: they read as ``()``.

@dataclass(frozen=True, slots=True, kw_only=True)
class LobbyOpened(Event):
    host: str
    options: Options
    deals: tuple[Role, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerJoined(Event):
    player: str
    deals: tuple[Role, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerLeft(Event):
    player: str
    deals: tuple[Role, ...] = ()
    by: str = ""  # the host who removed them from the lobby; "" when they left


@dataclass(frozen=True, slots=True, kw_only=True)
class OptionsChanged(Event):
    options: Options
    deals: tuple[Role, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GameCancelled(Event):
    by: str


# -- setup ------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class GameStarted(Event):
    seats: tuple[str, ...]
    first_leader: str
    roles_in_play: tuple[Role, ...]  # which cards are dealt, never to whom
    lady_holder: str | None
    options: Options
    quest_sizes: tuple[int, ...]
    fails_needed: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleAssigned(Event):
    """Private: your role card and what you learned in the night."""

    player: str
    role: Role
    team: Team
    knowledge: tuple[tuple[str, Knowledge], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoyaltyScheduleRevealed(Event):
    """Lancelot variant 2: the five loyalty cards, one per quest, shown in advance."""

    schedule: tuple[bool, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoyaltyCardRevealed(Event):
    quest: int
    switch: bool
    lancelots_switched: bool  # whether the Lancelots now play for the other side


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseOpened(Event):
    phase: Phase
    phase_id: int
    quest: int
    leader: str
    vote_track: int
    team_size: int  # the quest's team size (fail threshold: ``fails_needed``)
    fails_needed: int
    actors: tuple[str, ...]  # who the phase waits for (empty where that is secret)
    timeout_seconds: int
    missed_rule: MissedRule


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineMissed(Event):
    phase: Phase
    phase_id: int
    missing: tuple[str, ...]
    rule: MissedRule
    #: those of ``missing`` away with an excused absence (not counted); older logs: none
    excused: tuple[str, ...] = ()
    #: each of ``missing`` not excused, with the deadlines they have now missed in a row
    in_a_row: tuple[tuple[str, int], ...] = ()


# -- a round ------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class TeamProposed(Event):
    quest: int
    leader: str
    team: tuple[str, ...]
    excalibur: str | None
    auto_approved: bool  # online hammer: the fifth proposal goes straight to the quest


@dataclass(frozen=True, slots=True, kw_only=True)
class ProposalMissed(Event):
    quest: int
    leader: str
    counts_as_rejection: bool
    vote_track: int


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteCast(Event):
    """Private to the voter until the reveal."""

    player: str
    approve: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerVoted(Event):
    player: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VotesRevealed(Event):
    quest: int
    leader: str
    team: tuple[str, ...]
    approvals: int
    rejections: int
    votes: tuple[tuple[str, bool], ...] | None  # None with anonymous votes
    not_voted: tuple[str, ...]
    approved: bool
    vote_track: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CardPlayed(Event):
    """Private to the player who played it."""

    player: str
    card: Card


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerPlayedCard(Event):
    player: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExcaliburUsed(Event):
    """Private to the holder: whose card was flipped and what it was before."""

    holder: str
    target: str
    original: Card


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestResolved(Event):
    quest: int
    team: tuple[str, ...]
    successes: int
    fails: int
    failed: bool
    excalibur_holder: str | None
    excalibur_target: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LadyUsed(Event):
    holder: str
    target: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LadyResult(Event):
    """Private to the holder: the examined player's loyalty, as of now."""

    holder: str
    target: str
    loyalty: Team


@dataclass(frozen=True, slots=True, kw_only=True)
class LadyNotUsed(Event):
    holder: str


# -- the end ------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class ConferenceOpened(Event):
    shooter: str
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConferenceMessage(Event):
    sender: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShotHanded(Event):
    by: str
    to: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MerlinAccused(Event):
    shooter: str
    target: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LastWordSpoken(Event):
    player: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssassinationResolved(Event):
    shooter: str
    target: str
    hit: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class GameEnded(Event):
    """Public, with the full reveal: every role and every final allegiance."""

    winner: Team
    cause: WinCause
    roles: tuple[tuple[str, Role], ...]
    teams: tuple[tuple[str, Team], ...]


# the people around the table: substitutes, pauses, voiding, spectators (their own module, same protocol)
from .table_events import (  # noqa: E402,F401 - events of this module's protocol, defined beside it
    AbsenceAnnounced, GamePaused, GameResumed, GameVoided, HostChanged, SeatBriefing, SeatOpened, SeatTaken,
    SpectatorJoined, SpectatorLeft, VoidRequested,
)
