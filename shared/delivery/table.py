"""One game as its table sees it, folded from the events every channel receives: who sits where,
what the engine will deal, the phase that is open and what each player may do in it, the team the
leader is drafting. One fold for every channel (OpenSpiel's observer), instead of one per gateway;
a channel keeps beside it only what is its own (the messages it edits in place, a mail's receipt).

It never decides a rule: what a player may do is the engine's ``choices_offered``, what will be
dealt is the engine's ``deals``; the draft only collects picks until they make a proposal the
engine's offer asks for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from avalon.shared.game import Options, Phase, Role
from avalon.shared.pictures import GamePicture, step
from avalon.shared.protocol import ChoicesOffered, EventEnvelope, Person, to_core_event


@dataclass
class Seats:
    """Who is at the table: the host, the players (in joining order, then in seat order once the game
    starts), those invited and not yet seated, and what the engine told of each person."""

    host: str = ""
    players: list[str] = field(default_factory=list)
    invited: list[str] = field(default_factory=list)
    people: dict[str, Person] = field(default_factory=dict)


@dataclass
class Turn:
    """The phase that is open: who leads, how big the team is, who has voted so far (a tally), the
    evil council's members, and what each player was offered in it (their buttons, links)."""

    phase: Phase = Phase.LOBBY
    phase_id: int = 0
    leader: str | None = None
    team_size: int = 0
    voted: list[str] = field(default_factory=list)
    council: list[str] = field(default_factory=list)
    offers: dict[str, ChoicesOffered] = field(default_factory=dict)


#: How many presses a draft remembers (a leader's picks and drops in one phase).
PRESSES_KEPT = 32


@dataclass
class Draft:
    """The leader's team in progress: picked one at a time (a button, a link), then Excalibur's holder
    where the offer asks for one; a proposal once complete."""

    picks: list[str] = field(default_factory=list)
    holder: str | None = None
    #: the last presses applied (a button press's id): one handled again after a restart, its effect
    #: already kept with the game, is not applied twice (a pick would drop out again)
    presses: tuple[str, ...] = ()

    def toggle(self, player: str, most: int | None = None, *, press: str | None = None) -> None:
        """Pick ``player``, or drop them if picked; with ``most``, a pick past it is not taken (by mail,
        where each pick is a mail; Telegram's picker shows the count and the engine refuses a wrong size).
        ``press``: the id of the press that asks it; a press already applied changes nothing."""
        if press is not None:
            if press in self.presses:
                return
            self.presses = (*self.presses[-(PRESSES_KEPT - 1):], press)
        if player in self.picks:
            self.picks.remove(player)
        elif most is None or len(self.picks) < max(most, 1):
            self.picks.append(player)

    @staticmethod
    def needs_holder(offer: ChoicesOffered | None) -> bool:
        """Whether the leader's offer asks for Excalibur's holder with the team."""
        return bool(offer) and any(c.kind.value == "propose_team" and c.excalibur for c in offer.choices)


@dataclass
class Table:
    game_id: str
    seats: Seats = field(default_factory=Seats)
    options: Options | None = None
    #: the role cards the engine would deal if the game started now (its ``deals``; empty: none fit)
    deals: tuple[Role, ...] = ()
    turn: Turn = field(default_factory=Turn)
    draft: Draft = field(default_factory=Draft)
    over: bool = False
    seen_seq: int = 0  # the last of the game's events folded in
    title: str = ""  # the table's name where the host's channel gives one (a Telegram group's title)
    #: what the board's and the end's pictures show, folded from the game's PUBLIC events only (a
    #: class-level default, so a table pickled before it existed reads back with an empty picture)
    picture: GamePicture = GamePicture()
    #: who follows the game without a seat, and whether its clock is stopped (class-level defaults too)
    spectators: tuple[str, ...] = ()
    paused: bool = False

    def offer(self, player: str) -> ChoicesOffered | None:
        """What ``player`` may do in the open phase (None: nothing, or an offer of a phase that is over)."""
        offer = self.turn.offers.get(player)
        return offer if offer is not None and offer.phase_id == self.turn.phase_id else None

    def seated(self, player: str) -> bool:
        return player in self.seats.players

    def concerns(self, player: str) -> bool:
        """Whether ``player`` has a part in this game: the host, a player or someone invited."""
        s = self.seats
        return player == s.host or player in s.players or player in s.invited or player in self.spectators


def fold(table: Table, envelope: EventEnvelope) -> None:
    """What one event changes in the table (an event it has no part in changes nothing but the
    people it names and the last event seen)."""
    e = envelope.event
    learn = _FOLDS.get(e.type)
    if learn is not None:
        learn(table, e)
    if e.type in PICTURED and envelope.audience.kind.value == "public":
        table.picture = step(table.picture, to_core_event(e, envelope.audience))
    for player, person in envelope.people.items():
        known = table.seats.people.get(player)
        table.seats.people[player] = person if known is None else Person(
            display_name=person.display_name or known.display_name, language=person.language or known.language,
            time_zone=person.time_zone or known.time_zone)
    if envelope.seq:
        table.seen_seq = max(table.seen_seq, envelope.seq)


