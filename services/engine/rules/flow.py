"""How the game moves from phase to phase: the transitions every handler shares.

A ``Tx`` collects the events of one command and applies each to a private
clone of the state as it goes, so later steps see the earlier ones. It also
carries the phase table, handed in by ``decide``: the table's timeouts move
the game with these transitions, so this module cannot import the table.
"""

from __future__ import annotations

from typing import Mapping

from avalon.shared.game import events as ev
from .evolve import apply_in_place
from avalon.shared.game.model import Conference, Lancelot, LadyTiming, Phase, Team, WinCause
from .phase_rules import PhaseRules
from .state import GameState
from avalon.shared.game.numbers import LANCELOT_DRAW_QUESTS, QUESTS_TO_WIN, fails_needed, quest_size


class Tx:
    __slots__ = ("s", "events", "phases")

    def __init__(self, state: GameState, phases: Mapping[Phase, PhaseRules]) -> None:
        self.s = state.clone()
        self.events: list[ev.Event] = []
        self.phases = phases

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)
        apply_in_place(self.s, event)

    def name(self, seat: int) -> str:
        return self.s.players[seat]

    def names(self, seats) -> tuple[str, ...]:
        players = self.s.players
        return tuple(players[i] for i in seats)


def open_phase(tx: Tx, phase: Phase, leader: int | None = None) -> None:
    s = tx.s
    leader = s.leader if leader is None else leader
    rules = tx.phases[phase]
    tx.emit(ev.PhaseOpened(
        phase=phase,
        phase_id=s.phase_id + 1,
        quest=s.quest,
        leader=tx.name(leader),
        vote_track=s.vote_track,
        team_size=quest_size(len(s.players), s.quest),
        fails_needed=fails_needed(len(s.players), s.quest),
        actors=() if rules.actors_hidden(s) else tx.names(rules.actors(s, leader)),
        timeout_seconds=getattr(s.options.timers, rules.timer) if rules.timer else 0,
        missed_rule=rules.missed_rule(s),
    ))


def start_quest(tx: Tx, leader: int) -> None:
    """The start of a quest: any Lancelot draw, then any Lady (forum), then a proposal."""
    s = tx.s
    variant = s.options.lancelot
    if variant is Lancelot.V1 and s.quest in LANCELOT_DRAW_QUESTS and s.lancelot_deck:
        switch = s.lancelot_deck[0]
        tx.emit(ev.LoyaltyCardRevealed(quest=s.quest, switch=switch,
                                       lancelots_switched=s.lancelots_switched ^ switch))
    elif variant is Lancelot.V2 and s.lancelot_deck[s.quest - 1]:
        tx.emit(ev.LoyaltyCardRevealed(quest=s.quest, switch=True,
                                       lancelots_switched=not s.lancelots_switched))
    if s.lady_due and s.options.lady_timing is LadyTiming.BEFORE_NEXT_PROPOSAL:
        open_phase(tx, Phase.LADY, leader)
    else:
        open_phase(tx, Phase.PROPOSAL, leader)


def after_lady(tx: Tx) -> None:
    s = tx.s
    if s.options.lady_timing is LadyTiming.BEFORE_NEXT_PROPOSAL:
        open_phase(tx, Phase.PROPOSAL)  # the draw of this quest already happened
    else:
        start_quest(tx, s.leader)


def after_quest(tx: Tx) -> None:
    s = tx.s
    if s.failures() >= QUESTS_TO_WIN:
        end_game(tx, Team.EVIL, WinCause.THREE_FAILED_QUESTS)
    elif s.successes() >= QUESTS_TO_WIN:
        open_assassination(tx)
    else:
        leader = (s.leader + 1) % len(s.players)
        if s.lady_due and s.options.lady_timing is LadyTiming.AFTER_QUEST:
            open_phase(tx, Phase.LADY, leader)
        else:
            start_quest(tx, leader)


def conference_audience(s: GameState) -> ev.Audience:
    if s.options.conference is Conference.PUBLIC:
        return ev.PUBLIC
    players, vacant = s.players, s.vacant  # a seat handed over hears nothing more; its next holder will
    return ev.Audience.to(*(players[i] for i in s.evil_seats() if i not in vacant))


def open_assassination(tx: Tx) -> None:
    s = tx.s
    open_phase(tx, Phase.ASSASSINATION)
    tx.emit(ev.ConferenceOpened(
        audience=conference_audience(s),
        shooter=tx.name(s.shooter),
        members=tx.names(s.evil_seats()),
    ))


def end_game(tx: Tx, winner: Team, cause: WinCause) -> None:
    s = tx.s
    tx.emit(ev.GameEnded(
        winner=winner,
        cause=cause,
        roles=tuple(zip(s.players, s.roles)),
        teams=tuple((p, s.team_of(i)) for i, p in enumerate(s.players)),
    ))
