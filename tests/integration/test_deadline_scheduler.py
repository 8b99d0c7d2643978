"""The deadline scheduler on its own: reminders, then the timeout, from one job per game."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta, timezone

from avalon.services.engine.deadlines import DeadlineScheduler


class Recorder:
    """The bus port the scheduler uses: it only ever sends commands."""

    def __init__(self) -> None:
        self.sent = []

    async def send_command(self, envelope) -> None:
        self.sent.append((envelope.message_id, envelope.command.type, getattr(envelope.command, "seconds_left", None)))


async def _until(predicate, timeout: float = 5.0) -> None:
    async def wait() -> None:
        while not predicate():
            await asyncio.sleep(0.02)
    await asyncio.wait_for(wait(), timeout)


async def test_a_phase_gets_its_reminders_then_its_timeout_and_a_new_phase_replaces_the_old_plan():
    bus = Recorder()
    scheduler = DeadlineScheduler(bus)
    scheduler.start()
    try:
        now = datetime.now(timezone.utc)
        # a 120 s phase whose deadline is 60.4 s away: both reminders (60 s before) are due in 0.4 s
        scheduler.arm("g1", 3, now + timedelta(seconds=60.4), 120)
        assert scheduler.armed() == ["g1:remind:half", "g1:remind:end", "g1:timeout"]
        await _until(lambda: len(bus.sent) == 2)
        assert bus.sent == [("remind:g1:3:half", "remind_phase", 60), ("remind:g1:3:end", "remind_phase", 60)]
        assert scheduler.armed() == ["g1:timeout"], "the timeout is still to come"

        # the game moves on: the old phase's timeout never fires, the new one does
        scheduler.arm("g1", 4, datetime.now(timezone.utc) + timedelta(seconds=0.3), 30)
        assert scheduler.armed() == ["g1:timeout"]
        await _until(lambda: len(bus.sent) == 3)
        assert bus.sent[2] == ("timeout:g1:4", "phase_timed_out", None)
        assert scheduler.armed() == []

        # a finished game's deadline is dropped
        scheduler.arm("g2", 1, datetime.now(timezone.utc) + timedelta(seconds=0.3), 30)
        scheduler.disarm("g2")
        await asyncio.sleep(0.6)
        assert len(bus.sent) == 3 and scheduler.armed() == []
    finally:
        scheduler.shutdown()


async def test_a_deadline_already_past_fires_at_once():
    bus = Recorder()
    scheduler = DeadlineScheduler(bus)
    scheduler.start()
    try:
        scheduler.arm("g3", 7, datetime.now(timezone.utc) - timedelta(hours=2), 3600)
        assert scheduler.armed() == ["g3:timeout"], "reminders of the past are skipped"
        await _until(lambda: bus.sent)
        assert bus.sent == [("timeout:g3:7", "phase_timed_out", None)]
    finally:
        scheduler.shutdown()


async def test_a_deadline_cut_off_by_the_engine_stopping_logs_no_error(caplog):
    """The engine stops while a timeout is on its way to the broker: one INFO line, not an ERROR with a
    traceback from APScheduler (the load benchmark's only ERROR, at its end)."""
    caplog.set_level(logging.INFO)
    sending = asyncio.Event()

    class Stuck:
        async def send_command(self, envelope) -> None:
            sending.set()
            await asyncio.Event().wait()  # the broker never confirms before the stop

    scheduler = DeadlineScheduler(Stuck())
    scheduler.start()
    try:
        scheduler.arm("g1", 2, datetime.now(timezone.utc), 30)
        await asyncio.wait_for(sending.wait(), 5)
        jobs = [t for t in asyncio.all_tasks() if "run_coroutine_job" in repr(t.get_coro())]
        assert jobs, "the job's task is running"
        for task in jobs:
            task.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
    finally:
        scheduler.shutdown()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], [r.getMessage() for r in caplog.records]
    assert any("was not sent" in r.getMessage() and "g1" in r.getMessage() for r in caplog.records)


async def test_a_reading_of_the_database_never_replaces_a_later_phase_nor_replans_the_same_one():
    """A takeover reads the open deadlines while the engine may already have moved a game on: an older
    phase read there does not replace the plan of the newer one, nor does the same phase start over
    (its reminders sent stay sent)."""
    bus = Recorder()
    scheduler = DeadlineScheduler(bus)
    scheduler.start()
    try:
        soon = datetime.now(timezone.utc) + timedelta(seconds=0.5)
        later = datetime.now(timezone.utc) + timedelta(seconds=600)
        assert scheduler.arm("g1", 5, soon, 30) == 1  # the engine committed phase 5
        assert scheduler.arm("g1", 4, later, 30, again=False) == 0  # a reading from before that commit
        assert scheduler.arm("g1", 5, later, 30, again=False) == 0  # the same phase read again
        assert scheduler.arm("g1", 6, soon, 30, again=False) == 1  # a later phase read: it is armed
        await _until(lambda: len(bus.sent) == 1)
        assert bus.sent == [("timeout:g1:6", "phase_timed_out", None)]
    finally:
        scheduler.shutdown()


async def test_a_timeout_the_broker_refuses_is_one_warning_and_sent_again(caplog, monkeypatch):
    from avalon.services.engine import deadlines as module
    from avalon.shared.bus import Unroutable

    class Refusing(Recorder):
        refusals = 1

        async def send_command(self, envelope) -> None:
            if self.refusals:
                self.refusals -= 1
                raise Unroutable("the broker refused the message: Basic.Nack")  # a cluster's queue leaderless
            await super().send_command(envelope)

    real = module.timedelta
    monkeypatch.setattr(module, "timedelta", lambda seconds=0, **kw: real(seconds=min(seconds, 0.2), **kw))
    bus = Refusing()
    scheduler = DeadlineScheduler(bus)
    scheduler.start()
    try:
        with caplog.at_level(logging.WARNING, logger="avalon.services.engine.deadlines"):
            scheduler.arm("g9", 4, datetime.now(timezone.utc), 30)
            await _until(lambda: bus.sent)
        assert bus.sent == [("timeout:g9:4", "phase_timed_out", None)], "sent again once refused"
        [line] = [r for r in caplog.records if r.name == "avalon.services.engine.deadlines"]
        assert line.levelno == logging.WARNING and not line.exc_info and "Unroutable" in line.getMessage()
    finally:
        scheduler.shutdown()
