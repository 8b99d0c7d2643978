"""``evolve(state, event)``: apply one event. The only code that changes state.

Each applier changes a fresh clone in place (``apply_in_place``), so ``decide``
can build a command's events one by one without copying the state each time.
"""

from __future__ import annotations

from typing import Callable

from avalon.shared.game import events as ev
from avalon.shared.game.model import Lancelot, Phase, SeatReason
from .state import GameState, QuestResult, VoteRecord
from avalon.shared.game.numbers import LADY_QUESTS, QUESTS_TO_WIN


def evolve(state: GameState, event: ev.Event) -> GameState:
    new = state.clone()
    apply_in_place(new, event)
    return new


def apply_in_place(s: GameState, event: ev.Event) -> None:
    s.seq += 1
    applier = _APPLIERS.get(type(event))
    if applier is not None:
        applier(s, event)


def _created(s: GameState, e: ev.GameCreated) -> None:
    s.game_id, s.host, s.seed, s.options = e.game_id, e.host, e.seed, e.options
    s.phase = Phase.LOBBY


def _joined(s: GameState, e: ev.PlayerJoined) -> None:
    s.players = s.players + (e.player,)
    if e.player in s.spectators:
        s.spectators = tuple(p for p in s.spectators if p != e.player)


def _left(s: GameState, e: ev.PlayerLeft) -> None:
    s.players = tuple(p for p in s.players if p != e.player)


def _options(s: GameState, e: ev.OptionsChanged) -> None:
    s.options = e.options


def _cancelled(s: GameState, e: ev.GameCancelled) -> None:
    s.phase = Phase.CANCELLED


def _dealt(s: GameState, e: ev.Dealt) -> None:
    s.players = e.seats
    s.seat_of = {p: i for i, p in enumerate(e.seats)}
    s.roles = e.roles
    s.shooter = s.seat_of[e.shooter]
    s.lancelot_deck = e.lancelot_deck
    s.quest = 1
    s.missed = (0,) * len(e.seats)
    s.leader = s.seat_of[e.first_leader]
    if s.options.lady:
        s.lady_holder = (s.leader - 1) % len(e.seats)
        s.lady_past = frozenset((s.lady_holder,))


def _loyalty(s: GameState, e: ev.LoyaltyCardRevealed) -> None:
    if s.options.lancelot is Lancelot.V1:
        s.lancelot_deck = s.lancelot_deck[1:]
    s.lancelots_switched = e.lancelots_switched
    s.loyalty_draws = s.loyalty_draws + ((e.quest, e.switch),)


def _phase(s: GameState, e: ev.PhaseOpened) -> None:
    s.phase = e.phase
    s.phase_id = e.phase_id
    s.leader = s.seat_of[e.leader]
    s.timeout_seconds = e.timeout_seconds
    s.missed_rule = e.missed_rule
    if e.phase is Phase.PROPOSAL:
        s.team, s.excalibur, s.votes, s.cards = (), -1, {}, {}


def _acted(s: GameState, player: str) -> None:
    """A player acted: they are back (no missed deadline in a row, no longer away)."""
    seat = s.seat_of.get(player)
    if seat is None:
        return
    if s.missed and s.missed[seat]:
        missed = list(s.missed)
        missed[seat] = 0
        s.missed = tuple(missed)
    if seat in s.away:
        s.away = s.away - {seat}


def _proposed(s: GameState, e: ev.TeamProposed) -> None:
    _acted(s, e.leader)
    seat_of = s.seat_of
    s.team = tuple(seat_of[p] for p in e.team)
    s.excalibur = seat_of[e.excalibur] if e.excalibur is not None else -1


def _proposal_missed(s: GameState, e: ev.ProposalMissed) -> None:
    s.vote_track = e.vote_track


def _vote(s: GameState, e: ev.VoteCast) -> None:
    _acted(s, e.player)
    votes = dict(s.votes)
    votes[s.seat_of[e.player]] = e.approve
    s.votes = votes


