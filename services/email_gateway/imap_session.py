"""One IMAP connection of the mailbox watcher, from the server's greeting to logout: TLS or STARTTLS,
login, select (and the done folder made if it is missing), and the commands the watcher sends on it,
each failing at once when the connection drops."""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
from dataclasses import dataclass
from typing import Awaitable, Literal

import aioimaplib

DONE_KEYWORD = "$AvalonDone"
COMMAND_TIMEOUT = 30.0
UIDVALIDITY_RE = re.compile(rb"\[UIDVALIDITY (\d+)\]")
FETCH_RE = re.compile(rb"^\d+ FETCH \(")
UID_RE = re.compile(rb"UID (\d+)")
EXISTS_RE = re.compile(rb"^\* \d+ EXISTS")


class ImapError(Exception):
    """The server refused a command, or the connection ended."""


class LoginRefused(ImapError):
    """The server answered LOGIN with NO: the user or password is wrong; waiting will not help."""


@dataclass(frozen=True)
class ImapAccount:
    """The folder to watch and how to reach it; ``done_folder``: where handled mail is moved, if anywhere."""

    host: str
    port: int
    security: Literal["none", "starttls", "tls"]
    user: str
    password: str
    folder: str
    done_folder: str | None = None
    validate_certs: bool = True

    def __post_init__(self) -> None:
        if self.security not in ("none", "starttls", "tls"):
            raise ValueError(f"security must be 'none', 'starttls' or 'tls', not {self.security!r}")

    @property
    def key(self) -> str:
        """The folder's name in the StateStore."""
        return f"imap://{self.user}@{self.host}:{self.port}/{self.folder}"

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if not self.validate_certs:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


class ImapSession:
    """``connected`` once logged in with the folder selected; ``lost`` set when the server closes the
    connection; ``news`` when the server announced new mail (EXISTS), which the watcher clears before
    each search."""

    def __init__(self, account: ImapAccount) -> None:
        self.account = account
        self.client: aioimaplib.IMAP4 | None = None
        self.lost = asyncio.Event()
        self.connected = False
        self.uidvalidity: int | None = None
        self.news = False
        self._done_sent: object = None  # the IDLE command DONE was sent for

    @property
    def idle(self) -> bool:
        """The server announces new mail itself (IDLE); else the watcher polls."""
        assert self.client is not None
        return self.client.has_capability("IDLE")

    async def open(self) -> None:
        account, lost = self.account, self.lost
        context = account.ssl_context() if account.security == "tls" else None
        client = self.client = aioimaplib.IMAP4(account.host, account.port, timeout=COMMAND_TIMEOUT,
                                                conn_lost_cb=lambda _exc: lost.set(), ssl_context=context)
        self._watch_exists(client.protocol)
        await self.call(client.wait_hello_from_server())
        if account.security == "starttls":
            await self._starttls(client)
        try:
            await self.ok("LOGIN", client.login(aioimaplib.quoted(account.user), account.password))
        except ImapError as error:
            if "LOGIN refused" in str(error):
                raise LoginRefused(str(error)) from None
            raise
        await self.call(client.protocol.capability())
        response = await self.ok("SELECT", client.select(imap_utf7(account.folder)))
        found = next((UIDVALIDITY_RE.search(line) for line in response.lines
                      if isinstance(line, bytes) and UIDVALIDITY_RE.search(line)), None)
        self.uidvalidity = int(found.group(1)) if found else None
        if account.done_folder:
            listed = await self.ok("LIST", client.list('""', imap_utf7(account.done_folder)))
            if len(listed.lines) < 2:
                await self.ok("CREATE", client.create(imap_utf7(account.done_folder)))
        self.connected = True

    def _watch_exists(self, protocol: aioimaplib.IMAP4ClientProtocol) -> None:
        """aioimaplib drops an untagged EXISTS that comes outside IDLE (say in the answer to our
        STORE): note it, or mail arriving during a round would wait for the next idle_timeout."""
        untagged = protocol._untagged_response

        def spy(line: bytes):
            if EXISTS_RE.match(line):
                self.news = True
            return untagged(line)

        protocol._untagged_response = spy

    async def _starttls(self, client: aioimaplib.IMAP4) -> None:
        protocol = client.protocol
        if "STARTTLS" not in protocol.capabilities:
            raise ImapError("the server offers no STARTTLS (refusing to log in without TLS)")
        await self.ok("STARTTLS", protocol.execute(aioimaplib.Command("STARTTLS", protocol.new_tag(),
                                                                      loop=protocol.loop)))
        protocol.transport = await asyncio.get_running_loop().start_tls(
            protocol.transport, protocol, self.account.ssl_context(), server_hostname=self.account.host)
        await self.call(protocol.capability())

    async def close(self, *, logout: bool) -> None:
        """Log out first if ``logout`` and the connection is still there; then close it."""
        client, self.client, self.connected = self.client, None, False
        if client is None:
            return
        if logout and not self.lost.is_set():
            try:
                self.end_idle(client)
                await asyncio.wait_for(client.logout(), 2)
            except Exception:  # noqa: BLE001 - leaving anyway
                pass
        if client.protocol.transport is not None:
            client.protocol.transport.close()

    async def call(self, awaitable: Awaitable):
        """Await an IMAP command, failing at once when the connection drops."""
        command, lost = asyncio.ensure_future(awaitable), asyncio.ensure_future(self.lost.wait())
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

    async def ok(self, name: str, awaitable: Awaitable) -> aioimaplib.Response:
        response = await self.call(awaitable)
        if response.result != "OK":
            last = response.lines[-1] if response.lines else b""
            raise ImapError(f"{name} refused: {response.result} {bytes(last).decode(errors='replace')}")
        return response

    async def search_after(self, last_uid: int) -> list[int]:
        """The UIDs above ``last_uid`` not marked done, in order."""
        assert self.client is not None
        found = await self.ok("UID SEARCH", self.client.uid_search(
            f"UID {last_uid + 1}:*", "UNKEYWORD", DONE_KEYWORD, charset=None))
        uids = sorted({int(word) for line in found.lines[:-1] for word in bytes(line).split() if word.isdigit()})
        return [uid for uid in uids if uid > last_uid]  # "N:*" also matches the last mail

    async def fetch(self, uids: list[int]) -> dict[int, bytes]:
        """The raw bytes of each of these mails, in one command (a mail that is gone is not there)."""
        assert self.client is not None
        fetched = await self.ok("UID FETCH", self.client.uid("FETCH", uid_set(uids), "(UID BODY.PEEK[])"))
        return fetched_bodies(fetched.lines, set(uids))

    async def mark_done(self, uids: list[int]) -> None:
        """Seen and $AvalonDone (only Seen on a server without keywords), then moved to the done
        folder if there is one; these mails together."""
        client = self.client
        assert client is not None
        chosen = uid_set(uids)
        flags = await self.call(client.uid("STORE", chosen, "+FLAGS.SILENT", rf"(\Seen {DONE_KEYWORD})"))
        if flags.result != "OK":  # a server without keywords
            await self.ok("UID STORE", client.uid("STORE", chosen, "+FLAGS.SILENT", r"(\Seen)"))
        if self.account.done_folder:
            await self._move(client, chosen, imap_utf7(self.account.done_folder))

    async def _move(self, client: aioimaplib.IMAP4, uids: str, target: str) -> None:
        if client.has_capability("MOVE"):
            await self.ok("UID MOVE", client.uid("MOVE", uids, target))
            return
        await self.ok("UID COPY", client.uid("COPY", uids, target))
        await self.ok("UID STORE", client.uid("STORE", uids, "+FLAGS.SILENT", r"(\Deleted)"))
        if client.has_capability("UIDPLUS"):
            await self.ok("UID EXPUNGE", client.uid("EXPUNGE", uids))
        else:
            await self.ok("EXPUNGE", client.expunge())

    def end_idle(self, client: aioimaplib.IMAP4) -> None:
        """Send DONE once for the IDLE in progress, if one is (it may still await '+ idling')."""
        command = client.protocol.pending_sync_command
        if command is not None and command.name == "IDLE" and command is not self._done_sent:
            self._done_sent = command
            if not self.lost.is_set():
                client.idle_done()


