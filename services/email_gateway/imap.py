"""The email gateway's IMAP watcher: hands every new mail of one folder to the gateway, once, several
at a time (``window`` fetched and not yet handled, at most) with each sender's mails in the order
they arrived, and marks each done (flags, or a move to a done folder) only after the handler has
returned for it.

The position (UIDVALIDITY and the last handled UID) lives in a StateStore, so a restart resumes
where it stopped; a new UIDVALIDITY starts over from UID 0 (the gateway de-duplicates by
Message-ID). Mail already flagged $AvalonDone is skipped even then. New mail is announced by IDLE
when the server has it, else found by polling. A dropped connection or a server that is down is
retried with backoff (0.5 s doubling to 30 s), one log line per failure. A handler that raises
stops its sender's mails for the round: that mail and the sender's later ones stay unmarked and
are fetched again after a short backoff; a crash meanwhile leaves unmarked what was not handled,
and the position below it, so it comes again after the restart.

``MailboxWatcher`` runs the pieces beside this module, each owning its state: ``imap_session.py``
(one connection: TLS, login, select, the commands), ``imap_waiter.py`` (IDLE or polling between
rounds), ``imap_round.py`` (fetching, handing over and marking the mails, one lane per sender)
and ``imap_state.py`` (the stored position).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Literal

from .imap_round import BACKOFF_FIRST, BACKOFF_MAX, WINDOW, Handler, MailRound
from .imap_session import COMMAND_TIMEOUT, DONE_KEYWORD, ImapAccount, ImapError, ImapSession, LoginRefused, describe
from .imap_state import MailboxState, MemoryStateStore, StateStore
from .imap_waiter import MailWaiter

log = logging.getLogger(__name__)


class MailboxWatcher:
    def __init__(self, host: str, port: int, security: Literal["none", "starttls", "tls"], user: str,
                 password: str, folder: str, state: StateStore, handle: Handler, *,
                 done_folder: str | None = None, poll_interval: float = 60.0, idle_timeout: float = 25 * 60,
                 validate_certs: bool = True, window: int = WINDOW, on_error: Callable[[str], None] | None = None,
                 on_refused: Callable[[str], None] | None = None) -> None:
        self.account = ImapAccount(host, port, security, user, password, folder, done_folder, validate_certs)
        self.on_error = on_error
        self.on_refused = on_refused  # a refused login: told once, and the watcher stops
        self._waiter = MailWaiter(poll_interval=poll_interval, idle_timeout=idle_timeout)
        self._round = MailRound(self.key, state, handle, report=self._report, closing=lambda: self._closing,
                                window=window)
        self._session: ImapSession | None = None  # the connection, from its first byte to its close
        self._task: asyncio.Task | None = None
        self._closing = False
        self._refused = False

    @property
    def key(self) -> str:
        """The folder's name in the StateStore: ``imap://user@host:port/folder``."""
        return self.account.key

    @property
    def connected(self) -> bool:
        return self._session is not None and self._session.connected

    async def start(self) -> None:
        """Connect in the background (retrying until it works) and return at once."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"imap-watcher {self.key}")

    async def check_now(self) -> None:
        """Fetch what is new now; returns after a round that started after this call (waits for a
        connection if there is none; returns at once when the watcher is closed)."""
        if self._task is None:
            raise RuntimeError("the watcher is not running")
        rounds = self._round.counter
        want = rounds.started + 1
        self._waiter.wake()
        await rounds.wait_for(lambda: rounds.finished >= want or self._task is None or self._refused)

    async def close(self) -> None:
        """Stop watching: lets the mails being handled finish and be marked (up to 30 s), then logs out."""
        self._closing = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._round.quiet.wait(), COMMAND_TIMEOUT)
            except asyncio.TimeoutError:
                log.warning("IMAP %s: closing while mail is still being handled", self.key)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
            await self._round.counter.notify()
        await self._disconnect(logout=True)
        self._closing = False

    async def _run(self) -> None:
        delay = BACKOFF_FIRST
        while not self._closing:
            try:
                session = await self._connect()
                while not self._closing:
                    self._waiter.round_starts()
                    await self._round.run(session)
                    delay = BACKOFF_FIRST  # reset once a whole round worked
                    await self._waiter.wait(session, self._round.retry)
            except asyncio.CancelledError:
                raise
            except LoginRefused as refused:
                await self._disconnect(logout=False)
                if self.on_refused is not None:
                    self._refused = True  # the watcher stops: nobody waits for a round any more
                    await self._round.counter.notify()
                    self.on_refused(f"IMAP {self.key}: {refused}")
                    return
                self._report(f"IMAP {self.key}: {refused}; retrying in {delay:g} s")
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
            except Exception as error:  # noqa: BLE001 - any failure: reconnect later
                await self._disconnect(logout=False)
                if self._closing:
                    return
                self._report(f"IMAP {self.key}: {describe(error)}; retrying in {delay:g} s")
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    async def _connect(self) -> ImapSession:
        session = self._session = ImapSession(self.account)
        await session.open()
        log.info("IMAP %s: watching (UIDVALIDITY %s, %s)", self.key, session.uidvalidity,
                 "IDLE" if session.idle else f"polling every {self._waiter.poll_interval:g} s")
        return session

    async def _disconnect(self, *, logout: bool) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close(logout=logout)

    def _report(self, message: str, error: BaseException | None = None) -> None:
        log.warning(message, exc_info=error)
        if self.on_error is not None:
            try:
                self.on_error(message)
            except Exception:  # noqa: BLE001 - a broken callback must not stop the watcher
                log.exception("IMAP %s: on_error failed", self.key)


__all__ = ["MailboxWatcher", "WINDOW", "MailboxState", "StateStore", "MemoryStateStore", "Handler", "ImapError",
           "LoginRefused", "DONE_KEYWORD"]