def _revealed(s: GameState, e: ev.VotesRevealed) -> None:
    s.vote_track = e.vote_track
    s.vote_log = s.vote_log + (
        VoteRecord(e.quest, e.leader, e.team, e.approvals, e.rejections, e.votes, e.approved),
    )


def _card(s: GameState, e: ev.CardPlayed) -> None:
    _acted(s, e.player)
    cards = dict(s.cards)
    cards[s.seat_of[e.player]] = e.card
    s.cards = cards


def _missed_cards(s: GameState, e: ev.MissedCardsCounted) -> None:
    cards = dict(s.cards)
    for player, card in e.cards:
        cards[s.seat_of[player]] = card
    s.cards = cards


def _excalibur(s: GameState, e: ev.ExcaliburUsed) -> None:
    _acted(s, e.holder)
    cards = dict(s.cards)
    target = s.seat_of[e.target]
    cards[target] = cards[target].flipped
    s.cards = cards
    s.excalibur_log = s.excalibur_log + ((e.holder, e.target, e.original),)


def _quest(s: GameState, e: ev.QuestResolved) -> None:
    s.quest_results = s.quest_results + (
        QuestResult(e.quest, e.team, e.successes, e.fails, e.failed, e.excalibur_holder, e.excalibur_target),
    )
    s.vote_track = 0
    s.team, s.excalibur, s.votes, s.cards = (), -1, {}, {}
    going_on = s.failures() < QUESTS_TO_WIN and s.successes() < QUESTS_TO_WIN
    if going_on:
        s.quest = e.quest + 1
    s.lady_due = going_on and s.options.lady and e.quest in LADY_QUESTS


def _lady(s: GameState, e: ev.LadyUsed) -> None:
    _acted(s, e.holder)
    target = s.seat_of[e.target]
    s.lady_holder = target
    s.lady_past = s.lady_past | {target}
    s.lady_due = False
    s.lady_log = s.lady_log + ((e.holder, e.target),)


def _lady_result(s: GameState, e: ev.LadyResult) -> None:
    s.lady_results = s.lady_results + ((e.holder, e.target, e.loyalty),)


def _lady_missed(s: GameState, e: ev.LadyNotUsed) -> None:
    s.lady_due = False


def _handed(s: GameState, e: ev.ShotHanded) -> None:
    s.shooter = s.seat_of[e.to]
    s.shot_handed = True


def _accused(s: GameState, e: ev.MerlinAccused) -> None:
    s.accused = s.seat_of[e.target]


def _conferred(s: GameState, e: ev.ConferenceMessage) -> None:
    _acted(s, e.sender)
    s.conference_log = s.conference_log + ((e.sender, e.text),)


def _last_word(s: GameState, e: ev.LastWordSpoken) -> None:
    _acted(s, e.player)


def _deadline_missed(s: GameState, e: ev.DeadlineMissed) -> None:
    seat_of = s.seat_of
    if e.excused:
        used = dict(s.excused_used)
        away = set(s.away)
        for player in e.excused:
            seat = seat_of[player]
            used[seat] = used.get(seat, 0) + 1
            if used[seat] >= s.options.excused_absences:
                away.discard(seat)  # the budget is spent: the next missed deadline counts
        s.excused_used, s.away = used, frozenset(away)
    if e.in_a_row:
        missed = list(s.missed or (0,) * len(s.players))
        for player, count in e.in_a_row:
            missed[seat_of[player]] = count
        s.missed = tuple(missed)


def _seat_opened(s: GameState, e: ev.SeatOpened) -> None:
    s.open_seats = s.open_seats | {e.seat}
    if e.reason is SeatReason.LEFT:
        s.vacant = s.vacant | {e.seat}


