"""What the mail fault tests count, from the engine's own records: the event log and the
processed command ids (services/engine/store.py), against what the players sent and received.

- moves: each reply the SMTP server accepted is one command (its id derived from the Message-ID,
  services/email_gateway/inbound.py key_id); lost = never processed, or accepted with no event it
  caused; doubled = one player's move twice in one phase.
- mail: what each player should have read = the event log, rendered here for them as the email
  channel renders it; lost = a fragment due n times found fewer times in their mail; duplicates =
  found more often.
- deadlines: a phase ended by its timeout at or after the deadline it announced and no later than
  the deadline + the outages around it + slack; a phase left open well past its deadline is missed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, text

from avalon.services.email_gateway.inbound import key_id
from avalon.shared.narration.render import Context, Narrator, Recipient
from avalon.shared.protocol import EventEnvelope

#: never a mail of their own (README: "X has voted" is never a mail)
QUIET = {"player_voted", "player_played_card", "profile_updated"}
#: a player's move, one per player per phase: the event type -> the field naming the player
MOVES = {"vote_cast": "player", "card_played": "player", "team_proposed": "leader",
         "assassination_resolved": "shooter", "player_joined": "player"}
PREFIX = "mail:"


@dataclass
class Moves:
    moves: int = 0
    lost: int = 0
    doubled: int = 0
    rejected: int = 0  # processed, refused by the engine (a phase that ended meanwhile): not lost
    examples: list[str] | None = None


async def count_moves(store, sent, logs: dict[str, list[EventEnvelope]]) -> Moves:
    """``sent``: every reply the SMTP server accepted (Sent); ``logs``: each game's full event log."""
    ids = {f"{key_id(s.message_id)}:0": s for s in sent}
    async with store.engine.connect() as conn:
        query = text("SELECT message_id, outcome FROM processed_commands WHERE message_id IN :ids")
        rows = await conn.execute(query.bindparams(bindparam("ids", expanding=True)), {"ids": list(ids)})
        outcome = dict(rows.all())
    caused = {e.caused_by for log in logs.values() for e in log}
    out = Moves(moves=len(ids), examples=[])
    for command_id, s in ids.items():
        if command_id not in outcome or outcome[command_id] == "accepted" and command_id not in caused:
            out.lost += 1
            out.examples.append(f"{s.player}: {s.body!r} ({outcome.get(command_id, 'never processed')})")
        elif outcome[command_id] != "accepted":
            out.rejected += 1
    for log in logs.values():
        phase, seen = 0, Counter()
        for envelope in log:
            e = envelope.event
            if e.type == "phase_opened":
                phase = e.phase_id
            if e.type in MOVES:
                seen[(e.type, phase, getattr(e, MOVES[e.type]))] += 1
        doubled = {key: n for key, n in seen.items() if n > 1}
        out.doubled += sum(n - 1 for n in doubled.values())
        out.examples += [f"doubled: {key} x{n}" for key, n in doubled.items()]
    return out


def readers(envelope: EventEnvelope) -> list[str]:
    """The mail players who read this event (docs/protocol.md readers; README: reminders only to
    those who still have to act, "X has voted" never a mail, choices only to their player)."""
    e = envelope.event
    if e.type in QUIET:
        return []
    players = [p for p in (envelope.readers or envelope.audience.players) if p.startswith(PREFIX)]
    if e.type == "phase_reminder":
        players = [p for p in players if p in set(e.waiting_for)]
    if e.type == "choices_offered":
        players = [p for p in players if p == e.player] if e.choices else []
    return players


def expected_mail(game_id: str, log: list[EventEnvelope], names: dict[str, str]) -> Counter:
    """(player, text) -> how many times the game's events put that text in the player's mail."""
    narrator, context, out = Narrator(), Context(names, {"title": game_id}), Counter()
    for envelope in log:
        for player in readers(envelope):
            rendered = narrator.render(envelope, Recipient(player, ("en",), None), "email", context).text.strip()
            if rendered:
                out[(player, rendered)] += 1
    return out


def compare_mail(expected: Counter, received: dict[str, list[str]]) -> tuple[int, int, list[str]]:
    """(lost, duplicates, examples of what was lost); ``received``: player -> the texts of their mails."""
    lost = duplicates = 0
    examples = []
    for (player, fragment), due in expected.items():
        found = sum(body.count(fragment) for body in received.get(player, []))
        if found < due:
            lost += due - found
            examples.append(f"{player} got {found} of {due}: {fragment[:160]!r}")
        duplicates += max(0, found - due)
    return lost, duplicates, examples


def check_deadlines(log: list[EventEnvelope], outages: list[tuple[str, float, float]],
                    slack: float = 10.0) -> tuple[int, list[str]]:
    """(phases that ended by their deadline, what was wrong: too early, too late or never)."""
    opened: dict[int, EventEnvelope] = {}
    ended: dict[int, datetime] = {}
    timed_out: dict[int, datetime] = {}
    current = None
    for envelope in log:
        e = envelope.event
        if current is not None and e.type in ("phase_opened", "game_ended") and current not in ended:
            ended[current] = envelope.occurred_at
        if e.type == "phase_opened":
            current = e.phase_id
            opened[current] = envelope
        cause = envelope.caused_by or ""
        if cause.startswith("timeout:"):
            timed_out.setdefault(int(cause.rsplit(":", 1)[1]), envelope.occurred_at)
    wrong = []
    for phase, envelope in opened.items():
        deadline = envelope.deadline_at
        if deadline is None:
            continue
        end = timed_out.get(phase) or ended.get(phase)
        if end is None:
            continue
        down = sum(up - down for _, down, up in outages
                   if down < end.timestamp() and up > deadline.timestamp() - 30)
        latest = deadline + timedelta(seconds=slack + down)
        if phase in timed_out and not deadline <= timed_out[phase] <= latest:
            wrong.append(f"phase {phase} timed out at {timed_out[phase]:%T.%f}, deadline {deadline:%T.%f}")
        elif phase not in timed_out and end > latest:
            wrong.append(f"phase {phase} ran to {end:%T.%f}, past its deadline {deadline:%T.%f}")
    return len(timed_out), wrong
