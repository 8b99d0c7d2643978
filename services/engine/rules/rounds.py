"""A round: proposal, vote, quest cards, Excalibur, Lady of the Lake."""

from __future__ import annotations

from avalon.shared.game import commands as cmd
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason, Rejection, reject
from .flow import Tx, after_lady, after_quest, end_game, open_phase
from avalon.shared.game.model import Card, Hammer, MissedVote, Phase, Team, WinCause
from avalon.shared.game.numbers import PROPOSALS_PER_QUEST, fails_needed, quest_size


def _seat(tx: Tx, player: str) -> int | Rejection:
    seat = tx.s.seat_of.get(player)
    return reject(Reason.NOT_A_PLAYER) if seat is None else seat


def propose(tx: Tx, c: cmd.ProposeTeam) -> Rejection | None:
    s = tx.s
    seat = _seat(tx, c.actor)
    if isinstance(seat, Rejection):
        return seat
    if seat != s.leader:
        return reject(Reason.NOT_YOUR_TURN)
    seat_of = s.seat_of
    for p in c.team:
        if p not in seat_of:
            return reject(Reason.UNKNOWN_PLAYER, player=p)
    if len(set(c.team)) != len(c.team):
        return reject(Reason.DUPLICATE_PLAYER)
    size = quest_size(len(s.players), s.quest)
    if len(c.team) != size:
        return reject(Reason.WRONG_TEAM_SIZE, quest=s.quest, size=size, picked=len(c.team))
    if s.options.excalibur:
        if c.excalibur is None:
            return reject(Reason.EXCALIBUR_REQUIRED)
        if c.excalibur not in c.team or c.excalibur == c.actor:
            return reject(Reason.EXCALIBUR_INVALID_HOLDER)
    elif c.excalibur is not None:
        return reject(Reason.EXCALIBUR_NOT_IN_PLAY)
    auto = s.is_auto_approved()
    tx.emit(ev.TeamProposed(quest=s.quest, leader=c.actor, team=tuple(c.team),
                            excalibur=c.excalibur, auto_approved=auto))
    open_phase(tx, Phase.QUEST if auto else Phase.VOTE)
    return None


def vote(tx: Tx, c: cmd.CastVote) -> Rejection | None:
    s = tx.s
    seat = _seat(tx, c.actor)
    if isinstance(seat, Rejection):
        return seat
    if seat in s.votes:
        return reject(Reason.ALREADY_ACTED)
    tx.emit(ev.VoteCast(audience=ev.Audience.to(c.actor), player=c.actor, approve=bool(c.approve)))
    tx.emit(ev.PlayerVoted(player=c.actor))
    if s.options.close_early and len(tx.s.votes) == len(s.players):
        resolve_vote(tx)
    return None


def resolve_vote(tx: Tx) -> None:
    s = tx.s
    votes = s.votes
    approvals = sum(1 for v in votes.values() if v)
    rejections = len(votes) - approvals
    if s.options.missed_vote is MissedVote.REJECT:
        approved = approvals * 2 > len(s.players)  # a silent voter rejects
    else:
        approved = approvals > rejections  # majority of the votes cast
    players = s.players
    track = s.vote_track if approved else s.vote_track + 1
    tx.emit(ev.VotesRevealed(
        quest=s.quest,
        leader=players[s.leader],
        team=tx.names(s.team),
        approvals=approvals,
        rejections=rejections,
        votes=None if s.options.anonymous_votes else tuple((players[i], votes[i]) for i in sorted(votes)),
        not_voted=tuple(p for i, p in enumerate(players) if i not in votes),
        approved=approved,
        vote_track=track,
    ))
    if approved:
        open_phase(tx, Phase.QUEST)
    else:
        next_proposal(tx)


def next_proposal(tx: Tx) -> None:
    """After a rejected (or missed) proposal: the hammer, or the next leader."""
    s = tx.s
    if s.options.hammer is not Hammer.ONLINE and s.vote_track >= PROPOSALS_PER_QUEST:
        end_game(tx, Team.EVIL, WinCause.HAMMER)
    else:
        open_phase(tx, Phase.PROPOSAL, (s.leader + 1) % len(s.players))


def play_card(tx: Tx, c: cmd.PlayCard) -> Rejection | None:
    s = tx.s
    seat = _seat(tx, c.actor)
    if isinstance(seat, Rejection):
        return seat
    if seat not in s.team:
        return reject(Reason.NOT_YOUR_TURN)
    if seat in s.cards:
        return reject(Reason.ALREADY_ACTED)
    card = Card(c.card)
    allowed = s.allowed_cards(seat)
    if card not in allowed:
        return reject(Reason.CARD_NOT_ALLOWED, card=card, allowed=allowed[0])
    tx.emit(ev.CardPlayed(audience=ev.Audience.to(c.actor), player=c.actor, card=card))
    tx.emit(ev.PlayerPlayedCard(player=c.actor))
    if s.options.close_early and len(tx.s.cards) == len(s.team):
        after_cards(tx)
    return None


def after_cards(tx: Tx) -> None:
    if tx.s.excalibur >= 0:
        open_phase(tx, Phase.EXCALIBUR)
    else:
        resolve_quest(tx, None)


def use_excalibur(tx: Tx, c: cmd.UseExcalibur) -> Rejection | None:
    s = tx.s
    seat = _seat(tx, c.actor)
    if isinstance(seat, Rejection):
        return seat
    if seat != s.excalibur:
        return reject(Reason.NOT_YOUR_TURN)
    if c.target is None:
        resolve_quest(tx, None)
        return None
    target = s.seat_of.get(c.target)
    if target is None or target == seat or target not in s.team:
        return reject(Reason.EXCALIBUR_INVALID_TARGET)
    tx.emit(ev.ExcaliburUsed(audience=ev.Audience.to(c.actor), holder=c.actor, target=c.target,
                             original=s.cards[target]))
    resolve_quest(tx, target)
    return None


def resolve_quest(tx: Tx, excalibur_target: int | None) -> None:
    s = tx.s
    fails = sum(1 for card in s.cards.values() if card is Card.FAIL)
    n = len(s.players)
    tx.emit(ev.QuestResolved(
        quest=s.quest,
        team=tx.names(s.team),
        successes=len(s.team) - fails,
        fails=fails,
        failed=fails >= fails_needed(n, s.quest),
        excalibur_holder=tx.name(s.excalibur) if s.excalibur >= 0 else None,
        excalibur_target=tx.name(excalibur_target) if excalibur_target is not None else None,
    ))
    after_quest(tx)


def use_lady(tx: Tx, c: cmd.UseLady) -> Rejection | None:
    s = tx.s
    seat = _seat(tx, c.actor)
    if isinstance(seat, Rejection):
        return seat
    if seat != s.lady_holder:
        return reject(Reason.NOT_YOUR_TURN)
    target = s.seat_of.get(c.target)
    if target is None or target not in s.lady_targets():
        return reject(Reason.LADY_INVALID_TARGET)
    loyalty = s.team_of(target)  # as of now: a switched Lancelot shows his new side
    tx.emit(ev.LadyResult(audience=ev.Audience.to(c.actor), holder=c.actor, target=c.target, loyalty=loyalty))
    tx.emit(ev.LadyUsed(holder=c.actor, target=c.target))
    after_lady(tx)
    return None
