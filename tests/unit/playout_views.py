"""What each viewer may see and do at a moment of a game, from the checker's own model.

Mixed into ``EventChecker``: ``self`` holds the model built from the events so
far (seats, roles, allegiance after any Lancelot switch, night knowledge from
``playout_rules``, the open vote and quest cards, Lady results, Excalibur peeks).
"""

from __future__ import annotations

from avalon.services.engine.rules import view
from avalon.shared.game.model import CommandKind, Team
from avalon.shared.game.model import Phase as P

from . import playout_rules as rules

K = CommandKind


class ViewChecks:
    def check_views(self, state, where: str) -> None:
        ended = self.ended is not None
        everyone = tuple((p, self.role[p]) for p in self.seats)
        leader = self.next_seat(self.leader) if self.phase is P.LADY else self.leader
        vote_log = [(r.quest, r.leader, r.team, r.approvals, r.rejections, r.votes, r.approved)
                    for r in state.vote_log]
        assert vote_log == self.vote_log, f"{where}: state vote log differs from VotesRevealed"
        for viewer in (None, "a-stranger", *self.seats):
            v = view(state, viewer)
            at = f"{where}, view of {viewer}"
            assert v.phase is self.phase and v.players == self.seats and v.leader == leader, \
                f"{at}: phase {v.phase}/{self.phase}, leader {v.leader}/{leader}"
            if not ended:
                assert v.missed_rule is self.announced_rule, \
                    f"{at}: the view shows missed rule {v.missed_rule}, the phase announced {self.announced_rule}"
            if ended:
                assert len(v.revealed) == self.n and set(v.revealed) == set(everyone), f"{at}: revealed {v.revealed}"
            else:
                assert v.revealed == (), f"{at}: roles revealed before the end: {v.revealed}"
            assert [(r.quest, r.team, r.successes, r.fails, r.failed) for r in v.quest_results] == self.quest_log
            if self.o.anonymous_votes:
                assert all(r.votes is None for r in v.vote_log), f"{at}: anonymous votes shown by name"
            if self.phase is P.ASSASSINATION and not self.forum and not ended:
                assert v.waiting_for == () or (viewer is not None and v.waiting_for == (self.shooter,)
                                               and self.team_now(viewer) is Team.EVIL), \
                    f"{at}: private conference shows the shooter {v.waiting_for}"
            self.check_buttons(viewer, v.legal, at)
            if viewer not in self.role:
                assert (v.role, v.allegiance, v.knowledge, v.my_vote, v.my_card) == (None, None, (), None, None), \
                    f"{at}: a non-player sees private facts: {v.role} {v.allegiance} {v.knowledge} {v.my_vote} {v.my_card}"
                assert (v.lady_results, v.excalibur_peeks, v.shooter, v.conference) == ((), (), None, ()), \
                    f"{at}: a non-player sees {v.lady_results} {v.excalibur_peeks} {v.shooter} {v.conference}"
                continue
            assert v.role is self.role[viewer] and v.allegiance is self.team_now(viewer), \
                f"{at}: role {v.role}/{self.role[viewer]}, allegiance {v.allegiance}/{self.team_now(viewer)}"
            assert len(set(v.knowledge)) == len(v.knowledge) and frozenset(v.knowledge) == self.night[viewer], \
                f"{at} ({self.role[viewer].value}): knows {sorted(v.knowledge)}, RULES give {sorted(self.night[viewer])}"
            lady = tuple((t, team) for h, t, team in self.lady_results if h == viewer)
            assert v.lady_results == lady, f"{at}: lady results {v.lady_results}, obtained {lady}"
            peeks = tuple((t, c) for h, t, c in self.peeks if h == viewer)
            assert v.excalibur_peeks == peeks, f"{at}: Excalibur peeks {v.excalibur_peeks}, own {peeks}"
            my_vote = self.votes.get(viewer) if self.phase is P.VOTE else None
            assert v.my_vote == my_vote, f"{at}: my_vote {v.my_vote}, own vote {my_vote}"
            my_card = self.cards.get(viewer) if self.phase in (P.QUEST, P.EXCALIBUR) else None
            assert v.my_card == my_card, f"{at}: my_card {v.my_card}, own card {my_card}"
            if not ended and not self.forum and self.team_now(viewer) is Team.GOOD:
                assert v.shooter is None and v.conference == (), \
                    f"{at}: a good player sees the private conference: {v.shooter} {v.conference}"

    def check_buttons(self, viewer: str | None, legal, at: str) -> None:
        """The commands offered to ``viewer`` are exactly the ones the rules give them now."""
        offered = {c.kind: c for c in legal if c.kind is not K.CANCEL_GAME}
        assert len(offered) == len([c for c in legal if c.kind is not K.CANCEL_GAME]), f"{at}: {legal}"
        want: dict = {}
        phase, p = self.phase, viewer
        if p not in self.role or self.ended is not None:
            pass
        elif phase is P.PROPOSAL and p == self.leader:
            want[K.PROPOSE_TEAM] = (set(self.seats), rules.QUEST_TEAM[self.n][self.quest - 1])
        elif phase is P.VOTE and p not in self.votes:
            want[K.CAST_VOTE] = None
        elif phase is P.QUEST and p in self.team and p not in self.cards:
            want[K.PLAY_CARD] = self.allowed(p)
        elif phase is P.EXCALIBUR and p == self.sword:
            want[K.USE_EXCALIBUR] = set(self.team) - {p}
        elif phase is P.LADY and p == self.lady_holder:
            want[K.USE_LADY] = set(self.seats) - self.lady_past
        elif phase in (P.ASSASSINATION, P.LAST_WORD) and self.team_now(p) is Team.EVIL:
            want[K.CONFER] = None
            if phase is P.ASSASSINATION and p == self.shooter:
                good = {q for q in self.seats if self.team_now(q) is Team.GOOD}
                want[K.ACCUSE if self.o.last_word and self.accused is None else K.ASSASSINATE] = good
                others = self.evil_now() - {p}
                if self.o.assassin_may_delegate and not self.handed and self.accused is None and others:
                    want[K.HAND_SHOT] = others
        if phase is P.LAST_WORD and p == self.accused and self.ended is None:
            want[K.SPEAK_LAST_WORD] = None
        assert set(offered) == set(want), \
            f"{at} in {phase}: offered {sorted(k.value for k in offered)}, rules give {sorted(k.value for k in want)}"
        for kind, detail in want.items():
            c = offered[kind]
            if kind is K.PROPOSE_TEAM:
                assert (set(c.targets), c.count, c.excalibur) == (*detail, self.o.excalibur), f"{at}: {c}"
            elif kind is K.PLAY_CARD:
                assert set(c.cards) == detail, f"{at}: cards {c.cards}, allowed {detail}"
            elif detail is not None:
                assert set(c.targets) == detail and len(c.targets) == len(detail), \
                    f"{at}: {kind.value} targets {sorted(c.targets)}, rules give {sorted(detail)}"
