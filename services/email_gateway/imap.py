"""The email gateway's IMAP watcher: hands every new mail of one folder to the gateway, once and in
order, and marks it done (flags, or a move to a done folder) only after the handler has returned.

The position (UIDVALIDITY and the last handled UID) lives in a StateStore, so a restart resumes
where it stopped; a new UIDVALIDITY starts over from UID 0 (the gateway de-duplicates by
Message-ID). Mail already flagged $AvalonDone is skipped even then. New mail is announced by IDLE
when the server has it, else found by polling. A dropped connection or a server that is down is
retried with backoff (0.5 s doubling to 30 s), one log line per failure. A handler that raises
stops the round: the mail stays unmarked and is fetched again after a short backoff.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import ssl
from dataclasses import dataclass, replace
from typing import Awaitable, Callable, Literal, Protocol

import aioimaplib

log = logging.getLogger(__name__)

DONE_KEYWORD = "$AvalonDone"
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0
COMMAND_TIMEOUT = 30.0
UIDVALIDITY_RE = re.compile(rb"\[UIDVALIDITY (\d+)\]")
FETCH_RE = re.compile(rb"^\d+ FETCH \(")
UID_RE = re.compile(rb"UID (\d+)")
EXISTS_RE = re.compile(rb"^\* \d+ EXISTS")


@dataclass
class MailboxState:
    uidvalidity: int | None = None
    last_uid: int = 0


class StateStore(Protocol):
    async def load(self, key: str) -> MailboxState: ...
    async def save(self, key: str, state: MailboxState) -> None: ...


class MemoryStateStore:
    """A StateStore in memory (tests; a watcher that may re-read its folder after a restart)."""

    def __init__(self) -> None:
        self.states: dict[str, MailboxState] = {}

    async def load(self, key: str) -> MailboxState:
        return replace(self.states.get(key, MailboxState()))

    async def save(self, key: str, state: MailboxState) -> None:
        self.states[key] = replace(state)


Handler = Callable[[int, bytes], Awaitable[None]]  # (uid, raw RFC 822 bytes); returns once handled


class ImapError(Exception):
    """The server refused a command, or the connection ended."""


class LoginRefused(ImapError):
    """The server answered LOGIN with NO: the user or password is wrong; waiting will not help."""


def imap_utf7(name: str) -> str:
    """A folder name in IMAP's modified UTF-7 (RFC 3501 section 5.1.3), quoted."""
    runs = re.split(r"([^\x20-\x7e]+)", name)  # odd items: runs of characters to encode
    return aioimaplib.quoted("".join(
        "&" + base64.b64encode(run.encode("utf-16-be")).decode().rstrip("=").replace("/", ",") + "-"
        if odd else run.replace("&", "&-") for odd, run in ((i % 2, r) for i, r in enumerate(runs))))


def fetched_body(lines: list, uid: int) -> bytes | None:
    """The BODY[] literal of uid in a UID FETCH response (other FETCH responses may be mixed in)."""
    for index, line in enumerate(lines[:-1]):
        if isinstance(line, bytes) and FETCH_RE.match(line) and isinstance(lines[index + 1], bytearray):
            after = lines[index + 2] if index + 2 < len(lines) and isinstance(lines[index + 2], bytes) else b""
            found = UID_RE.search(line) or UID_RE.search(after)
            if found is None or int(found.group(1)) == uid:
                return bytes(lines[index + 1])
    return None


