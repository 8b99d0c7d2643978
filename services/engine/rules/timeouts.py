"""A missed deadline: the open phase resolves by its rule in the phase table (docs/rules.md section 7)."""

from __future__ import annotations

from avalon.shared.game import commands as cmd
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Rejection
from .flow import Tx
from .table import open_absent_seats


def timed_out(tx: Tx, c: cmd.PhaseTimedOut) -> Rejection | None:
    s = tx.s
    rules = tx.phases[s.phase]
    if c.phase_id != s.phase_id or rules.on_timeout is None or s.paused:
        return None  # stale (that phase is already over), a phase without a deadline, or paused: nothing changes
    missing = rules.actors(s, s.leader)
    if missing:  # a vote or a quest everyone has acted in closes without a missed deadline
        budget = s.options.excused_absences
        excused = tuple(i for i in missing if i in s.away and s.excused_used.get(i, 0) < budget)
        counted = tuple(i for i in missing if i not in excused)
        tx.emit(ev.DeadlineMissed(phase=s.phase, phase_id=s.phase_id, missing=tx.names(missing),
                                  rule=s.missed_rule, excused=tx.names(excused),
                                  in_a_row=tuple((tx.name(i), s.missed_at(i) + 1) for i in counted)))
    rules.on_timeout(tx, missing)
    if missing and not tx.s.over:  # the table hears of a seat open for a substitute once the phase moved on
        open_absent_seats(tx)
    return None
