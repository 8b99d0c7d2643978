"""One round of the mailbox watcher: the mail after the stored position, each handed to the handler once,
several at a time (at most ``window`` fetched and not yet finished), one sender's mails one after the
other in the order they arrived, different senders' side by side. A mail is marked done only after
the handler has returned for it, and the position stored is the last UID below which every mail is
handled. A handler that raises stops its sender's mails for the round (the others go on): the mail
and the sender's later ones stay unmarked and are fetched again after a backoff (0.5 s doubling to
30 s). A new UIDVALIDITY starts over from UID 0 (the gateway de-duplicates by Message-ID); mail
already flagged $AvalonDone is skipped even then."""

from __future__ import annotations

import asyncio
import logging
from email.parser import BytesHeaderParser
from email.utils import parseaddr
from typing import Awaitable, Callable

from .imap_session import ImapSession, describe
from .imap_state import MailboxState, StateStore

log = logging.getLogger("avalon.services.email_gateway.imap")  # the watcher's pieces speak under its one name

BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0
WINDOW = 16  # mails fetched and not yet handled, at most
ROUND_MAX = 256  # mail arriving during a round joins it until it holds this many (then the next round)

Handler = Callable[[int, bytes], Awaitable[None]]  # (uid, raw RFC 822 bytes); returns once handled
Report = Callable[[str, BaseException | None], None]
HEADERS = BytesHeaderParser()


def sender_of(raw: bytes) -> str:
    """The lane a mail waits in: its From address, lower-cased ('' when it has none)."""
    try:
        return parseaddr(str(HEADERS.parsebytes(raw).get("From", "")))[1].lower()
    except Exception:  # noqa: BLE001 - a header no parser makes sense of: the lane of mails without a sender
        return ""


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
    """``quiet``: set while no round is handing mail over (closing waits for it); ``retry``: the
    backoff after a handler failure, None once a round went through; ``closing``: asked before each
    fetch, a round takes no more mail when it says so and returns once what it holds is handled."""

    def __init__(self, key: str, state: StateStore, handle: Handler, *, report: Report,
                 closing: Callable[[], bool], window: int = WINDOW) -> None:
        self.key = key
        self._state = state
        self._handle = handle
        self._report = report
        self._closing = closing
        self.window = max(1, window)
        self.quiet = asyncio.Event()
        self.quiet.set()
        self.retry: float | None = None
        self.counter = RoundCounter()

    async def run(self, session: ImapSession) -> None:
        self.counter.started += 1
        session.news = False
        self.quiet.clear()
        try:
            failed = await self._run(session)
        finally:
            self.quiet.set()
        self.retry = self.next_retry() if failed else None  # doubled once a round, however many failed in it
        if self._closing():
            return
        self.counter.finished += 1
        await self.counter.notify()

    async def _run(self, session: ImapSession) -> bool:
        """One round; True when a handler failed in it."""
        state = await self._state.load(self.key)
        if state.uidvalidity != session.uidvalidity:
            if state.uidvalidity is not None:
                log.warning("IMAP %s: UIDVALIDITY changed from %s to %s, reading the folder again",
                            self.key, state.uidvalidity, session.uidvalidity)
            state = MailboxState(session.uidvalidity, 0)
            await self._state.save(self.key, state)
        batch = Batch(self, session, await session.search_after(state.last_uid), state.last_uid)
        try:
            await batch.run()
        finally:
            batch.cancel()
        return batch.failed

    async def hand_over(self, uid: int, raw: bytes) -> bool:
        """Handle one mail; False when the handler failed (retry later)."""
        try:
            await self._handle(uid, raw)
        except Exception as error:  # noqa: BLE001 - the mail stays unmarked and comes again
            self._report(f"IMAP {self.key}: handling mail {uid} failed ({describe(error)}); "
                         f"retrying in {self.next_retry():g} s", error)
            return False
        return True

    def next_retry(self) -> float:
        return min((self.retry or BACKOFF_FIRST / 2) * 2, BACKOFF_MAX)

    async def save(self, session: ImapSession, last_uid: int) -> None:
        await self._state.save(self.key, MailboxState(session.uidvalidity, last_uid))

    def closing(self) -> bool:
        return self._closing()


