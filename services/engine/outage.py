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
    it is back, with how long it was away."""

    def __init__(self) -> None:
        self._lost_at: float | None = None  # since when (monotonic) the database has not answered

    def lost(self, error: BaseException | None) -> None:
        if self._lost_at is None:
            self._lost_at = time.monotonic()
            why = " ".join(str(error).split())[:200] if error is not None else ""
            log.warning("database unreachable (%s: %s): commands wait until it answers", type(error).__name__, why)

    def answered(self) -> None:
        if self._lost_at is not None:
            log.info("database back after %.1f s", time.monotonic() - self._lost_at)
            self._lost_at = None
