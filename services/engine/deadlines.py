"""Phase deadlines with APScheduler: the scheduler only puts commands on the bus.

At a deadline it sends ``PhaseTimedOut``; before it, reminders (``RemindPhase``)
at half time and near the end. Every message id is derived from the game and
phase, so a deadline fired twice (a restart, a second engine) is applied once.
On start the engine re-arms every open deadline from the database; one that
came due while the engine was down fires at once.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from shared.bus import Bus
from shared.protocol import CommandEnvelope, RemindPhase
from services.engine.rules.commands import SCHEDULER

log = logging.getLogger(__name__)

#: Reminders only for phases long enough to need them.
REMINDER_MIN_TIMEOUT = 120


def reminder_offsets(timeout_seconds: int) -> list[tuple[str, int]]:
    """(label, seconds before the deadline) of each reminder for a phase of this length."""
    if timeout_seconds < REMINDER_MIN_TIMEOUT:
        return []
    near_end = max(60, timeout_seconds // 10)
    return [("half", timeout_seconds // 2), ("end", near_end)]


class DeadlineScheduler:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.scheduler = AsyncIOScheduler(timezone=timezone.utc)
        self._jobs: dict[str, list[str]] = {}  # game -> its job ids (no scan of every job per phase)

    def start(self) -> None:
        self.scheduler.start()

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def arm(self, game_id: str, phase_id: int, deadline_at: datetime, timeout_seconds: int) -> None:
        self.disarm(game_id)
        now = datetime.now(timezone.utc)
        self._add(f"{game_id}:timeout", max(deadline_at, now), self._timeout, game_id, phase_id)
        for label, before in reminder_offsets(timeout_seconds):
            at = deadline_at - timedelta(seconds=before)
            if at > now:
                self._add(f"{game_id}:remind:{label}", at, self._remind, game_id, phase_id, before, label)

    def disarm(self, game_id: str) -> None:
        for job_id in self._jobs.pop(game_id, ()):
            try:
                self.scheduler.remove_job(job_id)
            except JobLookupError:
                pass  # it already ran

    def armed(self) -> list[str]:
        return [job.id for job in self.scheduler.get_jobs()]

    def _add(self, job_id: str, at: datetime, func, *args) -> None:
        self._jobs.setdefault(args[0], []).append(job_id)
        self.scheduler.add_job(func, "date", run_date=at, args=args, id=job_id, replace_existing=True,
                               misfire_grace_time=None, coalesce=True)

    async def _timeout(self, game_id: str, phase_id: int) -> None:
        await self._send(CommandEnvelope(
            message_id=f"timeout:{game_id}:{phase_id}", game_id=game_id, actor=SCHEDULER, channel="scheduler",
            phase_id=phase_id, command={"type": "phase_timed_out"}))

    async def _remind(self, game_id: str, phase_id: int, seconds_left: int, label: str) -> None:
        await self._send(CommandEnvelope(
            message_id=f"remind:{game_id}:{phase_id}:{label}", game_id=game_id, actor=SCHEDULER,
            channel="scheduler", phase_id=phase_id, command=RemindPhase(seconds_left=seconds_left)))

    async def _send(self, envelope: CommandEnvelope) -> None:
        try:
            await self.bus.send_command(envelope)
        except Exception:  # the bus is down: retry shortly, a deadline must not be lost
            log.exception("could not send %s; retrying in 5 s", envelope.message_id)
            retry_at = datetime.now(timezone.utc) + timedelta(seconds=5)
            self.scheduler.add_job(self._send, "date", run_date=retry_at, args=(envelope,),
                                   misfire_grace_time=None)