class Batch:
    """The mails one round found (``uids``, ascending) on their way through: fetched ``window`` at a
    time, each handed over in a task that first waits for its sender's previous mail; the handled
    ones marked done together, and the position moved up to the last UID below which none is left.
    Mail the server announces meanwhile joins the round (up to ROUND_MAX mails, and not after a
    failure: the failed mail's retry waits for the round's end)."""

    def __init__(self, owner: MailRound, session: ImapSession, uids: list[int], last_uid: int) -> None:
        self.owner, self.session = owner, session
        self.waiting = list(uids)  # not fetched yet
        self.order = list(uids)  # every UID of the round
        self.next: int | None = 0  # the first of them not finished; None once one is left for the next round
        self.finished: dict[int, bool] = {}  # uid -> handled (or gone); False: left for the next round
        self.tasks: dict[int, asyncio.Task] = {}  # fetched, not finished
        self.lanes: dict[str, asyncio.Task] = {}  # each sender's latest mail
        self.stopped: set[str] = set()  # senders whose mail failed: their later mails wait for the next round
        self.last_uid = last_uid
        self.failed = False

    async def run(self) -> None:
        while self.tasks or (self.waiting and not self.owner.closing()):
            room = self.owner.window - len(self.tasks)
            if room > 0 and not self.owner.closing():
                if not self.waiting and self.session.news and not self.failed and len(self.order) < ROUND_MAX:
                    await self.more()  # mail came meanwhile: taken into this round
                if self.waiting:
                    await self.fetch(self.waiting[:room])
                    del self.waiting[:room]
            if not self.tasks:
                await self.advance()
                continue
            done, _ = await asyncio.wait(self.tasks.values(), return_when=asyncio.FIRST_COMPLETED)
            handled = []
            for task in done:
                uid, ok = task.result()
                del self.tasks[uid]
                self.finished[uid] = ok
                if ok:
                    handled.append(uid)
            if handled:
                await self.session.mark_done(sorted(handled))
            await self.advance()

    async def more(self) -> None:
        """The mail that arrived since the round searched (the server said so in an answer)."""
        self.session.news = False
        seen = self.order[-1] if self.order else self.last_uid
        found = [uid for uid in await self.session.search_after(seen) if uid > seen]
        self.waiting += found
        self.order += found

    async def fetch(self, uids: list[int]) -> None:
        bodies = await self.session.fetch(uids)
        for uid in uids:
            raw = bodies.get(uid)
            if raw is None:
                log.info("IMAP %s: mail %s vanished before it was read", self.owner.key, uid)
                self.finished[uid] = True
                continue
            lane = sender_of(raw)
            before = self.lanes.get(lane)
            task = asyncio.create_task(self.one(uid, raw, lane, before), name=f"imap mail {uid}")
            self.tasks[uid] = self.lanes[lane] = task

    async def one(self, uid: int, raw: bytes, lane: str, before: asyncio.Task | None) -> tuple[int, bool]:
        if before is not None:
            await asyncio.wait({before})  # the sender's previous mail first, whatever became of it
        if lane in self.stopped:
            return uid, False
        ok = await self.owner.hand_over(uid, raw)
        if not ok:
            self.stopped.add(lane)
            self.failed = True
        return uid, ok

    async def advance(self) -> None:
        """Store the position when every mail up to a later UID is finished (marked, or gone)."""
        order, moved, at = self.order, self.last_uid, self.next
        if at is None:
            return  # a mail is left for the next round: the position stays below it
        while at < len(order) and self.finished.get(order[at]) is True:
            moved, at = order[at], at + 1
        self.next = None if at < len(order) and self.finished.get(order[at]) is False else at
        if moved != self.last_uid:
            self.last_uid = moved
            await self.owner.save(self.session, moved)

    def cancel(self) -> None:
        """The round ends early (the connection dropped, the watcher stopped): what is still being
        handled is abandoned, unmarked, and comes again."""
        for task in self.tasks.values():
            task.cancel()