def imap_utf7(name: str) -> str:
    """A folder name in IMAP's modified UTF-7 (RFC 3501 section 5.1.3), quoted."""
    runs = re.split(r"([^\x20-\x7e]+)", name)  # odd items: runs of characters to encode
    return aioimaplib.quoted("".join(
        "&" + base64.b64encode(run.encode("utf-16-be")).decode().rstrip("=").replace("/", ",") + "-"
        if odd else run.replace("&", "&-") for odd, run in ((i % 2, r) for i, r in enumerate(runs))))


def uid_set(uids: list[int]) -> str:
    """UIDs as an IMAP sequence set, runs written as ranges: [1, 2, 3, 7] -> '1:3,7'."""
    runs: list[list[int]] = []
    for uid in sorted(set(uids)):
        if runs and uid == runs[-1][1] + 1:
            runs[-1][1] = uid
        else:
            runs.append([uid, uid])
    return ",".join(str(a) if a == b else f"{a}:{b}" for a, b in runs)


def fetched_bodies(lines: list, uids: set[int]) -> dict[int, bytes]:
    """The BODY[] literal of each of uids in a UID FETCH response (other FETCH responses, of mail
    the server announces meanwhile, may be mixed in; a response without a UID is not ours)."""
    bodies: dict[int, bytes] = {}
    for index, line in enumerate(lines[:-1]):
        if isinstance(line, bytes) and FETCH_RE.match(line) and isinstance(lines[index + 1], bytearray):
            after = lines[index + 2] if index + 2 < len(lines) and isinstance(lines[index + 2], bytes) else b""
            found = UID_RE.search(line) or UID_RE.search(after)
            if found is not None and int(found.group(1)) in uids:
                bodies[int(found.group(1))] = bytes(lines[index + 1])
    return bodies


def describe(error: BaseException) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, (asyncio.TimeoutError, aioimaplib.CommandTimeout)):
        return "no answer in time"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