def _lobby_opened(t: Table, e) -> None:
    t.seats.host, t.options, t.over = e.host, e.options, False
    t.turn = Turn()
    _deals(t, e)


def _deals(t: Table, e) -> None:
    deals = getattr(e, "deals", None)
    if deals is not None:
        t.deals = tuple(deals)


def _player_joined(t: Table, e) -> None:
    s = t.seats
    if e.player not in s.players:
        s.players.append(e.player)
    if e.player in s.invited:
        s.invited.remove(e.player)
    _deals(t, e)


def _player_left(t: Table, e) -> None:
    if e.player in t.seats.players:
        t.seats.players.remove(e.player)
    _deals(t, e)


def _player_invited(t: Table, e) -> None:
    s = t.seats
    if e.player not in s.invited and e.player not in s.players:
        s.invited.append(e.player)
    s.host = s.host or e.by
    t.title = e.table or t.title


def _options_changed(t: Table, e) -> None:
    t.options = e.options
    _deals(t, e)


def _game_started(t: Table, e) -> None:
    t.seats.players, t.options = list(e.seats), e.options


def _phase_opened(t: Table, e) -> None:
    t.turn = Turn(phase=e.phase, phase_id=e.phase_id, leader=e.leader, team_size=e.team_size,
                  council=t.turn.council)
    t.draft = Draft()


def _player_voted(t: Table, e) -> None:
    if e.player not in t.turn.voted:
        t.turn.voted.append(e.player)


def _conference_opened(t: Table, e) -> None:
    t.turn.council = list(e.members)


def _choices_offered(t: Table, e) -> None:
    t.turn.offers[e.player] = e


def _seat_taken(t: Table, e) -> None:
    """A substitute sits where ``previous`` sat: everything the table said of the seat is theirs now."""
    s, turn = t.seats, t.turn

    def swap(p):
        return e.player if p == e.previous else p
    if e.previous in s.players:
        s.players = [swap(p) for p in s.players]
    elif e.player not in s.players:  # a gateway that never saw this table: the newcomer at least sits
        s.players.append(e.player)
    if e.player in s.invited:
        s.invited.remove(e.player)
    turn.council = [swap(p) for p in turn.council]
    turn.voted = [swap(p) for p in turn.voted]
    turn.leader = swap(turn.leader)
    turn.offers.pop(e.previous, None)
    # the others' open choices (a leader's team picker, a Lady's or a shot's targets) name the newcomer
    turn.offers = {player: offer.model_copy(update={"choices": tuple(
        c.model_copy(update={"targets": tuple(swap(p) for p in c.targets)}) for c in offer.choices)})
        for player, offer in turn.offers.items()}
    t.draft.picks = [swap(p) for p in t.draft.picks]
    t.draft.holder = swap(t.draft.holder)
    t.spectators = tuple(p for p in t.spectators if p != e.player)


def _host_changed(t: Table, e) -> None:
    t.seats.host = e.host


def _spectator_joined(t: Table, e) -> None:
    if e.spectator not in t.spectators:
        t.spectators = t.spectators + (e.spectator,)


def _spectator_left(t: Table, e) -> None:
    t.spectators = tuple(p for p in t.spectators if p != e.spectator)


def _paused(t: Table, e) -> None:
    t.paused = True


def _resumed(t: Table, e) -> None:
    """The phase goes on under a new id: the offers made before the pause are stale, new ones follow."""
    t.paused = False
    t.turn.phase_id = e.phase_id


def _over(t: Table, e) -> None:
    t.over = True
    t.turn.offers = {}


#: the events the pictures are folded from (shared.pictures.record), all public ones; any other
#: event (a private one above all) never reaches the picture
PICTURED = frozenset({"game_started", "phase_opened", "team_proposed", "votes_revealed", "proposal_missed",
                      "quest_resolved", "lady_used", "game_ended"})

_FOLDS: dict[str, Callable[[Table, Any], None]] = {
    "lobby_opened": _lobby_opened,
    "player_joined": _player_joined,
    "player_left": _player_left,
    "player_invited": _player_invited,
    "options_changed": _options_changed,
    "game_started": _game_started,
    "phase_opened": _phase_opened,
    "player_voted": _player_voted,
    "conference_opened": _conference_opened,
    "choices_offered": _choices_offered,
    "game_ended": _over,
    "game_cancelled": _over,
    "game_voided": _over,
    "seat_taken": _seat_taken,
    "host_changed": _host_changed,
    "spectator_joined": _spectator_joined,
    "spectator_left": _spectator_left,
    "game_paused": _paused,
    "game_resumed": _resumed,
}
