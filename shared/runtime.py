"""Process-wide settings of a long-running service."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal

#: gen0 after this many allocations (CPython's default is 700): a batch's short-lived objects (its
#: envelopes, events, futures) die before a collection would see them, instead of being promoted
#: into the older generations, which a full collection then has to walk.
GEN0_THRESHOLD = 50_000


def settle_gc() -> None:
    """Call once a service has started. What start-up built (modules, models, schemas, tables) lives
    as long as the process: it is moved out of the collector's sight (``gc.freeze``), so a full
    collection walks only what the service made since; and the young generation is made larger.

    Measured on the engine at 500 commands/s with 1,000 games (bench/engine_bench.py): with
    CPython's defaults, 34 full collections of 146 ms (p50; up to 289 ms) paused the event loop and
    every command waiting on it."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)


class Stop(asyncio.Event):
    """Set by the first SIGINT or SIGTERM; ``signal`` says which (a host's Ctrl-C ends the command
    with status 130 once everything is stopped, a service manager's SIGTERM with 0)."""

    signal: int | None = None

    def on(self, sig: int) -> None:
        if self.signal is None:
            self.signal = sig
        self.set()


def stop_on_signal() -> Stop:
    """Set on SIGINT/SIGTERM. Installed before anything starts, so a signal during start-up
    still ends in a clean shutdown rather than the default abrupt exit."""
    stop = Stop()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.on, sig)
    return stop


class StartupError(Exception):
    """A service cannot start and waiting will not help (a bad setting, a refused login): the
    command line prints the message as one line and exits non-zero."""


class BadSetting(StartupError):
    """One or more settings are wrong (malformed, or missing for what the command runs): each is
    said in plain words, all at once, and the command exits with status 2."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


async def retry(what: str, attempt, *, transient: tuple[type[BaseException], ...], log: logging.Logger,
                first_delay: float = 0.5, max_delay: float = 30.0, on_wait=None):
    """``await attempt()`` until it succeeds; a ``transient`` error logs one line and waits
    (doubling, up to ``max_delay``) before the next try. Anything else propagates."""
    delay = first_delay
    while True:
        try:
            return await attempt()
        except transient as error:
            reason = one_line(error)
            if on_wait is not None:
                on_wait(reason)
            log.warning("%s: %s; retrying in %.1f s", what, reason, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, max_delay)


def one_line(error: BaseException) -> str:
    """An error as a short line: its type and the first line of its message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text and text[0] else type(error).__name__


def configure_logging(level: str) -> None:
    """The commands' log format, without the libraries' chatter below WARNING (a line per migration
    step, per update, per job, per IMAP answer it does not use) unless the level is DEBUG."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("alembic", "aiogram.event", "apscheduler", "aioimaplib"):
        if logging.getLogger(noisy).getEffectiveLevel() < logging.WARNING and level != "DEBUG":
            logging.getLogger(noisy).setLevel(logging.WARNING)
