"""Invariants of one finished random game, checked event by event.

``EventChecker`` keeps its own small model of the game, built only from the
events and from the test's own rule tables (``playout_rules``), and asserts at
every event that the engine did what docs/rules.md says. Its ``check_views``
(``playout_views``) compares ``view(state, viewer)`` at a chosen moment with
what that model says each viewer may know and do.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from enum import Enum

from avalon.shared.game import events as ev
from avalon.shared.game.events import AudienceKind
from avalon.shared.game.model import Card, Knowledge, MissedRule, Phase, Role, Team, WinCause
from avalon.shared.game.options import Options

from . import playout_rules as rules
from .playout_views import ViewChecks

P = Phase
M = MissedRule
W = WinCause

#: events the engine keeps for itself (seed and deal, filled-in cards)
NOBODY_ONLY = {ev.GameCreated, ev.Dealt, ev.MissedCardsCounted}
#: private facts: the event goes to exactly the one player named in this field
PRIVATE_TO = {ev.RoleAssigned: "player", ev.VoteCast: "player", ev.CardPlayed: "player",
              ev.ExcaliburUsed: "holder", ev.LadyResult: "holder"}
#: the evil conference: to the evil players (private) or to everyone (forum)
CONFERENCE = {ev.ConferenceOpened, ev.ConferenceMessage, ev.ShotHanded}
#: what the whole table is told
PUBLIC_ONLY = {
    ev.LobbyOpened, ev.PlayerJoined, ev.GameStarted, ev.LoyaltyScheduleRevealed,
    ev.LoyaltyCardRevealed, ev.PhaseOpened, ev.DeadlineMissed, ev.TeamProposed, ev.ProposalMissed,
    ev.PlayerVoted, ev.VotesRevealed, ev.PlayerPlayedCard, ev.QuestResolved, ev.LadyUsed,
    ev.LadyNotUsed, ev.MerlinAccused, ev.LastWordSpoken, ev.AssassinationResolved, ev.GameEnded,
}
SECRET_TYPES = (Role, Knowledge, Card, Team)
SECRET_STRINGS = {x.value for t in SECRET_TYPES for x in t}
EVIL_CAUSES = {W.THREE_FAILED_QUESTS, W.HAMMER, W.MERLIN_ASSASSINATED}
SHOT_CAUSES = {W.MERLIN_ASSASSINATED, W.ASSASSIN_MISSED, W.SHOT_FORFEITED}


_SECRET_CLASSES = frozenset(SECRET_TYPES)
_PLAIN = frozenset({int, bool, float, type(None)})


def secrets_in(value, path: str) -> list[str]:
    """Every role, knowledge, card or team value found inside a public event's field."""
    t = type(value)
    if t is str:
        return [f"{path}={value!r}"] if value in SECRET_STRINGS else []
    if t in _PLAIN:
        return []
    if t in _SECRET_CLASSES:
        return [f"{path}={value!r}"]
    if t is tuple or t is list or t is set or t is frozenset:
        return [hit for i, x in enumerate(value) for hit in secrets_in(x, f"{path}[{i}]")]
    if t is Options or isinstance(value, Enum):
        return []  # the game's settings (the host's role choice is public); phases, rules
    if isinstance(value, dict):
        return [hit for k, x in value.items() for hit in secrets_in(k, path) + secrets_in(x, f"{path}[{k}]")]
    if dataclasses.is_dataclass(value):
        return [hit for f in dataclasses.fields(value) if f.name != "audience"
                for hit in secrets_in(getattr(value, f.name), f"{path}.{f.name}")]
    return []


_SCANNED: dict[type, tuple[str, ...]] = {}


#: The lobby's events say which cards a start would deal: public, like the roles in play, never to whom.
LOBBY_DEALS = (ev.LobbyOpened, ev.PlayerJoined, ev.PlayerLeft, ev.OptionsChanged)


def public_fields(kind: type) -> tuple[str, ...]:
    """The fields of a public event to scan (the roles in play are public, never to whom)."""
    names = _SCANNED.get(kind)
    if names is None:
        names = _SCANNED[kind] = tuple(
            f.name for f in dataclasses.fields(kind)
            if f.name != "audience" and not (kind is ev.GameStarted and f.name == "roles_in_play")
            and not (kind in LOBBY_DEALS and f.name == "deals"))
    return names


def _ignore(checker, event) -> None:
    """Events with nothing to check beyond their audience (lobby chatter)."""


