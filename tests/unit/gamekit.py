"""A small driver for scenario tests: a game in a few readable lines.

    g = Game(players=7, lady=True)          # options by keyword, preset via preset=
    g.propose(g.leader, team)                # by the current leader
    g.vote_all(True); g.play_all()           # everyone approves; every card a success
    g.refuse(CastVote(actor="p1", approve=True))  # asserts a rejection and no change
"""

from __future__ import annotations

from dataclasses import replace

from avalon.services.engine.rules import (
    Accepted,
    CastVote,
    CreateGame,
    Join,
    Options,
    PhaseTimedOut,
    PlayCard,
    ProposeTeam,
    StartGame,
    apply,
    new_game,
)
from avalon.shared.game.errors import Reason, Rejection
from avalon.shared.game.model import Card, Phase, Role, Team
from avalon.shared.game.numbers import quest_size


class Game:
    def __init__(self, players: int = 5, seed: int = 1, preset: str = "classic", start: bool = True,
                 **options) -> None:
        self.options = Options.preset_defaults(preset, **options)
        self.ids = [f"p{i + 1}" for i in range(players)]
        self.state = new_game()
        self.log: list = []
        self.last: list = []
        self.do(CreateGame(actor=self.ids[0], game_id="g1", seed=seed, options=self.options))
        for pid in self.ids[1:]:
            self.do(Join(actor=pid))
        if start:
            self.do(StartGame(actor=self.ids[0]))

    # -- sending commands ----------------------------------------------------

    def do(self, command) -> list:
        result = apply(self.state, command)
        assert isinstance(result, Accepted), f"{command} refused: {result.message}"
        self.state = result.state
        self.last = list(result.events)
        self.log.extend(self.last)
        return self.last

    def refuse(self, command, reason: Reason | None = None) -> Rejection:
        before = self.state
        result = apply(self.state, command)
        assert isinstance(result, Rejection), f"{command} was accepted"
        assert self.state is before
        if reason is not None:
            assert result.reason is reason, f"expected {reason}, got {result.reason}: {result.message}"
        return result

    def timeout(self) -> list:
        return self.do(PhaseTimedOut(phase_id=self.state.phase_id))

    # -- who is who --------------------------------------------------------

    @property
    def phase(self) -> Phase:
        return self.state.phase

    @property
    def leader(self) -> str:
        return self.state.players[self.state.leader]

    @property
    def seats(self) -> tuple[str, ...]:
        return self.state.players

    def role(self, player: str) -> Role:
        return self.state.roles[self.state.seat_of[player]]

    def who(self, role: Role) -> str:
        return next(p for p in self.seats if self.role(p) is role)

    def team_now(self, player: str) -> Team:
        return self.state.team_of(self.state.seat_of[player])

    def good(self) -> list[str]:
        return [p for p in self.seats if self.team_now(p) is Team.GOOD]

    def evil(self) -> list[str]:
        return [p for p in self.seats if self.team_now(p) is Team.EVIL]

    def size(self) -> int:
        return quest_size(len(self.seats), self.state.quest)

    def events(self, kind: type) -> list:
        return [e for e in self.log if isinstance(e, kind)]

    def last_of(self, kind: type):
        found = [e for e in self.last if isinstance(e, kind)]
        assert found, f"no {kind.__name__} in {self.last}"
        return found[-1]

    # -- a round in one line -------------------------------------------------

    def propose(self, team=None, excalibur=None) -> list:
        team = tuple(team) if team is not None else self.good_team()
        if self.options.excalibur and excalibur is None:
            excalibur = next(p for p in team if p != self.leader)
        return self.do(ProposeTeam(actor=self.leader, team=team, excalibur=excalibur))

    def good_team(self) -> tuple[str, ...]:
        """A team of good players only (the leader first if good)."""
        good = self.good()
        if self.leader in good:
            good.remove(self.leader)
            good.insert(0, self.leader)
        return tuple(good[: self.size()])

    def vote_all(self, approve=True) -> list:
        """``approve``: a bool for everyone, or a dict player -> bool (others approve)."""
        for p in self.seats:
            vote = approve.get(p, True) if isinstance(approve, dict) else approve
            if self.phase is not Phase.VOTE:
                break
            self.do(CastVote(actor=p, approve=vote))
        return self.last

    def play_all(self, cards: dict | None = None) -> list:
        """Every team member plays (success unless ``cards`` says otherwise)."""
        cards = cards or {}
        for seat in self.state.team:
            p = self.seats[seat]
            if self.phase is not Phase.QUEST:
                break
            self.do(PlayCard(actor=p, card=cards.get(p, Card.SUCCESS)))
        return self.last

    def win_quest(self) -> list:
        self.propose(self.good_team())
        self.vote_all(True)
        return self.play_all()

    def lose_quest(self) -> list:
        evil = self.evil()[0]
        good = [p for p in self.good() if p != evil]
        team = (evil, *good[: self.size() - 1])
        lead = self.leader
        if lead not in team and self.options.excalibur:
            pass
        self.propose(team)
        self.vote_all(True)
        fails = {p: Card.FAIL for p in self.evil() if p in team}
        return self.play_all(fails)

    def reject_proposal(self) -> list:
        self.propose(self.good_team())
        return self.vote_all(False)


def with_options(**overrides) -> Options:
    return replace(Options(), **overrides)
