"""``view(state, viewer)``: exactly what one player may know now.

``viewer=None`` is the public view: what the whole table knows. A player's view
adds their own role, their night knowledge, their own vote and card in the open
phase, their Lady results and Excalibur peeks, and the shooter when the
conference is theirs to see. At the end every role is revealed to everyone.
"""

from __future__ import annotations

from dataclasses import dataclass

from .knowledge import night_knowledge
from .legal import Legal, legal_commands, pending_players
from .phases import PHASES
from avalon.shared.game.model import Card, Conference, Knowledge, MissedRule, Phase, Role, Team, WinCause
from avalon.shared.game.options import Options
from .state import GameState, QuestResult, VoteRecord
from avalon.shared.game.numbers import fails_needed, quest_size


@dataclass(frozen=True, slots=True)
class View:
    game_id: str
    viewer: str | None
    phase: Phase | None
    phase_id: int
    version: int
    options: Options
    host: str
    players: tuple[str, ...]  # seat order once the game started
    leader: str | None
    quest: int
    vote_track: int
    quest_sizes: tuple[int, ...]
    fails_needed: tuple[int, ...]
    quest_results: tuple[QuestResult, ...]
    vote_log: tuple[VoteRecord, ...]
    team: tuple[str, ...]
    excalibur_holder: str | None
    waiting_for: tuple[str, ...]
    voted: tuple[str, ...]  # who has voted in the open vote, not how
    played: tuple[str, ...]  # who has played a card in the open quest, not what
    roles_in_play: tuple[Role, ...]
    lady_holder: str | None
    lady_log: tuple[tuple[str, str], ...]
    loyalty_draws: tuple[tuple[int, bool], ...]
    loyalty_schedule: tuple[bool, ...] | None  # Lancelot variant 2, public from the start
    accused: str | None
    timeout_seconds: int
    missed_rule: MissedRule  # what a missed deadline does in the open phase
    winner: Team | None
    cause: WinCause | None
    # private to the viewer
    role: Role | None = None
    allegiance: Team | None = None
    knowledge: tuple[tuple[str, Knowledge], ...] = ()
    my_vote: bool | None = None
    my_card: Card | None = None
    lady_results: tuple[tuple[str, Team], ...] = ()
    excalibur_peeks: tuple[tuple[str, Card], ...] = ()
    shooter: str | None = None
    conference: tuple[str, ...] = ()  # the evil players, once the conference is open to the viewer
    revealed: tuple[tuple[str, Role], ...] = ()  # every role, at the end
    legal: tuple[Legal, ...] = ()


def view(s: GameState, viewer: str | None) -> View:
    names = s.players
    n = len(names)
    started = s.started
    seat = s.seat_of.get(viewer) if viewer is not None else None
    in_vote = s.phase is Phase.VOTE
    in_quest = s.phase in (Phase.QUEST, Phase.EXCALIBUR)
    secret_waiting = s.phase is not None and PHASES[s.phase].actors_hidden(s)
    public = dict(
        game_id=s.game_id,
        viewer=viewer,
        phase=s.phase,
        phase_id=s.phase_id,
        version=s.seq,
        options=s.options,
        host=s.host,
        players=names,
        leader=names[s.leader] if started else None,
        quest=s.quest,
        vote_track=s.vote_track,
        quest_sizes=tuple(quest_size(n, q) for q in range(1, 6)) if started else (),
        fails_needed=tuple(fails_needed(n, q) for q in range(1, 6)) if started else (),
        quest_results=s.quest_results,
        vote_log=s.vote_log,
        team=tuple(names[i] for i in s.team),
        excalibur_holder=names[s.excalibur] if s.excalibur >= 0 else None,
        waiting_for=() if secret_waiting else pending_players(s),
        voted=tuple(names[i] for i in sorted(s.votes)) if in_vote else (),
        played=tuple(names[i] for i in sorted(s.cards)) if in_quest else (),
        roles_in_play=tuple(sorted(s.roles, key=_role_order)),
        lady_holder=names[s.lady_holder] if s.lady_holder >= 0 else None,
        lady_log=s.lady_log,
        loyalty_draws=s.loyalty_draws,
        loyalty_schedule=s.lancelot_deck if s.options.lancelot.value == "2" and started else None,
        accused=names[s.accused] if s.accused >= 0 else None,
        timeout_seconds=s.timeout_seconds,
        missed_rule=s.missed_rule,
        winner=s.winner,
        cause=s.cause,
    )
    if s.phase is Phase.ENDED:
        public["revealed"] = tuple(zip(names, s.roles))
    if seat is None or not started:
        return View(**public, legal=legal_commands(s, viewer))
    evil_now = s.team_of(seat) is Team.EVIL
    sees_conference = s.phase in (Phase.ASSASSINATION, Phase.LAST_WORD, Phase.ENDED) and (
        evil_now or s.options.conference is Conference.PUBLIC or s.phase is Phase.ENDED)
    return View(
        **public,
        role=s.roles[seat],
        allegiance=s.team_of(seat),
        knowledge=tuple((names[o], k) for o, k in night_knowledge(s.roles, seat, s.options)),
        my_vote=s.votes.get(seat) if in_vote else None,
        my_card=s.cards.get(seat) if in_quest else None,
        lady_results=tuple((t, team) for h, t, team in s.lady_results if h == viewer),
        excalibur_peeks=tuple((t, card) for h, t, card in s.excalibur_log if h == viewer),
        shooter=names[s.shooter] if sees_conference else None,
        conference=tuple(names[i] for i in s.evil_seats()) if sees_conference else (),
        legal=legal_commands(s, viewer),
    )


_ROLE_ORDER = {r: i for i, r in enumerate(Role)}


def _role_order(role: Role) -> int:
    return _ROLE_ORDER[role]