async def first_of(timeout: float | None, *awaitables: Awaitable) -> bool:
    """Wait for the first of awaitables (False when timeout passed first); cancel the others."""
    futures = [asyncio.ensure_future(a) for a in awaitables]
    try:
        done, _ = await asyncio.wait(futures, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in futures:
            future.cancel()
    return bool(done)


def describe(error: BaseException) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, (asyncio.TimeoutError, aioimaplib.CommandTimeout)):
        return "no answer in time"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class MailboxWatcher:
    def __init__(self, host: str, port: int, security: Literal["none", "starttls", "tls"], user: str,
                 password: str, folder: str, state: StateStore, handle: Handler, *,
                 done_folder: str | None = None, poll_interval: float = 60.0, idle_timeout: float = 25 * 60,
                 validate_certs: bool = True, on_error: Callable[[str], None] | None = None,
                 on_refused: Callable[[str], None] | None = None) -> None:
        if security not in ("none", "starttls", "tls"):
            raise ValueError(f"security must be 'none', 'starttls' or 'tls', not {security!r}")
        self.host, self.port, self.security, self.user, self.password = host, port, security, user, password
        self.folder, self.done_folder, self.state, self.handle = folder, done_folder, state, handle
        self.poll_interval, self.idle_timeout, self.validate_certs = poll_interval, idle_timeout, validate_certs
        self.on_error = on_error
        self.on_refused = on_refused  # a refused login: told once, and the watcher stops
        self._refused = False
        self.key = f"imap://{user}@{host}:{port}/{folder}"
        self._task: asyncio.Task | None = None
        self._client: aioimaplib.IMAP4 | None = None
        self._lost = asyncio.Event()
        self._wake = asyncio.Event()
        self._rounds = asyncio.Condition()
        self._started = self._done = 0  # rounds started and finished
        self._busy = asyncio.Lock()  # held while one mail is handled and marked
        self._connected = self._closing = False
        self._uidvalidity: int | None = None
        self._retry: float | None = None  # backoff after a handler failure
        self._news = False  # the server announced new mail (EXISTS) since the last search
        self._done_sent: object = None  # the IDLE command DONE was sent for

    @property
    def connected(self) -> bool:
        return self._connected

    async def start(self) -> None:
        """Connect in the background (retrying until it works) and return at once."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"imap-watcher {self.key}")

    async def check_now(self) -> None:
        """Fetch what is new now; returns after a round that started after this call (waits for a
        connection if there is none; returns at once when the watcher is closed)."""
        if self._task is None:
            raise RuntimeError("the watcher is not running")
        want = self._started + 1
        self._wake.set()
        async with self._rounds:
            await self._rounds.wait_for(lambda: self._done >= want or self._task is None or self._refused)

    async def close(self) -> None:
        """Stop watching: lets the mail being handled finish (up to 30 s), then logs out."""
        self._closing = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._busy.acquire(), COMMAND_TIMEOUT)
            except asyncio.TimeoutError:
                log.warning("IMAP %s: closing while a mail is still being handled", self.key)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
            if self._busy.locked():
                self._busy.release()
            async with self._rounds:
                self._rounds.notify_all()
        await self._disconnect(logout=True)
        self._closing = False

    # --- connection ----------------------------------------------------------------------------
    async def _run(self) -> None:
        delay = BACKOFF_FIRST
        while not self._closing:
            try:
                await self._connect()
                while not self._closing:
                    await self._round()
                    delay = BACKOFF_FIRST  # reset once a whole round worked
                    await self._wait()
            except asyncio.CancelledError:
                raise
            except LoginRefused as refused:
                await self._disconnect(logout=False)
                if self.on_refused is not None:
                    self._refused = True  # the watcher stops: nobody waits for a round any more
                    async with self._rounds:
                        self._rounds.notify_all()
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

    def _report(self, message: str, error: BaseException | None = None) -> None:
        log.warning(message, exc_info=error)
        if self.on_error is not None:
            try:
                self.on_error(message)
            except Exception:  # noqa: BLE001 - a broken callback must not stop the watcher
                log.exception("IMAP %s: on_error failed", self.key)

    def _ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if not self.validate_certs:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    async def _connect(self) -> None:
        lost = self._lost = asyncio.Event()
        context = self._ssl_context() if self.security == "tls" else None
        client = self._client = aioimaplib.IMAP4(self.host, self.port, timeout=COMMAND_TIMEOUT,
                                                 conn_lost_cb=lambda _exc: lost.set(), ssl_context=context)
        self._watch_exists(client.protocol)
        await self._call(client.wait_hello_from_server())
        if self.security == "starttls":
            await self._starttls(client)
        try:
            await self._ok("LOGIN", client.login(aioimaplib.quoted(self.user), self.password))
        except ImapError as error:
            if "LOGIN refused" in str(error):
                raise LoginRefused(str(error)) from None
            raise
        await self._call(client.protocol.capability())
        response = await self._ok("SELECT", client.select(imap_utf7(self.folder)))
        found = next((UIDVALIDITY_RE.search(line) for line in response.lines
                      if isinstance(line, bytes) and UIDVALIDITY_RE.search(line)), None)
        self._uidvalidity = int(found.group(1)) if found else None
        if self.done_folder:
            listed = await self._ok("LIST", client.list('""', imap_utf7(self.done_folder)))
            if len(listed.lines) < 2:
                await self._ok("CREATE", client.create(imap_utf7(self.done_folder)))
        self._connected = True
        log.info("IMAP %s: watching (UIDVALIDITY %s, %s)", self.key, self._uidvalidity,
                 "IDLE" if client.has_capability("IDLE") else f"polling every {self.poll_interval:g} s")

    def _watch_exists(self, protocol: aioimaplib.IMAP4ClientProtocol) -> None:
        """aioimaplib drops an untagged EXISTS that comes outside IDLE (say in the answer to our
        STORE): note it, or mail arriving during a round would wait for the next idle_timeout."""
        untagged = protocol._untagged_response

        def spy(line: bytes):
            if EXISTS_RE.match(line):
                self._news = True
            return untagged(line)

        protocol._untagged_response = spy

    async def _starttls(self, client: aioimaplib.IMAP4) -> None:
        protocol = client.protocol
        if "STARTTLS" not in protocol.capabilities:
            raise ImapError("the server offers no STARTTLS (refusing to log in without TLS)")
        await self._ok("STARTTLS", protocol.execute(aioimaplib.Command("STARTTLS", protocol.new_tag(),
                                                                       loop=protocol.loop)))
        protocol.transport = await asyncio.get_running_loop().start_tls(
            protocol.transport, protocol, self._ssl_context(), server_hostname=self.host)
        await self._call(protocol.capability())

    async def _disconnect(self, *, logout: bool) -> None:
        client, self._client, self._connected = self._client, None, False
        if client is None:
            return
        if logout and not self._lost.is_set():
            try:
                self._end_idle(client)
                await asyncio.wait_for(client.logout(), 2)
            except Exception:  # noqa: BLE001 - leaving anyway
                pass
        if client.protocol.transport is not None:
            client.protocol.transport.close()

    async def _call(self, awaitable: Awaitable):
        """Await an IMAP command, failing at once when the connection drops."""
        command, lost = asyncio.ensure_future(awaitable), asyncio.ensure_future(self._lost.wait())
        try:
            await asyncio.wait({command, lost}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            command.cancel()
            raise
        finally:
            lost.cancel()
        if not command.done():
            command.cancel()
            raise ImapError("the server closed the connection")
        return command.result()

    async def _ok(self, name: str, awaitable: Awaitable) -> aioimaplib.Response:
        response = await self._call(awaitable)
        if response.result != "OK":
            last = response.lines[-1] if response.lines else b""
            raise ImapError(f"{name} refused: {response.result} {bytes(last).decode(errors='replace')}")
        return response

    # --- rounds --------------------------------------------------------------------------------
    async def _round(self) -> None:
        self._wake.clear()
        self._started += 1
        client = self._client
        self._news = False
        state = await self.state.load(self.key)
        if state.uidvalidity != self._uidvalidity:
            if state.uidvalidity is not None:
                log.warning("IMAP %s: UIDVALIDITY changed from %s to %s, reading the folder again",
                            self.key, state.uidvalidity, self._uidvalidity)
            state = MailboxState(self._uidvalidity, 0)
            await self.state.save(self.key, state)
        found = await self._ok("UID SEARCH", client.uid_search(
            f"UID {state.last_uid + 1}:*", "UNKEYWORD", DONE_KEYWORD, charset=None))
        uids = sorted({int(word) for line in found.lines[:-1] for word in bytes(line).split() if word.isdigit()})
        failed = False
        for uid in (u for u in uids if u > state.last_uid):  # "N:*" also matches the last mail
            if self._closing:
                return
            async with self._busy:
                if failed := not await self._handle_one(client, uid):
                    break
                state = MailboxState(self._uidvalidity, uid)
                await self.state.save(self.key, state)
        if not failed:
            self._retry = None
        self._done += 1
        async with self._rounds:
            self._rounds.notify_all()

    async def _handle_one(self, client: aioimaplib.IMAP4, uid: int) -> bool:
        """Fetch, handle and mark one mail; False when the handler failed (retry later)."""
        fetched = await self._ok("UID FETCH", client.uid("FETCH", str(uid), "(UID BODY.PEEK[])"))
        raw = fetched_body(fetched.lines, uid)
        if raw is None:
            log.info("IMAP %s: mail %s vanished before it was read", self.key, uid)
            return True
        try:
            await self.handle(uid, raw)
        except Exception as error:  # noqa: BLE001 - the mail stays unmarked and comes again
            self._retry = min((self._retry or BACKOFF_FIRST / 2) * 2, BACKOFF_MAX)
            self._report(f"IMAP {self.key}: handling mail {uid} failed ({describe(error)}); "
                         f"retrying in {self._retry:g} s", error)
            return False
        flags = await self._call(client.uid("STORE", str(uid), "+FLAGS.SILENT", rf"(\Seen {DONE_KEYWORD})"))
        if flags.result != "OK":  # a server without keywords
            await self._ok("UID STORE", client.uid("STORE", str(uid), "+FLAGS.SILENT", r"(\Seen)"))
        if self.done_folder:
            await self._move(client, uid)
        return True

    async def _move(self, client: aioimaplib.IMAP4, uid: int) -> None:
        target = imap_utf7(self.done_folder)
        if client.has_capability("MOVE"):
            await self._ok("UID MOVE", client.uid("MOVE", str(uid), target))
            return
        await self._ok("UID COPY", client.uid("COPY", str(uid), target))
        await self._ok("UID STORE", client.uid("STORE", str(uid), "+FLAGS.SILENT", r"(\Deleted)"))
        if client.has_capability("UIDPLUS"):
            await self._ok("UID EXPUNGE", client.uid("EXPUNGE", str(uid)))
        else:
            await self._ok("EXPUNGE", client.expunge())

    async def _wait(self) -> None:
        """Until new mail (IDLE), a check_now, the poll interval, or a handler retry is due."""
        client = self._client
        idle = client.has_capability("IDLE")
        timeout = self.idle_timeout if idle else self.poll_interval
        if self._retry is not None:
            timeout = min(timeout, self._retry)
        if self._wake.is_set() or self._news:
            return
        if idle:
            await self._idle(client, timeout)
        elif await first_of(timeout, self._wake.wait(), self._lost.wait()) and self._lost.is_set():
            raise ImapError("the server closed the connection")

    async def _idle(self, client: aioimaplib.IMAP4, timeout: float) -> None:
        idle = await self._call(client.idle_start(timeout=timeout))
        try:
            while not (self._news or self._wake.is_set()):
                push = asyncio.ensure_future(client.wait_server_push(timeout=timeout + 5))
                await first_of(None, push, self._wake.wait(), self._lost.wait())
                if self._lost.is_set():
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
            self._end_idle(client)
        await self._ok("IDLE", asyncio.wait_for(idle, COMMAND_TIMEOUT))
        while not client.protocol.idle_queue.empty():
            client.protocol.idle_queue.get_nowait()

    def _end_idle(self, client: aioimaplib.IMAP4) -> None:
        """Send DONE once for the IDLE in progress, if one is (it may still await '+ idling')."""
        command = client.protocol.pending_sync_command
        if command is not None and command.name == "IDLE" and command is not self._done_sent:
            self._done_sent = command
            if not self._lost.is_set():
                client.idle_done()
