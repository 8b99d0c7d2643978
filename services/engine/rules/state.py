"""The game state: everything the engine knows, seat-indexed for speed.

A ``GameState`` is never changed after it is handed out: ``evolve`` and
``apply`` clone it and change the clone. Containers inside are tuples,
frozensets or dicts that are replaced, never mutated in place.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields

from avalon.shared.game.model import Card, Hammer, Lancelot, MissedRule, Phase, Role, Team, WinCause
from avalon.shared.game.numbers import PROPOSALS_PER_QUEST
from avalon.shared.game.options import Options


@dataclass(frozen=True, slots=True)
class QuestResult:
    quest: int
    team: tuple[str, ...]
    successes: int
    fails: int
    failed: bool
    excalibur_holder: str | None = None
    excalibur_target: str | None = None


@dataclass(frozen=True, slots=True)
class VoteRecord:
    quest: int
    leader: str
    team: tuple[str, ...]
    approvals: int
    rejections: int
    votes: tuple[tuple[str, bool], ...] | None
    approved: bool


@dataclass(slots=True)
class GameState:
    game_id: str = ""
    seed: int = 0
    host: str = ""
    options: Options = field(default_factory=Options)
    phase: Phase | None = None  # None: not created yet
    phase_id: int = 0
    seq: int = 0  # events applied so far: the game's version
    timeout_seconds: int = 0
    missed_rule: MissedRule = MissedRule.NONE
    players: tuple[str, ...] = ()  # join order in the lobby, seat order once dealt
    seat_of: dict[str, int] = field(default_factory=dict)
    roles: tuple[Role, ...] = ()
    shooter: int = -1
    shot_handed: bool = False
    accused: int = -1
    lancelot_deck: tuple[bool, ...] = ()
    lancelots_switched: bool = False
    loyalty_draws: tuple[tuple[int, bool], ...] = ()
    quest: int = 0
    leader: int = -1
    vote_track: int = 0
    team: tuple[int, ...] = ()
    excalibur: int = -1
    votes: dict[int, bool] = field(default_factory=dict)
    cards: dict[int, Card] = field(default_factory=dict)
    quest_results: tuple[QuestResult, ...] = ()
    vote_log: tuple[VoteRecord, ...] = ()
    lady_holder: int = -1
    lady_past: frozenset[int] = frozenset()
    lady_due: bool = False
    lady_log: tuple[tuple[str, str], ...] = ()
    lady_results: tuple[tuple[str, str, Team], ...] = ()  # private to each holder
    excalibur_log: tuple[tuple[str, str, Card], ...] = ()  # private to each holder
    winner: Team | None = None
    cause: WinCause | None = None
    # -- the people around the table (added after the first release: kept last, see __setstate__) --
    missed: tuple[int, ...] = ()  # by seat: deadlines missed in a row (excused ones not counted)
    open_seats: frozenset[int] = frozenset()  # seats open for a substitute
    vacant: frozenset[int] = frozenset()  # seats whose player handed them over: the missed-deadline rule plays
    former: dict[str, str] = field(default_factory=dict)  # a replaced player -> who holds that seat now
    spectators: tuple[str, ...] = ()
    paused: bool = False
    paused_left: int = 0  # the open phase's seconds left when it was paused
    away: frozenset[int] = frozenset()  # seats away with an excused absence
    excused_used: dict[int, int] = field(default_factory=dict)  # seat -> excused deadlines its player used
    void_votes: frozenset[int] = frozenset()
    conference_log: tuple[tuple[str, str], ...] = ()  # (sender, text): the conference so far

    def __setstate__(self, state) -> None:
        """A state pickled by a version with fewer fields gets the newer fields' defaults."""
        for f in _FIELDS:
            setattr(self, f.name, f.default_factory() if f.default is MISSING else f.default)
        slots = state[1] if isinstance(state, tuple) else state
        for name, value in (slots or {}).items():
            setattr(self, name, value)

    def clone(self) -> "GameState":  # replaced below by generated straight-line code
        raise NotImplementedError

    # -- derived facts -------------------------------------------------------

    @property
    def started(self) -> bool:
        return bool(self.roles)

    @property
    def over(self) -> bool:
        return self.phase is Phase.ENDED or self.phase is Phase.CANCELLED

    def team_of(self, seat: int) -> Team:
        """A seat's allegiance now (a Lancelot may have switched)."""
        role = self.roles[seat]
        team = role.team
        if self.lancelots_switched and role.is_lancelot:
            return Team.EVIL if team is Team.GOOD else Team.GOOD
        return team

    def evil_seats(self) -> tuple[int, ...]:
        return tuple(s for s in range(len(self.roles)) if self.team_of(s) is Team.EVIL)

    def successes(self) -> int:
        return sum(1 for r in self.quest_results if not r.failed)

    def failures(self) -> int:
        return sum(1 for r in self.quest_results if r.failed)

    def allowed_cards(self, seat: int) -> tuple[Card, ...]:
        """The quest cards this seat may play now (docs/rules.md sections 3 and 8)."""
        if self.team_of(seat) is Team.EVIL:
            if self.roles[seat].is_lancelot and self.options.lancelot is Lancelot.V2:
                return (Card.FAIL,)  # variant 2: an evil Lancelot must fail
            return (Card.SUCCESS, Card.FAIL)
        return (Card.SUCCESS, Card.FAIL) if self.options.good_may_fail else (Card.SUCCESS,)

    def is_auto_approved(self) -> bool:
        """Online hammer: the fifth proposal of a quest goes straight to the quest."""
        return self.options.hammer is Hammer.ONLINE and self.vote_track >= PROPOSALS_PER_QUEST - 1

    def missed_at(self, seat: int) -> int:
        """Deadlines seat ``seat`` has missed in a row (a game dealt before they were counted: 0)."""
        return self.missed[seat] if self.missed else 0

    def seated(self, player: str | None) -> int | None:
        """``player``'s seat, if they hold one and have not handed it over."""
        seat = self.seat_of.get(player) if player is not None else None
        return None if seat is None or seat in self.vacant else seat

    def lady_targets(self) -> tuple[int, ...]:
        """The seats the Lady may examine: anyone who has not held her."""
        past = self.lady_past
        return tuple(i for i in range(len(self.players)) if i not in past)


_FIELDS = fields(GameState)
_SLOTS = tuple(f.name for f in _FIELDS)


def _make_clone():
    """A shallow copy in straight-line code: the hottest path of the engine."""
    lines = ["def clone(self):", "    new = _new(GameState)"]
    lines += [f"    new.{name} = self.{name}" for name in _SLOTS]
    lines.append("    return new")
    namespace = {"_new": object.__new__, "GameState": GameState}
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from our own field names
    return namespace["clone"]


GameState.clone = _make_clone()
