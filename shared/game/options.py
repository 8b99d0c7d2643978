"""Per-game options and the three presets (docs/rules.md section 9).

The options in force are part of the game state, so they can be shown to the
players. Every option can be set on its own; a preset only fixes defaults.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

from . import numbers
from .errors import Reason, Rejection, reject
from .model import (
    OPTIONAL_ROLES,
    Conference,
    Hammer,
    LadyTiming,
    Lancelot,
    LancelotDeck,
    MissedVote,
    Preset,
    Role,
)

H = numbers.HOUR
M = numbers.MINUTE


@dataclass(frozen=True, slots=True)
class Timers:
    """Each phase's deadline, in seconds (the phase table names each phase's field)."""

    proposal: int = 10 * M
    vote: int = 5 * M
    quest: int = 5 * M
    excalibur: int = 3 * M
    lady: int = 5 * M
    assassination: int = 10 * M
    last_word: int = 3 * M


FORUM_TIMERS = Timers(
    proposal=48 * H, vote=24 * H, quest=24 * H, excalibur=24 * H, lady=24 * H,
    assassination=48 * H, last_word=24 * H,
)


@dataclass(frozen=True, slots=True)
class Options:
    preset: Preset = Preset.CLASSIC
    max_players: int = 10
    #: Optional roles chosen by the host; ``None`` is the standard set for the
    #: player count (Percival plus the recommended evil roles).
    roles: tuple[Role, ...] | None = None
    hammer: Hammer = Hammer.CLASSIC
    anonymous_votes: bool = False
    good_may_fail: bool = False
    conference: Conference = Conference.PRIVATE
    assassin_may_delegate: bool = False  # house rule: hand the shot to another evil player
    last_word: bool = False  # house rule: the accused speaks before the shot
    oberon_known_to_evil: bool = False  # vi night script
    lady: bool = False
    lady_timing: LadyTiming = LadyTiming.AFTER_QUEST
    excalibur: bool = False
    lancelot: Lancelot = Lancelot.NONE
    lancelot_deck: LancelotDeck = LancelotDeck.BOXED
    missed_vote: MissedVote = MissedVote.REJECT
    close_early: bool = True  # close a phase as soon as everyone has acted
    timers: Timers = field(default_factory=Timers)
    #: a seat opens for a substitute after this many missed deadlines in a row (0: never by itself)
    seat_opens_after: int = 3
    #: missed deadlines a player may have excused by announcing an absence, per game (0: no absences)
    excused_absences: int = 0
    #: anyone may follow the game as a spectator (``watch``)
    spectators: bool = False
    #: a voided game shows every role
    void_reveals_roles: bool = False

    def __setstate__(self, state) -> None:
        """Options pickled by a version with fewer of them get the newer ones' defaults."""
        names = fields(self)
        for f, value in zip(names, state):
            object.__setattr__(self, f.name, value)
        for f in names[len(state):]:
            object.__setattr__(self, f.name, f.default_factory() if f.default is MISSING else f.default)

    @classmethod
    def preset_defaults(cls, preset: Preset | str, **overrides: Any) -> "Options":
        """The options of ``preset`` with ``overrides`` applied (not validated)."""
        base = PRESETS[Preset(preset)]
        return replace(base, **overrides) if overrides else base

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Timers):
                value = {t.name: getattr(value, t.name) for t in fields(Timers)}
            elif isinstance(value, tuple):
                value = [v.value for v in value]
            elif hasattr(value, "value"):
                value = value.value
            out[f.name] = value
        return out


PRESETS: dict[Preset, Options] = {
    Preset.CLASSIC: Options(),
    Preset.ONLINE: Options(preset=Preset.ONLINE, hammer=Hammer.ONLINE),
    Preset.FORUM: Options(
        preset=Preset.FORUM,
        max_players=12,
        hammer=Hammer.FORUM,
        conference=Conference.PUBLIC,
        lady_timing=LadyTiming.BEFORE_NEXT_PROPOSAL,
        lancelot_deck=LancelotDeck.FORUM,
        missed_vote=MissedVote.NOT_COUNTED,
        timers=FORUM_TIMERS,
        seat_opens_after=2,
        excused_absences=3,
        spectators=True,
    ),
}


