"""Golden playthroughs: one seeded game with Lady, Excalibur and Lancelot, as every recipient
reads it, in each of the six languages. A change in narration shows up here in review.

Regenerate after an intended change: ``UPDATE_GOLDEN=1 python -m pytest tests/unit/test_golden.py``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from avalon.shared.narration.render import LOCALES, Context, Narrator, Recipient
from avalon.shared.protocol import INTERNAL_EVENTS, EventEnvelope, audience_model, event_body
from avalon.services.engine.rules import Lancelot, Options
from avalon.services.engine.simulate import random_game

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
OPTIONS = replace(Options(), lady=True, excalibur=True, lancelot=Lancelot.V1, last_word=True,
                  assassin_may_delegate=True)
SEED = 41
START = datetime(2026, 11, 30, 18, 0, tzinfo=timezone.utc)
NAMES = {"p1": "Ann", "p2": "Bảo", "p3": "Chloé", "p4": "Dmitri", "p5": "Eva", "p6": "Farid", "p7": "Gwen"}


def playthrough(locale: str) -> str:
    record = random_game(7, OPTIONS, SEED, timeout_rate=0.05, keep=True)
    narrator = Narrator()
    transcripts: dict[str, list[str]] = {"group": []} | {p: [] for p in NAMES}
    for seq, event in enumerate(record.events, 1):
        body = event_body(event)
        if body.type in INTERNAL_EVENTS:
            continue
        at = START + timedelta(minutes=seq)
        envelope = EventEnvelope(
            message_id=f"golden:{seq}", game_id="golden", seq=seq, occurred_at=at,
            audience=audience_model(event.audience), event=body,
            deadline_at=at + timedelta(seconds=body.timeout_seconds) if body.type == "phase_opened" else None)
        readers = ["group"] if event.audience.kind.value == "public" else list(event.audience.players)
        for reader in readers:
            recipient = Recipient(None if reader == "group" else reader, (locale,),
                                  None if reader == "group" else "Europe/Amsterdam")
            text = narrator.render_in(locale, envelope, recipient, "telegram", Context(NAMES)).text
            transcripts[reader].append(f"[{seq}] {text}")
    out = [f"# {record.state.winner.value} wins: {record.state.cause.value}"]
    for reader, lines in transcripts.items():
        out.append(f"\n===== {NAMES.get(reader, reader)} =====")
        out.extend(lines)
    return "\n".join(out) + "\n"


def test_the_golden_game_uses_lady_excalibur_and_lancelot():
    record = random_game(7, OPTIONS, SEED, timeout_rate=0.05, keep=True)
    kinds = {type(e).__name__ for e in record.events}
    assert {"LadyUsed", "ExcaliburUsed", "LoyaltyCardRevealed", "GameEnded"} <= kinds


@pytest.mark.parametrize("locale", LOCALES)
def test_the_golden_playthrough_reads_as_checked_in(locale):
    path = GOLDEN / f"playthrough.{locale}.txt"
    text = playthrough(locale)
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}; run with UPDATE_GOLDEN=1 once"
    assert text == path.read_text(encoding="utf-8")
