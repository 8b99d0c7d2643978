"""After three successful quests: the evil conference, the house rules, the shot."""

from __future__ import annotations

import unicodedata

from avalon.shared.game import commands as cmd
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason, Rejection, reject
from .flow import Tx, conference_audience, end_game, open_phase
from avalon.shared.game.model import Phase, Role, Team, WinCause

MAX_TEXT = 1000


def _evil_seat(tx: Tx, player: str) -> int | Rejection:
    s = tx.s
    seat = s.seat_of.get(player)
    if seat is None:
        return reject(Reason.NOT_A_PLAYER)
    if s.team_of(seat) is not Team.EVIL:
        return reject(Reason.NOT_EVIL)
    return seat


def _text(text: str) -> str | Rejection:
    text = (text or "").strip()
    if not any(unicodedata.category(ch)[0] not in "CZ" for ch in text):
        return reject(Reason.EMPTY_MESSAGE)  # nothing a reader would see: spaces, controls, RTL or zero-width marks
    if len(text) > MAX_TEXT:
        return reject(Reason.MESSAGE_TOO_LONG, max=MAX_TEXT)
    return text


def confer(tx: Tx, c: cmd.Confer) -> Rejection | None:
    seat = _evil_seat(tx, c.actor)
    if isinstance(seat, Rejection):
        return seat
    text = _text(c.text)
    if isinstance(text, Rejection):
        return text
    tx.emit(ev.ConferenceMessage(audience=conference_audience(tx.s), sender=c.actor, text=text))
    return None


def _shooter_target(tx: Tx, actor: str, target: str) -> int | Rejection:
    s = tx.s
    seat = s.seat_of.get(actor)
    if seat is None:
        return reject(Reason.NOT_A_PLAYER)
    if seat != s.shooter:
        return reject(Reason.NOT_YOUR_TURN)
    aim = s.seat_of.get(target)
    if aim is None:
        return reject(Reason.UNKNOWN_PLAYER, player=target)
    if aim == seat or s.team_of(aim) is Team.EVIL:
        return reject(Reason.INVALID_TARGET)  # the shot names one of the good players (fa)
    return aim


def hand_shot(tx: Tx, c: cmd.HandShot) -> Rejection | None:
    s = tx.s
    if not s.options.assassin_may_delegate:
        return reject(Reason.HOUSE_RULE_OFF)
    seat = s.seat_of.get(c.actor)
    if seat is None:
        return reject(Reason.NOT_A_PLAYER)
    if seat != s.shooter:
        return reject(Reason.NOT_YOUR_TURN)
    if s.shot_handed or s.accused >= 0:
        return reject(Reason.SHOT_ALREADY_HANDED)
    to = s.seat_of.get(c.to)
    if to is None or to == seat or s.team_of(to) is not Team.EVIL:
        return reject(Reason.INVALID_TARGET)
    tx.emit(ev.ShotHanded(audience=conference_audience(s), by=c.actor, to=c.to))
    return None


def accuse(tx: Tx, c: cmd.Accuse) -> Rejection | None:
    s = tx.s
    if not s.options.last_word:
        return reject(Reason.HOUSE_RULE_OFF)
    aim = _shooter_target(tx, c.actor, c.target)
    if isinstance(aim, Rejection):
        return aim
    if s.accused >= 0:
        return reject(Reason.ALREADY_ACTED)
    tx.emit(ev.MerlinAccused(shooter=c.actor, target=c.target))
    open_phase(tx, Phase.LAST_WORD)
    return None


def speak_last_word(tx: Tx, c: cmd.SpeakLastWord) -> Rejection | None:
    s = tx.s
    seat = s.seat_of.get(c.actor)
    if seat is None:
        return reject(Reason.NOT_A_PLAYER)
    if seat != s.accused:
        return reject(Reason.NOT_YOUR_TURN)
    text = _text(c.text)
    if isinstance(text, Rejection):
        return text
    tx.emit(ev.LastWordSpoken(player=c.actor, text=text))
    open_phase(tx, Phase.ASSASSINATION)  # the final shot, at anyone
    return None


def assassinate(tx: Tx, c: cmd.Assassinate) -> Rejection | None:
    s = tx.s
    aim = _shooter_target(tx, c.actor, c.target)
    if isinstance(aim, Rejection):
        return aim
    if s.options.last_word and s.accused < 0:
        return reject(Reason.WRONG_PHASE, phase=Phase.ASSASSINATION)
    shoot(tx, aim)
    return None


def shoot(tx: Tx, aim: int) -> None:
    s = tx.s
    hit = s.roles[aim] is Role.MERLIN
    tx.emit(ev.AssassinationResolved(shooter=tx.name(s.shooter), target=tx.name(aim), hit=hit))
    if hit:
        end_game(tx, Team.EVIL, WinCause.MERLIN_ASSASSINATED)
    else:
        end_game(tx, Team.GOOD, WinCause.ASSASSIN_MISSED)