def check_options(options: Options) -> Rejection | None:
    """Checks what can be checked without knowing the player count."""
    most = PRESETS[options.preset].max_players  # 11 and 12 players: the forum preset only
    if not numbers.MIN_PLAYERS <= options.max_players <= most:
        return reject(Reason.INVALID_OPTION, option="max_players",
                      problem=f"between {numbers.MIN_PLAYERS} and {most} in the {options.preset.value} preset")
    for f in fields(Timers):
        seconds = getattr(options.timers, f.name)
        if not isinstance(seconds, int) or not numbers.MIN_TIMER <= seconds <= numbers.MAX_TIMER:
            return reject(Reason.INVALID_OPTION, option=f"timers.{f.name}",
                          problem=f"between {numbers.MIN_TIMER} seconds and 14 days")
    for name, most_of in (("seat_opens_after", numbers.MAX_SEAT_OPENS_AFTER),
                          ("excused_absences", numbers.MAX_EXCUSED_ABSENCES)):
        value = getattr(options, name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most_of:
            return reject(Reason.INVALID_OPTION, option=name, problem=f"between 0 and {most_of}")
    if options.roles is not None:
        if len(set(options.roles)) != len(options.roles):
            return reject(Reason.INVALID_OPTION, option="roles", problem="a role is listed twice")
        for role in options.roles:
            if role not in OPTIONAL_ROLES:
                return reject(Reason.ROLE_NOT_SELECTABLE, role=role)
    return None


@dataclass(frozen=True, slots=True)
class Cast:
    """The role cards dealt for one player count, and who takes the shot."""

    roles: tuple[Role, ...]  # exactly one per seat, before shuffling
    shooter_role: Role


def cast_for(options: Options, players: int) -> Cast | Rejection:
    """The role cards for ``players`` seats, or why the selection does not fit."""
    if players < numbers.MIN_PLAYERS:
        return reject(Reason.TOO_FEW_PLAYERS, min=numbers.MIN_PLAYERS, count=players)
    if players > options.max_players:
        return reject(Reason.TOO_MANY_PLAYERS, max=options.max_players, count=players)
    good_seats, evil_seats = numbers.TEAMS[players]
    lancelot = options.lancelot is not Lancelot.NONE
    if options.roles is None:
        good = list(numbers.STANDARD_GOOD)
        room = evil_seats - 1 - (1 if lancelot else 0)  # keep a seat for the Assassin
        evil = list(numbers.STANDARD_EVIL[players][:max(room, 0)])
    else:
        good = [r for r in options.roles if r.team.value == "good"]
        evil = [r for r in options.roles if r.team.value == "evil"]
    good = [Role.MERLIN, *good] + ([Role.GOOD_LANCELOT] if lancelot else [])
    evil = evil + ([Role.EVIL_LANCELOT] if lancelot else [])
    if len(good) > good_seats:
        return reject(Reason.TOO_MANY_GOOD_ROLES, count=players, seats=good_seats, wanted=len(good))
    if len(evil) > evil_seats:
        return reject(Reason.TOO_MANY_EVIL_ROLES, count=players, seats=evil_seats, wanted=len(evil))
    if len(evil) < evil_seats:
        evil.insert(0, Role.ASSASSIN)
    shooter = next((r for r in numbers.SHOOTER_ORDER if r in evil), None)
    if shooter is None:
        return reject(Reason.NO_SHOOTER)
    good += [Role.LOYAL_SERVANT] * (good_seats - len(good))
    evil += [Role.MINION] * (evil_seats - len(evil))
    return Cast(tuple(good + evil), shooter)
