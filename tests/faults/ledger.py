"""What the fault suite counted, added up across its tests and printed at the end of the run.

Each fault test asserts its own zeros (no move lost or doubled, no event lost, no leak, every
deadline kept); it also records what it injected and counted here, so that the run ends with one
table a person can quote: games, faults, moves, duplicates.

    record(Tally("engine SIGKILL", games=50, faults=4, moves=2100, events=9000, duplicates=31))
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

#: One JSON line per tally; tests/conftest.py names the file (for every xdist worker alike) and
#: prints the sum when the run ends.
LEDGER = Path(os.environ.get("AVALON_FAULT_LEDGER", f"/tmp/avalon-fault-ledger-{os.getpid()}.jsonl"))


@dataclass
class Tally:
    suite: str  # what was injected, e.g. "engine SIGKILL"
    games: int = 0  # games played to their end under the faults
    faults: int = 0  # faults injected (kills, restarts, outages)
    moves: int = 0  # player commands sent and confirmed (publish confirmed / answered)
    moves_lost: int = 0  # confirmed, never applied
    moves_doubled: int = 0  # one move applied twice (same player, same phase, same kind)
    events: int = 0  # (event, recipient) deliveries expected from the engine's event log
    events_lost: int = 0  # expected, never delivered
    duplicates: int = 0  # delivered more than once (allowed: at least once), counted
    deadlines: int = 0  # phases that ended by their deadline, checked
    deadlines_missed: int = 0  # a timeout before its deadline, or long after it
    leaks: int = 0  # private facts seen by someone else

    def line(self) -> str:
        return ", ".join(f"{f.name} {getattr(self, f.name)}" for f in fields(self) if f.name != "suite")


def record(tally: Tally) -> None:
    with LEDGER.open("a") as out:
        out.write(json.dumps(asdict(tally)) + "\n")


def totals() -> list[Tally]:
    """Every tally recorded in this run, then their sum (suite "all")."""
    if not LEDGER.exists():
        return []
    rows = [Tally(**json.loads(line)) for line in LEDGER.read_text().splitlines() if line.strip()]
    total = Tally("all")
    for row in rows:
        for f in fields(Tally):
            if f.name != "suite":
                setattr(total, f.name, getattr(total, f.name) + getattr(row, f.name))
    return rows + [total] if rows else []
