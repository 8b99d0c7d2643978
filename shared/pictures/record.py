"""What a picture shows, as plain data, folded from a game's PUBLIC events only.

A private event (a role card, a vote before the reveal, a quest card, a Lady's result, Excalibur's
flip) is skipped by its audience, whatever its kind: a picture is sent to a whole group, so it can
only show what the whole group was told.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from avalon.shared.game.events import (
    AudienceKind, Event, GameEnded, GameStarted, LadyUsed, PhaseOpened, ProposalMissed, QuestResolved,
    TeamProposed, VotesRevealed,
)
from avalon.shared.game.model import Phase, Role, Team, WinCause

APPROVED, REJECTED, MISSED, AUTO, OPEN = "approved", "rejected", "missed", "auto", "open"


@dataclass(frozen=True, slots=True)
class QuestResult:
    successes: int
    fails: int
    failed: bool


@dataclass(frozen=True, slots=True)
class Proposal:
    """One proposal: a row of the vote-history grid."""

    quest: int  # 1..5
    leader: str
    team: tuple[str, ...] = ()  # empty when the leader proposed no team in time
    excalibur: str | None = None
    votes: tuple[tuple[str, bool], ...] | None = ()  # None: anonymous votes (only the counts are known)
    approvals: int = 0
    rejections: int = 0
    outcome: str = OPEN  # APPROVED, REJECTED, MISSED (no team in time), AUTO (online hammer), OPEN


@dataclass(frozen=True, slots=True)
class Ending:
    winner: Team
    cause: WinCause
    roles: tuple[tuple[str, Role], ...]
    teams: tuple[tuple[str, Team], ...]  # final allegiances (a Lancelot may have switched)


@dataclass(frozen=True, slots=True)
class GamePicture:
    """The state of the physical board, and the game's history, as the group knows it."""

    seats: tuple[str, ...] = ()
    quest_sizes: tuple[int, ...] = ()
    fails_needed: tuple[int, ...] = ()
    results: tuple[QuestResult, ...] = ()  # the quests played so far, in order
    quest: int = 1
    phase: Phase = Phase.LOBBY
    leader: str | None = None
    vote_track: int = 0  # rejected proposals in a row on this quest (0..4)
    lady_holder: str | None = None
    excalibur_holder: str | None = None  # the current team's Excalibur, until its quest is resolved
    proposals: tuple[Proposal, ...] = ()
    ending: Ending | None = None

    def result_of(self, quest: int) -> QuestResult | None:
        return self.results[quest - 1] if 0 < quest <= len(self.results) else None


def picture_of(events: Iterable[Event]) -> GamePicture:
    """The picture's data after ``events`` (a game's log or the part of it seen so far)."""
    game = GamePicture()
    for event in events:
        game = step(game, event)
    return game


def step(game: GamePicture, event: Event) -> GamePicture:
    """``game`` after one more event; any event that is not public changes nothing."""
    if event.audience.kind is not AudienceKind.PUBLIC:
        return game
    handler = _HANDLERS.get(type(event))
    return handler(game, event) if handler else game


def _started(game: GamePicture, e: GameStarted) -> GamePicture:
    return GamePicture(seats=e.seats, quest_sizes=e.quest_sizes, fails_needed=e.fails_needed, leader=e.first_leader,
                       lady_holder=e.lady_holder)


def _phase(game: GamePicture, e: PhaseOpened) -> GamePicture:
    return replace(game, phase=e.phase, quest=e.quest, leader=e.leader, vote_track=e.vote_track)


def _proposed(game: GamePicture, e: TeamProposed) -> GamePicture:
    proposal = Proposal(quest=e.quest, leader=e.leader, team=e.team, excalibur=e.excalibur,
                        outcome=AUTO if e.auto_approved else OPEN)
    return replace(game, proposals=game.proposals + (proposal,), excalibur_holder=e.excalibur,
                   leader=e.leader)


def _revealed(game: GamePicture, e: VotesRevealed) -> GamePicture:
    last = game.proposals[-1] if game.proposals else None
    voted = replace(last, votes=e.votes, approvals=e.approvals, rejections=e.rejections,
                    outcome=APPROVED if e.approved else REJECTED) if last and last.outcome == OPEN else None
    if voted is None:  # a reveal without its proposal (a log cut short): the reveal says enough
        voted = Proposal(quest=e.quest, leader=e.leader, team=e.team, votes=e.votes, approvals=e.approvals,
                         rejections=e.rejections, outcome=APPROVED if e.approved else REJECTED)
        proposals = game.proposals + (voted,)
    else:
        proposals = game.proposals[:-1] + (voted,)
    return replace(game, proposals=proposals, vote_track=e.vote_track,
                   excalibur_holder=game.excalibur_holder if e.approved else None)


def _missed(game: GamePicture, e: ProposalMissed) -> GamePicture:
    proposal = Proposal(quest=e.quest, leader=e.leader, outcome=MISSED)
    return replace(game, proposals=game.proposals + (proposal,), vote_track=e.vote_track)


def _resolved(game: GamePicture, e: QuestResolved) -> GamePicture:
    results = game.results[:e.quest - 1] + (QuestResult(e.successes, e.fails, e.failed),)
    return replace(game, results=results, excalibur_holder=None)


def _lady(game: GamePicture, e: LadyUsed) -> GamePicture:
    return replace(game, lady_holder=e.target)  # the Lady passes to the player she examined


def _ended(game: GamePicture, e: GameEnded) -> GamePicture:
    return replace(game, phase=Phase.ENDED, excalibur_holder=None,
                   ending=Ending(winner=e.winner, cause=e.cause, roles=e.roles, teams=e.teams))


_HANDLERS = {
    GameStarted: _started, PhaseOpened: _phase, TeamProposed: _proposed, VotesRevealed: _revealed,
    ProposalMissed: _missed, QuestResolved: _resolved, LadyUsed: _lady, GameEnded: _ended,
}

__all__ = ["APPROVED", "AUTO", "MISSED", "OPEN", "REJECTED", "Ending", "GamePicture", "Proposal", "QuestResult",
           "picture_of", "step"]
