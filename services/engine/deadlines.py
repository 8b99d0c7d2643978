"""Phase deadlines with APScheduler: the scheduler only puts commands on the bus.

At a deadline it sends ``PhaseTimedOut``; before it, reminders (``RemindPhase``)
at half time and near the end. Every message id is derived from the game and
phase, so a deadline fired twice (a restart, a second engine) is applied once.
On start the engine re-arms every open deadline from the database; one that
came due while the engine was down fires at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger

from avalon.shared.bus import Bus, Unroutable
from avalon.shared.protocol import CommandEnvelope, RemindPhase
from avalon.shared.game.commands import SCHEDULER

from .store import KEEP

log = logging.getLogger(__name__)

#: Reminders only for phases long enough to need them.
REMINDER_MIN_TIMEOUT = 120
#: The channel the scheduler's commands come on (the engine's own: no gateway's).
SCHEDULER_CHANNEL = "scheduler"


def reminder_offsets(timeout_seconds: int) -> list[tuple[str, int]]:
    """(label, seconds before the deadline) of each reminder for a phase of this length."""
    if timeout_seconds < REMINDER_MIN_TIMEOUT:
        return []
    near_end = max(60, timeout_seconds // 10)
    return [("half", timeout_seconds // 2), ("end", near_end)]


@dataclass
class _Step:
    at: datetime
    kind: str  # "remind:<label>" or "timeout"
    seconds_left: int


class DeadlineScheduler:
    """One APScheduler job per game with an open deadline: it fires at the game's next step (a
    reminder, then the timeout) and moves itself on to the one after. A new phase moves the job
    (a reschedule, much cheaper than adding jobs); a finished game removes it."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.scheduler = AsyncIOScheduler(timezone=timezone.utc)
        self._plans: dict[str, tuple[int, list[_Step]]] = {}  # game -> (phase id, its steps still to come)

    def start(self) -> None:
        self.scheduler.start()

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def arm(self, game_id: str, phase_id: int, deadline_at: datetime, timeout_seconds: int, *,
            again: bool = True) -> int:
        """Plan the phase's reminders and timeout; ``again`` False (a reading of the database, which a
        commit may have overtaken since): not if this phase or a later one is planned already (its
        reminders sent stay sent). Returns 1 if planned, 0 if not."""
        planned = self._plans.get(game_id)
        if not again and planned is not None and planned[0] >= phase_id:
            return 0
        now = datetime.now(timezone.utc)
        steps = [_Step(deadline_at - timedelta(seconds=before), f"remind:{label}", before)
                 for label, before in reminder_offsets(timeout_seconds)
                 if deadline_at - timedelta(seconds=before) > now]
        steps.append(_Step(max(deadline_at, now), "timeout", 0))
        self._plans[game_id] = (phase_id, steps)
        self._schedule(game_id, steps[0].at)
        return 1

    def disarm(self, game_id: str) -> None:
        if self._plans.pop(game_id, None) is not None:
            try:
                self.scheduler.remove_job(game_id)
            except JobLookupError:
                pass  # it already ran

    def planned(self) -> list[str]:
        """The games with a deadline planned."""
        return list(self._plans)

    def armed(self) -> list[str]:
        """What is planned, as ``<game>:timeout`` and ``<game>:remind:<label>``."""
        return [f"{game_id}:{step.kind}" for game_id, (_, steps) in self._plans.items() for step in steps]

    def _schedule(self, game_id: str, at: datetime) -> None:
        try:
            self.scheduler.reschedule_job(game_id, trigger=DateTrigger(run_date=at, timezone=timezone.utc))
        except JobLookupError:
            self.scheduler.add_job(self._fire, DateTrigger(run_date=at, timezone=timezone.utc), args=(game_id,),
                                   id=game_id, misfire_grace_time=None, coalesce=True,
                                   max_instances=100)  # a new phase may come due while the last step is sent

    async def _fire(self, game_id: str) -> None:
        plan = self._plans.get(game_id)
        if plan is None:
            return
        phase_id, steps = plan
        now = datetime.now(timezone.utc)
        due = [steps.pop(0)]
        while steps and steps[0].at <= now:  # steps that fall together go together
            due.append(steps.pop(0))
        if steps:
            self._schedule(game_id, steps[0].at)
        else:
            del self._plans[game_id]
        try:
            for step in due:
                if step.kind == "timeout":
                    await self._timeout(game_id, phase_id)
                else:
                    await self._remind(game_id, phase_id, step.seconds_left, step.kind.split(":", 1)[1])
        except asyncio.CancelledError:  # the engine is stopping (APScheduler would log it as a job's ERROR)
            log.info("stopping: the %s of game %s was not sent; a deadline is armed again on start",
                     "/".join(step.kind for step in due), game_id)

    async def _timeout(self, game_id: str, phase_id: int) -> None:
        await self._send(CommandEnvelope(
            message_id=f"timeout:{game_id}:{phase_id}", game_id=game_id, actor=SCHEDULER,
            channel=SCHEDULER_CHANNEL, phase_id=phase_id, command={"type": "phase_timed_out"}))

    async def _remind(self, game_id: str, phase_id: int, seconds_left: int, label: str) -> None:
        await self._send(CommandEnvelope(
            message_id=f"remind:{game_id}:{phase_id}:{label}", game_id=game_id, actor=SCHEDULER,
            channel=SCHEDULER_CHANNEL, phase_id=phase_id, command=RemindPhase(seconds_left=seconds_left)))

    async def _send(self, envelope: CommandEnvelope) -> None:
        try:
            await self.bus.send_command(envelope)
        except Exception as error:  # the bus is down: retry shortly, a deadline must not be lost
            # the broker refusing it (a cluster's queue without its leader for a moment) or away: expected
            # faults, one line each; anything else with its traceback
            expected = isinstance(error, (Unroutable, ConnectionError, TimeoutError))
            log.log(logging.WARNING if expected else logging.ERROR, "could not send %s (%s: %s); retrying in 5 s",
                    envelope.message_id, type(error).__name__, error, exc_info=not expected)
            retry_at = datetime.now(timezone.utc) + timedelta(seconds=5)
            self.scheduler.add_job(self._send, "date", run_date=retry_at, args=(envelope,),
                                   misfire_grace_time=None)


class Deadlines:
    """The engine's side of the deadlines: the open ones of the games this engine serves armed when it
    takes their partition over (partitions.py reads them from the database), and a game's deadline
    moved or dropped once a batch that changed it is committed. Without a scheduler (tests,
    benchmarks) nothing is armed."""

    def __init__(self, scheduler: DeadlineScheduler | None) -> None:
        self.scheduler = scheduler
        #: whether this engine serves a game's partition now (set by the engine service)
        self.serves: Callable[[str], bool] = lambda game_id: True

    def start(self) -> None:
        if self.scheduler is not None:
            self.scheduler.start()

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.shutdown()

    def after_commit(self, game_id: str, state, deadline_at) -> Callable[[], None] | None:
        """What to do with ``game_id``'s deadline once its new ``state`` is committed: disarm it (the
        game is over, or its phase has none), arm it at ``deadline_at``, or nothing (``KEEP``: the open
        phase's deadline stays)."""
        scheduler = self.scheduler
        if scheduler is None:
            return None
        if state.over or deadline_at is None:
            return lambda: scheduler.disarm(game_id)
        if deadline_at is KEEP:
            return None
        # committed after its partition was handed on: the engine serving it now reads it (partitions.py)
        return lambda: (scheduler.arm(game_id, state.phase_id, deadline_at, state.timeout_seconds)
                        if self.serves(game_id) else None)
