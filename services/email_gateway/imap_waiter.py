"""Between two rounds of the mailbox watcher: waiting for new mail, announced by IDLE when the server
has it, else for the next poll; a ``check_now`` or a handler's retry falling due ends the wait early."""

from __future__ import annotations

import asyncio
from typing import Awaitable

import aioimaplib

from .imap_session import COMMAND_TIMEOUT, ImapError, ImapSession


class MailWaiter:
    """``idle_timeout``: how long one IDLE lasts before it is renewed; ``poll_interval``: the wait
    between two searches on a server without IDLE."""

    def __init__(self, *, poll_interval: float, idle_timeout: float) -> None:
        self.poll_interval = poll_interval
        self.idle_timeout = idle_timeout
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """End the wait now (or skip the next one): someone wants a round."""
        self._wake.set()

    def round_starts(self) -> None:
        """A round starts: what woke the waiter is answered by it."""
        self._wake.clear()

    async def wait(self, session: ImapSession, retry: float | None) -> None:
        """Until new mail (IDLE), a wake, the poll interval, or ``retry`` seconds when a handler's
        retry is due. Raises ImapError when the server closes the connection meanwhile."""
        idle = session.idle
        timeout = self.idle_timeout if idle else self.poll_interval
        if retry is not None:
            timeout = min(timeout, retry)
        if self._wake.is_set() or session.news:
            return
        if idle:
            await self._idle(session, timeout)
        elif await first_of(timeout, self._wake.wait(), session.lost.wait()) and session.lost.is_set():
            raise ImapError("the server closed the connection")

    async def _idle(self, session: ImapSession, timeout: float) -> None:
        client = session.client
        assert client is not None
        idle = await session.call(client.idle_start(timeout=timeout))
        try:
            while not (session.news or self._wake.is_set()):
                push = asyncio.ensure_future(client.wait_server_push(timeout=timeout + 5))
                await first_of(None, push, self._wake.wait(), session.lost.wait())
                if session.lost.is_set():
                    raise ImapError("the server closed the connection")
                if not push.done() or push.cancelled() or push.exception() is not None:
                    break  # woken, or the wait timed out
                lines = push.result()
                if lines == aioimaplib.STOP_WAIT_SERVER_PUSH:
                    break  # idle_timeout reached
                for line in map(bytes, lines):  # the folder went away, or the server leaves: start again
                    if line.startswith((b"BYE", b"NO", b"BAD")) or b"[UIDVALIDITY" in line:
                        raise ImapError(f"the server said {line.decode(errors='replace')}")
        finally:
            session.end_idle(client)
        await session.ok("IDLE", asyncio.wait_for(idle, COMMAND_TIMEOUT))
        while not client.protocol.idle_queue.empty():
            client.protocol.idle_queue.get_nowait()


async def first_of(timeout: float | None, *awaitables: Awaitable) -> bool:
    """Wait for the first of awaitables (False when timeout passed first); cancel the others."""
    futures = [asyncio.ensure_future(a) for a in awaitables]
    try:
        done, _ = await asyncio.wait(futures, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in futures:
            future.cancel()
    return bool(done)
