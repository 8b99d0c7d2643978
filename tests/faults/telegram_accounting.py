"""What the engine's own event log says happened in the Telegram fault games, against what the
players pressed and what each chat received.

- moves: the lobby's commands (/newgame, the joins, /startgame), and every press the gateway
  answered as taken (``✅``; the leader's confirm or Excalibur answered without an alert), must
  have their effect in the log exactly once: that player's vote, card, team, Lady, Excalibur or
  shot in that phase. A second effect of the same kind by the same player in the same phase is a
  doubled move, whoever caused it (a press Telegram delivered again after a kill is sent again
  under a new command id: the engine must refuse it).
- events: every event of the log rendered for its reader (``tests/e2e/test_telegram_gateway_kill``
  renders them on its own) must be in that chat (the group, or the reader's private chat) at least
  once; copies beyond that are counted as duplicates. A private text found in a chat where it is
  not due is a leak.
- deadlines: a phase that ended by ``deadline_missed`` did so no earlier than the deadline its
  ``phase_opened`` announced and no later than that deadline (or the end of an engine outage that
  began before it was due) plus ``SLACK``.
"""

from __future__ import annotations

from collections import Counter

from tests.e2e.test_telegram_gateway_kill import expected_messages
from tests.faults.ledger import Tally

SLACK = 15.0  # seconds a timeout may come after its deadline (or after the engine was back)
#: Button data kind -> the move it makes ("t:<game>:<phase>:<kind>:<index>" for the targets).
TARGET_MOVES = {"x": "team", "e": "excalibur", "l": "lady", "a": "shot"}
#: The lobby's moves (made before the faults begin): /newgame, each Join (the host's is implied), /startgame.
LOBBY = {"lobby_opened": "open", "player_joined": "join", "game_started": "start"}


def press_move(press, player: str) -> tuple | None:
    """(move, player, phase) a press answered as taken must have caused, or None (not a move)."""
    if not press.move:
        return None
    kind, _, phase, *rest = press.data.split(":")
    move = {"v": "vote", "c": "card", "p": "team"}.get(kind) or (TARGET_MOVES.get(rest[0]) if kind == "t" else None)
    return (move, player, int(phase)) if move else None


def log_moves(log) -> Counter:
    """(move, player, phase) -> how many times the log applied it."""
    moves, phase_id, phase = Counter(), 0, None
    for envelope in log:
        e = envelope.event
        if e.type in LOBBY:
            moves[(LOBBY[e.type], getattr(e, "player", None) or getattr(e, "host", None), 0)] += 1
        elif e.type == "phase_opened":
            phase_id, phase = e.phase_id, e.phase.value
        elif e.type == "vote_cast":
            moves[("vote", e.player, phase_id)] += 1
        elif e.type == "card_played":
            moves[("card", e.player, phase_id)] += 1
        elif e.type == "team_proposed":
            moves[("team", e.leader, phase_id)] += 1
        elif e.type == "excalibur_used" or e.type == "quest_resolved" and phase == "excalibur" \
                and e.excalibur_target is None:  # sheathed: the quest resolves at once
            moves[("excalibur", e.holder if e.type == "excalibur_used" else e.excalibur_holder, phase_id)] += 1
        elif e.type == "lady_used":
            moves[("lady", e.holder, phase_id)] += 1
        elif e.type == "assassination_resolved":
            moves[("shot", e.shooter, phase_id)] += 1
    return moves


def expected(game, log) -> list[tuple[int, str]]:
    """(chat, text) for every message the log says is due: the group's and each private chat's."""
    names = {game.player(u): u.first_name for u in game.users}
    chats = {game.player(u): u.private_chat.id for u in game.users}
    return expected_messages(log, names, lambda reader: game.group.id if reader is None else chats[reader])