_HANDLERS: dict[type, object] = {}


class EventChecker(ViewChecks):
    """Feed it a game's events in order; it raises AssertionError at the first broken rule."""

    def __init__(self, preset: str, players: int, options: Options, seed: int) -> None:
        self.preset, self.n, self.o, self.seed = preset, players, options, seed
        self.forum = preset == "forum"
        self.online = preset == "online"
        self.variant = options.lancelot.value
        self.seats: tuple[str, ...] = ()
        self.lobby_deals: tuple[Role, ...] = ()  # what the lobby last said a start would deal
        self.role: dict[str, Role] = {}
        self.night: dict[str, frozenset] = {}
        self.switched = False
        self.first_leader: str | None = None
        self.leader: str | None = None  # leader of the latest proposal
        self.quest = 1
        self.failed: list[bool] = []
        self.rejections = 0
        self.phase: Phase | None = None
        self.phase_id = 0
        self.announced_rule: MissedRule | None = None
        self.team: tuple[str, ...] = ()
        self.sword: str | None = None
        self.auto = False
        self.votes: dict[str, bool] = {}
        self.cards: dict[str, Card] = {}
        self.sword_target: str | None = None
        self.vote_log: list[tuple] = []
        self.quest_log: list[tuple] = []
        self.lady_holder: str | None = None
        self.lady_past: set[str] = set()
        self.lady_results: list[tuple[str, str, Team]] = []
        self.lady_opened: set[int] = set()
        self.peeks: list[tuple[str, str, Card]] = []
        self.deck: tuple[bool, ...] = ()
        self.draws: dict[int, bool] = {}
        self.proposals_opened: set[int] = set()
        self.assigned: set[str] = set()
        self.shooter: str | None = None
        self.handed = False
        self.accused: str | None = None
        self.shot: tuple[str, bool] | None = None
        self.expect_end: WinCause | None = None
        self.expect_assassination = False
        self.ended: tuple[Team, WinCause] | None = None
        self.prev: ev.Event | None = None
        self.count = 0

    # -- helpers --------------------------------------------------------------

    def next_seat(self, player: str) -> str:
        return self.seats[(self.seats.index(player) + 1) % self.n]

    def team_now(self, player: str) -> Team:
        team = rules.starting_team(self.role[player])
        if self.switched and self.role[player] in (Role.GOOD_LANCELOT, Role.EVIL_LANCELOT):
            team = Team.EVIL if team is Team.GOOD else Team.GOOD
        return team

    def evil_now(self) -> set[str]:
        return {p for p in self.seats if self.team_now(p) is Team.EVIL}

    def successes(self) -> int:
        return self.failed.count(False)

    def failures(self) -> int:
        return self.failed.count(True)

    def lady_due(self, quest: int) -> bool:
        return self.o.lady and quest - 1 in rules.LADY_AFTER_QUESTS

    def draw_due(self, quest: int) -> bool:
        if self.variant == "1":
            return quest in rules.V1_DRAW_QUESTS
        if self.variant == "2":
            return self.deck[quest - 1]
        return False

    def expected_rule(self, phase: Phase) -> MissedRule:
        """The missed-deadline rule each preset announces (docs/rules.md section 7, README)."""
        if phase is P.PROPOSAL:
            if self.forum or (self.online and self.rejections == 4):
                return M.PROPOSAL_CANCELLED
            return M.PROPOSAL_COUNTS_AS_REJECTION
        if phase is P.VOTE:
            return M.VOTE_NOT_COUNTED if self.forum else M.VOTE_COUNTS_AS_REJECT
        if phase is P.QUEST and self.variant == "2":
            return M.CARD_COUNTS_AS_SUCCESS_LANCELOT_FAILS  # variant 2: an evil Lancelot must fail (README)
        return {P.QUEST: M.CARD_COUNTS_AS_SUCCESS, P.EXCALIBUR: M.EXCALIBUR_NOT_USED,
                P.LADY: M.LADY_NOT_USED, P.LAST_WORD: M.LAST_WORD_SKIPPED,
                P.ASSASSINATION: M.ACCUSED_IS_SHOT if self.accused else M.SHOT_FORFEITED}[phase]

    # -- the walk ---------------------------------------------------------------

    def feed(self, e: ev.Event) -> None:
        kind = type(e)
        name = kind.__name__
        assert self.ended is None, f"{name} after GameEnded"
        if self.expect_end is not None:
            assert kind is ev.GameEnded, f"expected the game to end ({self.expect_end.value}), got {e}"
        if self.expect_assassination:
            assert kind is ev.PhaseOpened and e.phase is P.ASSASSINATION, \
                f"three successful quests but the next event is {e}"
            self.expect_assassination = False
        self.check_audience(e)
        handler = _HANDLERS.get(kind)
        if handler is None:
            handler = _HANDLERS[kind] = getattr(type(self), "on_" + name, _ignore)
        handler(self, e)
        self.prev = e
        self.count += 1

    def check_audience(self, e: ev.Event) -> None:
        kind, a = type(e), e.audience
        name = kind.__name__
        if kind in NOBODY_ONLY:
            assert a.kind is AudienceKind.NOBODY, f"{name} must never be delivered: {a}"
        elif kind in PRIVATE_TO:
            owner = getattr(e, PRIVATE_TO[kind])
            assert a.kind is AudienceKind.PLAYERS and a.players == (owner,), \
                f"{name} must go to {owner} only, went to {a}"
        elif kind in CONFERENCE:
            if self.forum:
                assert a.kind is AudienceKind.PUBLIC, f"forum conference is public; {name} went to {a}"
            else:
                assert a.kind is AudienceKind.PLAYERS and set(a.players) == self.evil_now() \
                    and len(a.players) == len(set(a.players)), \
                    f"private conference: {name} went to {a}, the evil players are {sorted(self.evil_now())}"
        elif kind in PUBLIC_ONLY:
            assert a.kind is AudienceKind.PUBLIC, f"{name} is for the whole table, went to {a}"
        if a.kind is AudienceKind.NOBODY:
            assert a.players == (), f"{name}: NOBODY audience names players {a.players}"
        if a.kind is AudienceKind.PLAYERS and self.seats:
            assert set(a.players) <= set(self.seats), f"{name} addressed to non-players {a.players}"
        if a.kind is AudienceKind.PUBLIC and kind is not ev.GameEnded:
            leaks = [hit for f in public_fields(kind) for hit in secrets_in(getattr(e, f), f"{name}.{f}")]
            assert not leaks, f"public event leaks a secret: {leaks} in {e}"

    # -- setup ----------------------------------------------------------------

    def on_GameCreated(self, e: ev.GameCreated) -> None:
        assert e.seed == self.seed and e.options == self.o, "GameCreated does not hold the seed and options"

    def on_Dealt(self, e: ev.Dealt) -> None:
        n = self.n
        assert sorted(e.seats) == sorted(f"p{i + 1}" for i in range(n)), f"seats {e.seats}"
        assert len(e.roles) == n, f"{len(e.roles)} roles for {n} seats"
        self.seats = e.seats
        self.role = dict(zip(e.seats, e.roles))
        good, evil = rules.TEAM_SIZES[n]
        teams = Counter(rules.starting_team(r) for r in e.roles)
        assert teams[Team.GOOD] == good and teams[Team.EVIL] == evil, f"{n} players dealt teams {teams}"
        lancelot = self.variant != "none"
        cast = rules.expected_cast(self.o.roles, n, lancelot)
        dealt = Counter(e.roles)
        if cast is not None:
            assert dealt == cast, f"dealt {sorted(dealt.items())}, RULES say {sorted(cast.items())}"
        else:  # the standard set where docs/rules.md leaves the exact cut open
            for r in (Role.MERLIN, Role.PERCIVAL, Role.ASSASSIN):
                assert dealt[r] == 1, f"standard set without {r.value}: {dealt}"
        for r, count in dealt.items():
            if r not in (Role.LOYAL_SERVANT, Role.MINION):
                assert count == 1, f"{r.value} dealt {count} times"
        assert (dealt[Role.GOOD_LANCELOT], dealt[Role.EVIL_LANCELOT]) == ((1, 1) if lancelot else (0, 0)), \
            f"Lancelot {self.variant}: dealt {dealt}"
        assert e.shooter in self.seats and self.role[e.shooter] is rules.expected_shooter_role(e.roles), \
            f"the shot goes to {e.shooter} ({self.role.get(e.shooter)}), roles {e.roles}"
        self.shooter = e.shooter
        assert e.first_leader in self.seats
        self.first_leader = e.first_leader
        self.deck = e.lancelot_deck
        if self.variant == "1":
            keep, switch = rules.V1_DECK[self.preset]
            assert Counter(e.lancelot_deck) == Counter({False: keep, True: switch}), \
                f"variant 1 deck for {self.preset}: {e.lancelot_deck}"
        elif self.variant == "2":
            assert len(e.lancelot_deck) == 5 and sum(e.lancelot_deck) <= 2, f"variant 2 schedule {e.lancelot_deck}"
        else:
            assert e.lancelot_deck == (), f"no loyalty deck without variant 1/2: {e.lancelot_deck}"
        self.night = rules.expected_night(e.seats, e.roles, self.variant, self.o.oberon_known_to_evil)
        if self.o.lady:
            self.lady_holder = self.seats[(self.seats.index(e.first_leader) - 1) % n]
            self.lady_past = {self.lady_holder}

    def on_LobbyOpened(self, e: ev.LobbyOpened | ev.PlayerJoined | ev.PlayerLeft | ev.OptionsChanged) -> None:
        self.lobby_deals = e.deals

    on_PlayerJoined = on_PlayerLeft = on_OptionsChanged = on_LobbyOpened

    def on_GameStarted(self, e: ev.GameStarted) -> None:
        assert e.seats == self.seats and e.first_leader == self.first_leader
        roles = tuple(self.role[p] for p in self.seats)
        assert Counter(e.roles_in_play) == Counter(roles), f"roles_in_play {e.roles_in_play} vs dealt {roles}"
        assert e.roles_in_play == self.lobby_deals, \
            f"the lobby said a start would deal {self.lobby_deals}, the start dealt {e.roles_in_play}"
        order = list(Role)
        canonical = (list(e.roles_in_play) == sorted(e.roles_in_play, key=order.index)
                     or list(e.roles_in_play) == sorted(e.roles_in_play, key=lambda r: r.value))
        assert canonical, f"roles_in_play is not in a canonical order (may follow the seats): {e.roles_in_play}"
        assert e.lady_holder == self.lady_holder, f"Lady starts with {e.lady_holder}, expected {self.lady_holder}"
        assert e.quest_sizes == rules.QUEST_TEAM[self.n], f"quest sizes {e.quest_sizes}"
        assert e.fails_needed == tuple(rules.fails_to_fail(self.n, q) for q in range(1, 6)), f"{e.fails_needed}"

    def on_RoleAssigned(self, e: ev.RoleAssigned) -> None:
        p = e.player
        assert p in self.seats and p not in self.assigned, f"RoleAssigned twice or to a stranger: {p}"
        self.assigned.add(p)
        assert e.role is self.role[p] and e.team is rules.starting_team(e.role), f"{e}"
        assert len(set(e.knowledge)) == len(e.knowledge) and frozenset(e.knowledge) == self.night[p], \
            f"{p} ({e.role.value}) learned {sorted(e.knowledge)} in the night, RULES give {sorted(self.night[p])}"

    def on_LoyaltyScheduleRevealed(self, e: ev.LoyaltyScheduleRevealed) -> None:
        assert self.variant == "2" and e.schedule == self.deck, f"{e} with variant {self.variant}"

    def on_LoyaltyCardRevealed(self, e: ev.LoyaltyCardRevealed) -> None:
        q = e.quest
        assert self.variant in ("1", "2"), f"loyalty card with Lancelot variant {self.variant}"
        assert q == self.quest and q not in self.draws and q not in self.proposals_opened, \
            f"loyalty card for quest {q} at quest {self.quest} (drawn {self.draws}, proposals {self.proposals_opened})"
        if self.variant == "1":
            assert q in rules.V1_DRAW_QUESTS, f"variant 1 draws at quests 3-5, drew at {q}"
            assert e.switch == self.deck[len(self.draws)], f"drew {e.switch}, deck {self.deck}"
        else:
            assert e.switch and self.deck[q - 1], f"variant 2 reveal at quest {q}, schedule {self.deck}"
        if self.lady_due(q):
            if self.forum:  # the Lady comes after the draw
                assert q not in self.lady_opened, f"forum: Lady of quest {q} before its loyalty card"
            else:  # right after the quest, before the next quest starts
                assert q in self.lady_opened, f"Lady after quest {q - 1} missing before quest {q}'s draw"
        self.draws[q] = e.switch
        self.switched ^= e.switch
        assert e.lancelots_switched == self.switched, f"{e}, expected switched={self.switched}"

    # -- phases -----------------------------------------------------------------

    def on_PhaseOpened(self, e: ev.PhaseOpened) -> None:
        phase, q = e.phase, self.quest
        assert e.phase_id == self.phase_id + 1, f"phase id {e.phase_id} after {self.phase_id}"
        assert e.quest == q, f"{phase.value} opened for quest {e.quest}, the game is at quest {q}"
        assert e.leader in self.seats, f"leader {e.leader!r}"
        expected = self.expected_rule(phase)
        assert e.missed_rule is expected, f"{phase.value}: announced {e.missed_rule}, {self.preset} says {expected}"
        assert e.timeout_seconds > 0, f"{phase.value} has no deadline"
        if hasattr(e, "team_size"):  # announced with every phase (added with the protocol work)
            assert (e.team_size, e.fails_needed) == (rules.QUEST_TEAM[self.n][q - 1], rules.fails_to_fail(self.n, q)), \
                f"quest {q}, {self.n} players: announced team {e.team_size}, fails needed {e.fails_needed}"
        if self.forum and phase.value in rules.FORUM_TIMERS:
            assert e.timeout_seconds == rules.FORUM_TIMERS[phase.value], f"forum {phase.value} {e.timeout_seconds}s"
        if phase is P.PROPOSAL:
            want = self.first_leader if self.leader is None else self.next_seat(self.leader)
            assert e.leader == want, f"proposal leader {e.leader}, seat order gives {want} (previous {self.leader})"
            assert e.vote_track == self.rejections, f"vote track {e.vote_track}, {self.rejections} rejections"
            assert e.actors == (e.leader,), f"proposal waits for {e.actors}"
            if q not in self.proposals_opened:
                if self.draw_due(q):
                    assert q in self.draws, f"quest {q} started without its loyalty card"
                if self.lady_due(q):
                    assert q in self.lady_opened, f"quest {q} started without the Lady after quest {q - 1}"
            self.proposals_opened.add(q)
            self.leader = e.leader
            self.team, self.sword, self.auto, self.votes, self.cards = (), None, False, {}, {}
            self.sword_target = None
        elif phase is P.VOTE:
            assert isinstance(self.prev, ev.TeamProposed) and not self.auto, f"vote without a proposal: {self.prev}"
            assert e.leader == self.leader and set(e.actors) == set(self.seats), f"{e}"
            self.votes = {}
        elif phase is P.QUEST:
            approved = isinstance(self.prev, ev.VotesRevealed) and self.prev.approved
            assert approved or (isinstance(self.prev, ev.TeamProposed) and self.auto), f"quest after {self.prev}"
            assert e.leader == self.leader and set(e.actors) == set(self.team), f"{e}"
            self.cards = {}
        elif phase is P.EXCALIBUR:
            assert self.o.excalibur and len(self.cards) == len(self.team), f"Excalibur phase too early: {e}"
            assert e.actors == (self.sword,), f"{e}"
        elif phase is P.LADY:
            assert self.lady_due(q) and q not in self.lady_opened, f"Lady at quest {q}: {e}"
            assert e.leader == self.next_seat(self.leader), f"Lady phase leader {e.leader}"
            assert e.actors == (self.lady_holder,), f"Lady waits for {e.actors}, holder {self.lady_holder}"
            self.lady_opened.add(q)
        elif phase is P.ASSASSINATION:
            assert self.successes() == 3 and self.failures() < 3, f"assassination after {self.failed}"
            assert e.actors == ((self.shooter,) if self.forum else ()), \
                f"assassination actors {e.actors} (the shooter is secret in a private conference)"
        elif phase is P.LAST_WORD:
            assert self.o.last_word and self.accused is not None and e.actors == (self.accused,), f"{e}"
        self.phase, self.phase_id, self.announced_rule = phase, e.phase_id, e.missed_rule

    def on_DeadlineMissed(self, e: ev.DeadlineMissed) -> None:
        assert e.phase is self.phase and e.phase_id == self.phase_id, f"{e} while in {self.phase}"
        assert e.rule is self.announced_rule, f"missed {e.phase.value}: applied {e.rule}, announced {self.announced_rule}"
        if self.phase is P.PROPOSAL:
            waiting = {self.leader}
        elif self.phase is P.VOTE:
            waiting = set(self.seats) - set(self.votes)
        elif self.phase is P.QUEST:
            waiting = set(self.team) - set(self.cards)
        else:
            waiting = {{P.EXCALIBUR: self.sword, P.LADY: self.lady_holder, P.ASSASSINATION: self.shooter,
                        P.LAST_WORD: self.accused}[self.phase]}
        assert set(e.missing) == waiting and len(e.missing) == len(waiting) and waiting, \
            f"{e.phase.value} deadline: missing {e.missing}, waiting for {sorted(waiting)}"

    # -- a round ---------------------------------------------------------------

    def on_TeamProposed(self, e: ev.TeamProposed) -> None:
        assert self.phase is P.PROPOSAL and e.leader == self.leader and e.quest == self.quest, f"{e}"
        size = rules.QUEST_TEAM[self.n][self.quest - 1]
        assert len(e.team) == size, f"quest {self.quest} with {self.n} players needs {size}, team {e.team}"
        assert len(set(e.team)) == len(e.team) and set(e.team) <= set(self.seats), f"team {e.team}"
        if self.o.excalibur:
            assert e.excalibur in e.team and e.excalibur != e.leader, f"Excalibur to {e.excalibur}, team {e.team}"
        else:
            assert e.excalibur is None, f"Excalibur not in play, handed to {e.excalibur}"
        auto = self.online and self.rejections == 4
        assert e.auto_approved == auto, f"auto_approved={e.auto_approved} after {self.rejections} rejections"
        self.team, self.sword, self.auto = e.team, e.excalibur, e.auto_approved

    def on_ProposalMissed(self, e: ev.ProposalMissed) -> None:
        assert self.phase is P.PROPOSAL and e.leader == self.leader and e.quest == self.quest, f"{e}"
        counts = not self.forum and not (self.online and self.rejections == 4)
        assert e.counts_as_rejection == counts, f"{self.preset}: missed proposal counts={e.counts_as_rejection}"
        assert counts == (self.announced_rule is M.PROPOSAL_COUNTS_AS_REJECTION), "applied rule differs from announced"
        self.rejections += counts
        assert e.vote_track == self.rejections, f"vote track {e.vote_track}, {self.rejections} rejections"
        self.after_rejection()

    def after_rejection(self) -> None:
        if self.online:
            assert self.rejections <= 4, f"online: {self.rejections} rejections on quest {self.quest}"
        elif self.rejections == 5:
            self.expect_end = W.HAMMER

    def on_VoteCast(self, e: ev.VoteCast) -> None:
        assert self.phase is P.VOTE and e.player in self.seats and e.player not in self.votes, f"{e}"
        self.votes[e.player] = e.approve

    def on_PlayerVoted(self, e: ev.PlayerVoted) -> None:
        assert isinstance(self.prev, ev.VoteCast) and self.prev.player == e.player, f"{e} after {self.prev}"

    def on_VotesRevealed(self, e: ev.VotesRevealed) -> None:
        assert self.phase is P.VOTE and e.quest == self.quest and e.leader == self.leader and e.team == self.team
        yes = sum(self.votes.values())
        no = len(self.votes) - yes
        assert (e.approvals, e.rejections) == (yes, no), f"counts {e.approvals}/{e.rejections}, cast {yes}/{no}"
        if self.o.anonymous_votes:
            assert e.votes is None, f"anonymous votes shown with names: {e.votes}"
        else:
            assert e.votes is not None and len(e.votes) == len(self.votes) and dict(e.votes) == self.votes, \
                f"shown votes {e.votes}, cast {self.votes}"
        assert set(e.not_voted) == set(self.seats) - set(self.votes), f"not_voted {e.not_voted}"
        approved = yes > no if self.forum else 2 * yes > self.n
        assert e.approved == approved, f"{yes} for, {no} against, {self.n} players: approved={e.approved}"
        self.rejections += not approved
        assert e.vote_track == self.rejections, f"vote track {e.vote_track}, {self.rejections} rejections"
        self.vote_log.append((e.quest, e.leader, e.team, e.approvals, e.rejections, e.votes, e.approved))
        if not approved:
            self.after_rejection()

    def allowed(self, player: str) -> set[Card]:
        if self.team_now(player) is Team.GOOD:
            return {Card.SUCCESS, Card.FAIL} if self.o.good_may_fail else {Card.SUCCESS}
        if self.variant == "2" and self.role[player] in (Role.GOOD_LANCELOT, Role.EVIL_LANCELOT):
            return {Card.FAIL}
        return {Card.SUCCESS, Card.FAIL}

    def on_CardPlayed(self, e: ev.CardPlayed) -> None:
        p = e.player
        assert self.phase is P.QUEST and p in self.team and p not in self.cards, f"{e}, team {self.team}"
        assert e.card in self.allowed(p), \
            f"{p} ({self.role[p].value}, now {self.team_now(p).value}) played {e.card.value}"
        self.cards[p] = e.card

    def on_PlayerPlayedCard(self, e: ev.PlayerPlayedCard) -> None:
        assert isinstance(self.prev, ev.CardPlayed) and self.prev.player == e.player, f"{e} after {self.prev}"

    def on_MissedCardsCounted(self, e: ev.MissedCardsCounted) -> None:
        silent = set(self.team) - set(self.cards)
        assert self.phase is P.QUEST and {p for p, _ in e.cards} == silent and len(e.cards) == len(silent), f"{e}"
        for p, card in e.cards:
            want = Card.SUCCESS if Card.SUCCESS in self.allowed(p) else Card.FAIL
            assert card is want, f"silent {p} ({self.role[p].value}) counted as {card.value}"
            self.cards[p] = card

    def on_ExcaliburUsed(self, e: ev.ExcaliburUsed) -> None:
        assert self.phase is P.EXCALIBUR and e.holder == self.sword, f"{e}, holder {self.sword}"
        assert e.target in self.team and e.target != e.holder, f"Excalibur on {e.target}, team {self.team}"
        assert e.original is self.cards[e.target], f"Excalibur saw {e.original}, card was {self.cards[e.target]}"
        self.cards[e.target] = Card.FAIL if e.original is Card.SUCCESS else Card.SUCCESS
        self.peeks.append((e.holder, e.target, e.original))
        self.sword_target = e.target

    def on_QuestResolved(self, e: ev.QuestResolved) -> None:
        q = self.quest
        assert e.quest == q and e.team == self.team, f"{e}, quest {q}, team {self.team}"
        assert self.phase is (P.EXCALIBUR if self.sword else P.QUEST), f"quest resolved in {self.phase}"
        assert len(self.cards) == len(self.team), f"quest resolved with cards {self.cards} for {self.team}"
        fails = sum(1 for c in self.cards.values() if c is Card.FAIL)
        assert (e.fails, e.successes) == (fails, len(self.team) - fails), \
            f"quest {q}: announced {e.fails} fails/{e.successes} successes, cards {self.cards}"
        assert e.fails + e.successes == len(e.team)
        assert e.failed == (fails >= rules.fails_to_fail(self.n, q)), f"quest {q}, {self.n} players: {e}"
        assert (e.excalibur_holder, e.excalibur_target) == (self.sword, self.sword_target), f"{e}"
        self.failed.append(e.failed)
        self.quest_log.append((e.quest, e.team, e.successes, e.fails, e.failed))
        self.rejections = 0
        if self.failures() == 3:
            self.expect_end = W.THREE_FAILED_QUESTS
        elif self.successes() == 3:
            self.expect_assassination = True
        else:
            self.quest += 1

    def on_LadyResult(self, e: ev.LadyResult) -> None:
        assert self.phase is P.LADY and e.holder == self.lady_holder, f"{e}, holder {self.lady_holder}"
        assert e.target in self.seats and e.target not in self.lady_past, f"Lady on {e.target}, past {self.lady_past}"
        assert e.loyalty is self.team_now(e.target), \
            f"Lady says {e.target} is {e.loyalty.value}, but {self.role[e.target].value} is {self.team_now(e.target)}"
        self.lady_results.append((e.holder, e.target, e.loyalty))

    def on_LadyUsed(self, e: ev.LadyUsed) -> None:
        prev = self.prev
        assert isinstance(prev, ev.LadyResult) and (prev.holder, prev.target) == (e.holder, e.target), f"{e}"
        self.lady_holder = e.target
        self.lady_past.add(e.target)
        assert len(self.lady_past) <= 4, "the Lady was used more than three times"

    def on_LadyNotUsed(self, e: ev.LadyNotUsed) -> None:
        assert self.phase is P.LADY and e.holder == self.lady_holder and isinstance(self.prev, ev.DeadlineMissed)

    # -- the end ---------------------------------------------------------------

    def on_ConferenceOpened(self, e: ev.ConferenceOpened) -> None:
        assert self.phase is P.ASSASSINATION and e.shooter == self.shooter, f"{e}, shooter {self.shooter}"
        assert set(e.members) == self.evil_now() and len(e.members) == len(set(e.members)), f"{e}"

    def on_ConferenceMessage(self, e: ev.ConferenceMessage) -> None:
        assert self.phase in (P.ASSASSINATION, P.LAST_WORD) and self.team_now(e.sender) is Team.EVIL, f"{e}"

    def on_ShotHanded(self, e: ev.ShotHanded) -> None:
        assert self.o.assassin_may_delegate and not self.handed and self.accused is None, f"{e}"
        assert e.by == self.shooter and e.to != e.by and self.team_now(e.to) is Team.EVIL, f"{e}"
        self.shooter, self.handed = e.to, True

    def on_MerlinAccused(self, e: ev.MerlinAccused) -> None:
        assert self.o.last_word and self.phase is P.ASSASSINATION and self.accused is None, f"{e}"
        assert e.shooter == self.shooter and e.target in self.seats and e.target != e.shooter, f"{e}"
        assert self.team_now(e.target) is Team.GOOD, f"accused {e.target}, an evil player ({self.role[e.target].value})"
        self.accused = e.target

    def on_LastWordSpoken(self, e: ev.LastWordSpoken) -> None:
        assert self.phase is P.LAST_WORD and e.player == self.accused, f"{e}, accused {self.accused}"

    def on_AssassinationResolved(self, e: ev.AssassinationResolved) -> None:
        assert self.phase is P.ASSASSINATION and e.shooter == self.shooter, f"{e}, shooter {self.shooter}"
        assert e.target in self.seats and e.target != e.shooter, f"{e}"
        assert self.team_now(e.target) is Team.GOOD, f"shot at {e.target}, an evil player ({self.role[e.target].value})"
        if self.o.last_word:
            assert self.accused is not None, f"shot without an accusation under last_word: {e}"
        if isinstance(self.prev, ev.DeadlineMissed):
            assert e.target == self.accused, f"deadline shot {e.target}, accused {self.accused}"
        assert e.hit == (self.role[e.target] is Role.MERLIN), f"{e}: {e.target} is {self.role[e.target].value}"
        self.shot = (e.target, e.hit)
        self.expect_end = W.MERLIN_ASSASSINATED if e.hit else W.ASSASSIN_MISSED

    def on_GameEnded(self, e: ev.GameEnded) -> None:
        cause = e.cause
        assert isinstance(e.winner, Team) and isinstance(cause, WinCause), f"{e}"
        if self.expect_end is not None:
            assert cause is self.expect_end, f"game ended by {cause.value}, expected {self.expect_end.value}"
        else:
            assert cause is W.SHOT_FORFEITED and self.phase is P.ASSASSINATION and self.accused is None \
                and isinstance(self.prev, ev.DeadlineMissed), f"game ended by {cause.value} after {self.prev}"
        assert e.winner is (Team.EVIL if cause in EVIL_CAUSES else Team.GOOD), f"{cause.value} won by {e.winner}"
        if cause is W.THREE_FAILED_QUESTS:
            assert self.failures() == 3 and self.successes() < 3, f"{cause.value} with quests {self.failed}"
        elif cause is W.HAMMER:
            assert not self.online, "the online preset has no hammer"
            assert self.rejections == 5 and self.failures() < 3 and self.successes() < 3, \
                f"hammer after {self.rejections} rejections on quest {self.quest}, quests {self.failed}"
        else:
            assert self.successes() == 3 and self.failures() < 3, f"{cause.value} with quests {self.failed}"
            assert (self.shot is None) == (cause is W.SHOT_FORFEITED), f"{cause.value}, shot {self.shot}"
        assert e.roles == tuple((p, self.role[p]) for p in self.seats), f"final reveal {e.roles}"
        assert e.teams == tuple((p, self.team_now(p)) for p in self.seats), f"final allegiances {e.teams}"
        self.ended = (e.winner, cause)
        self.expect_end = None
        self.phase = P.ENDED

    # -- after the last event ------------------------------------------------------

    def finish(self, state) -> None:
        assert self.ended is not None, f"the game did not end (phase {state.phase})"
        assert state.phase is P.ENDED and (state.winner, state.cause) == self.ended, \
            f"final state {state.phase} {state.winner} {state.cause}, GameEnded said {self.ended}"
        assert [(r.quest, r.team, r.successes, r.fails, r.failed) for r in state.quest_results] == self.quest_log
        assert len(self.assigned) == self.n, f"{len(self.assigned)} RoleAssigned for {self.n} players"
