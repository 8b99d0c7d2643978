"""A missed deadline: the open phase resolves by its rule in the phase table (docs/rules.md section 7)."""

from __future__ import annotations

from avalon.shared.game import commands as cmd
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Rejection
from .flow import Tx


def timed_out(tx: Tx, c: cmd.PhaseTimedOut) -> Rejection | None:
    s = tx.s
    rules = tx.phases[s.phase]
    if c.phase_id != s.phase_id or rules.on_timeout is None:
        return None  # stale (that phase is already over), or a phase without a deadline: nothing changes
    missing = rules.actors(s, s.leader)
    if missing:  # a vote or a quest everyone has acted in closes without a missed deadline
        tx.emit(ev.DeadlineMissed(phase=s.phase, phase_id=s.phase_id, missing=tx.names(missing),
                                  rule=s.missed_rule))
    rules.on_timeout(tx, missing)
    return None