def received(game, fake) -> dict[int, list[str]]:
    """What the group and each player's private chat hold now (texts after their last edit)."""
    chats = [game.group.id, *(u.private_chat.id for u in game.users)]
    return {chat: [m.text for m in fake.messages(chat)] for chat in chats}


def missing(game, wanted, fake) -> list[tuple[int, str]]:
    got = received(game, fake)
    return [(chat, text) for chat, text in set(wanted) if not any(text in message for message in got[chat])]


class Accounting:
    def __init__(self, suite: str, faults: int, outages: list[tuple[float, float]]) -> None:
        self.tally = Tally(suite, faults=faults)
        self.outages = outages  # (start, end) wall-clock seconds of each engine outage
        self.problems: list[str] = []

    def game(self, game, log, presses, fake) -> None:
        t = self.tally
        t.games += 1
        if not log or log[-1].event.type != "game_ended":
            self.problems.append(f"{game.id}: no game_ended (last: {[e.event.type for e in log[-3:]]})")
        applied = log_moves(log)
        host = game.player(game.users[0])
        confirmed = {m for p in presses if (m := press_move(p, game.player(p.user)))}
        confirmed |= {("open", host, 0), ("start", None, 0)} | {("join", game.player(u), 0) for u in game.users}
        settings = sum(1 for p in presses if p.data.startswith("s:") and p.answer and p.answer.text == "✅")
        t.moves += len(confirmed) + settings
        lost = [m for m in confirmed if applied[m] == 0]
        doubled = [m for m, n in applied.items() if n > 1]
        changed = sum(1 for e in log if e.event.type == "options_changed")
        lost += ["settings"] * max(0, settings - changed)
        doubled += ["settings"] * max(0, changed - settings)
        t.moves_lost += len(lost)
        t.moves_doubled += len(doubled)
        if lost or doubled:
            self.problems.append(f"{game.id}: moves lost {lost[:5]}, doubled {doubled[:5]}")
        self._messages(game, log, fake)
        self._deadlines(game, log)

    def _messages(self, game, log, fake) -> None:
        t = self.tally
        wanted, got = expected(game, log), received(game, fake)
        due = Counter(wanted)
        t.events += len(wanted)
        lost = missing(game, wanted, fake)
        t.events_lost += sum(due[m] for m in lost)
        if lost:
            self.problems.append(f"{game.id}: {len(lost)} messages never arrived, e.g. {lost[:2]}")
        t.duplicates += sum(max(0, sum(m.count(text) for m in got[chat]) - n) for (chat, text), n in due.items())
        blocks = {chat: [f"\n\n{m}\n\n" for m in messages] for chat, messages in got.items()}
        private = {(chat, text) for chat, text in due if chat != game.group.id}
        for chat, text in private:  # a whole private message (messages may be merged) in another chat
            for other, messages in blocks.items():
                if other != chat and (other, text) not in due and any(f"\n\n{text}\n\n" in m for m in messages):
                    t.leaks += 1
                    self.problems.append(f"{game.id}: {text[:60]!r} for chat {chat} seen in chat {other}")

    def _deadlines(self, game, log) -> None:
        t = self.tally
        announced = {e.event.phase_id: e.deadline_at for e in log if e.event.type == "phase_opened"}
        missed = [e for e in log if e.event.type == "deadline_missed"]
        for envelope in missed:
            t.deadlines += 1
            due = announced[envelope.event.phase_id].timestamp()
            at = envelope.occurred_at.timestamp()
            late = max([due] + [end for start, end in self.outages if start <= due + 5]) + SLACK
            if not due <= at <= late:
                t.deadlines_missed += 1
                self.problems.append(f"{game.id} phase {envelope.event.phase_id}: due {due:.1f}, timed out at "
                                     f"{at:.1f} (at the latest {late:.1f})")
        if game.sleeper is not None and game.slept_phase not in {e.event.phase_id for e in missed}:
            self.problems.append(f"{game.id}: the vote its sleeper slept through (phase {game.slept_phase}) "
                                 "did not time out")