def _seat_taken(s: GameState, e: ev.SeatTaken) -> None:
    seat, new, old = e.seat, e.player, e.previous
    players = list(s.players)
    players[seat] = new
    s.players = tuple(players)
    seat_of = dict(s.seat_of)
    del seat_of[old]
    seat_of[new] = seat
    s.seat_of = seat_of
    former = {was: (new if now == old else now) for was, now in s.former.items() if was != new}
    former[old] = new
    s.former = former
    s.open_seats = s.open_seats - {seat}
    s.vacant = s.vacant - {seat}
    s.away = s.away - {seat}
    s.void_votes = s.void_votes - {seat}
    if s.missed:
        missed = list(s.missed)
        missed[seat] = 0
        s.missed = tuple(missed)
    used = dict(s.excused_used)
    used.pop(seat, None)
    s.excused_used = used
    if new in s.spectators:
        s.spectators = tuple(p for p in s.spectators if p != new)
    # what the seat learned privately is the new holder's now (the public logs keep who did what)
    s.lady_results = tuple((new if h == old else h, t, team) for h, t, team in s.lady_results)
    s.excalibur_log = tuple((new if h == old else h, t, card) for h, t, card in s.excalibur_log)


def _paused(s: GameState, e: ev.GamePaused) -> None:
    s.paused = True
    s.paused_left = e.seconds_left


def _resumed(s: GameState, e: ev.GameResumed) -> None:
    s.paused = False
    s.paused_left = 0
    s.phase_id = e.phase_id


def _void_requested(s: GameState, e: ev.VoidRequested) -> None:
    s.void_votes = s.void_votes | {s.seat_of[e.player]}


def _voided(s: GameState, e: ev.GameVoided) -> None:
    s.phase = Phase.CANCELLED
    s.paused = False


def _absence(s: GameState, e: ev.AbsenceAnnounced) -> None:
    s.away = s.away | {s.seat_of[e.player]}


def _host_changed(s: GameState, e: ev.HostChanged) -> None:
    s.host = e.host


def _spectator_joined(s: GameState, e: ev.SpectatorJoined) -> None:
    s.spectators = s.spectators + (e.spectator,)


def _spectator_left(s: GameState, e: ev.SpectatorLeft) -> None:
    s.spectators = tuple(p for p in s.spectators if p != e.spectator)


def _ended(s: GameState, e: ev.GameEnded) -> None:
    s.phase = Phase.ENDED
    s.winner = e.winner
    s.cause = e.cause


_APPLIERS: dict[type, Callable[[GameState, ev.Event], None]] = {
    ev.GameCreated: _created,
    ev.PlayerJoined: _joined,
    ev.PlayerLeft: _left,
    ev.OptionsChanged: _options,
    ev.GameCancelled: _cancelled,
    ev.Dealt: _dealt,
    ev.LoyaltyCardRevealed: _loyalty,
    ev.PhaseOpened: _phase,
    ev.TeamProposed: _proposed,
    ev.ProposalMissed: _proposal_missed,
    ev.VoteCast: _vote,
    ev.VotesRevealed: _revealed,
    ev.CardPlayed: _card,
    ev.MissedCardsCounted: _missed_cards,
    ev.ExcaliburUsed: _excalibur,
    ev.QuestResolved: _quest,
    ev.LadyUsed: _lady,
    ev.LadyResult: _lady_result,
    ev.LadyNotUsed: _lady_missed,
    ev.ShotHanded: _handed,
    ev.MerlinAccused: _accused,
    ev.GameEnded: _ended,
    ev.ConferenceMessage: _conferred,
    ev.LastWordSpoken: _last_word,
    ev.DeadlineMissed: _deadline_missed,
    ev.SeatOpened: _seat_opened,
    ev.SeatTaken: _seat_taken,
    ev.GamePaused: _paused,
    ev.GameResumed: _resumed,
    ev.VoidRequested: _void_requested,
    ev.GameVoided: _voided,
    ev.AbsenceAnnounced: _absence,
    ev.HostChanged: _host_changed,
    ev.SpectatorJoined: _spectator_joined,
    ev.SpectatorLeft: _spectator_left,
}
