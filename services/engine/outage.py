"""Database outages as the engine lives through them: commands wait, and the log says it once."""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)


class DatabaseDown(Exception):
    """The database could not be reached while a batch was decided or committed: it is tried again
    once the database answers; its commands wait (unacknowledged), none fails."""


class DatabaseWatch:
    """Whether the database answers: one line when it stops (not one per command or retry), one when
    it is back, with how long it was away. A failure within ``settle`` seconds of the answer that
    ended an outage is that outage's tail (a pooled connection opened before it, used at once): told
    only if it lasts past ``settle`` seconds itself, when the next retry meets it again."""

    def __init__(self, *, settle: float = 1.0, clock=time.monotonic) -> None:
        self.settle = settle
        self._clock = clock
        self._lost_at: float | None = None  # since when the database has not answered
        self._back_at: float | None = None  # when it answered after the last outage
        self._tail = False  # the outage going on now began within `settle` of that answer
        self._told = False  # the outage going on now was told

    def lost(self, error: BaseException | None) -> None:
        now = self._clock()
        if self._lost_at is None:
            self._lost_at, self._told = now, False
            self._tail = self._back_at is not None and now - self._back_at < self.settle
        if not self._told and (not self._tail or now - self._lost_at >= self.settle):
            self._told = True
            why = " ".join(str(error).split())[:200] if error is not None else ""
            log.warning("database unreachable (%s: %s): commands wait until it answers", type(error).__name__, why)

    def answered(self) -> None:
        if self._lost_at is not None:
            if self._told:
                log.info("database back after %.1f s", self._clock() - self._lost_at)
            self._back_at, self._lost_at = self._clock(), None
