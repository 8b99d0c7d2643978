"""One round of the mailbox watcher: the mail after the stored position, each handed to the handler once
and in order, marked done only after the handler has returned, and the position stored after each.
A handler that raises stops the round: the mail stays unmarked and is fetched again after a backoff
(0.5 s doubling to 30 s). A new UIDVALIDITY starts over from UID 0 (the gateway de-duplicates by
Message-ID); mail already flagged $AvalonDone is skipped even then."""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from .imap_session import ImapSession, describe
from .imap_state import MailboxState, StateStore

log = logging.getLogger("services.email_gateway.imap")  # the watcher's pieces speak under its one name

BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0

Handler = Callable[[int, bytes], Awaitable[None]]  # (uid, raw RFC 822 bytes); returns once handled
Report = Callable[[str, BaseException | None], None]


class RoundCounter:
    """Rounds started and finished, so a caller can wait for a round that started after it asked."""

    def __init__(self) -> None:
        self.started = self.finished = 0
        self._changed = asyncio.Condition()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        async with self._changed:
            await self._changed.wait_for(predicate)

    async def notify(self) -> None:
        """Whoever waits looks again (a round finished, or the watcher stopped)."""
        async with self._changed:
            self._changed.notify_all()


class MailRound:
    """``busy``: held while one mail is handled and marked (closing waits for it); ``retry``: the
    backoff after a handler failure, None once a round went through; ``closing``: asked before each
    mail, a round stops there when it says so."""

    def __init__(self, key: str, state: StateStore, handle: Handler, *, report: Report,
                 closing: Callable[[], bool]) -> None:
        self.key = key
        self._state = state
        self._handle = handle
        self._report = report
        self._closing = closing
        self.busy = asyncio.Lock()
        self.retry: float | None = None
        self.counter = RoundCounter()

    async def run(self, session: ImapSession) -> None:
        self.counter.started += 1
        session.news = False
        state = await self._state.load(self.key)
        if state.uidvalidity != session.uidvalidity:
            if state.uidvalidity is not None:
                log.warning("IMAP %s: UIDVALIDITY changed from %s to %s, reading the folder again",
                            self.key, state.uidvalidity, session.uidvalidity)
            state = MailboxState(session.uidvalidity, 0)
            await self._state.save(self.key, state)
        failed = False
        for uid in await session.search_after(state.last_uid):
            if self._closing():
                return
            async with self.busy:
                if failed := not await self._hand_over(session, uid):
                    break
                state = MailboxState(session.uidvalidity, uid)
                await self._state.save(self.key, state)
        if not failed:
            self.retry = None
        self.counter.finished += 1
        await self.counter.notify()

    async def _hand_over(self, session: ImapSession, uid: int) -> bool:
        """Fetch, handle and mark one mail; False when the handler failed (retry later)."""
        raw = await session.fetch(uid)
        if raw is None:
            log.info("IMAP %s: mail %s vanished before it was read", self.key, uid)
            return True
        try:
            await self._handle(uid, raw)
        except Exception as error:  # noqa: BLE001 - the mail stays unmarked and comes again
            self.retry = min((self.retry or BACKOFF_FIRST / 2) * 2, BACKOFF_MAX)
            self._report(f"IMAP {self.key}: handling mail {uid} failed ({describe(error)}); "
                         f"retrying in {self.retry:g} s", error)
            return False
        await session.mark_done(uid)
        return True
