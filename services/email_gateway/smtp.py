"""Sending mail over SMTP: a few kept-open connections (``connections``, ``SMTP_CONNECTIONS``),
each serving one send at a time.

A send is the whole SMTP transaction of one message on one connection; concurrent sends take
the free connections (one already open first, so a light load keeps to one) and wait for one
when all are busy (the outbox keeps order per player: a player's next mail waits for the one
before). A connection the server closed while idle is replaced: a send on a reused connection
that finds it gone (disconnected, or ``421`` closing) is tried once more on a fresh one.

A ``5xx`` answer to MAIL FROM, RCPT TO or DATA is a :class:`PermanentFailure` (no retry will
help), as is a message whose addresses cannot be sent at all; anything else (refused connection,
timeout, ``4xx``, a failed login, ``530`` authentication required: the host's configuration, not
the message) propagates as it is, for the outbox to try again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from email.message import EmailMessage
from typing import Literal

import aiosmtplib

from avalon.shared.delivery.outbox import Undeliverable

log = logging.getLogger(__name__)

Security = Literal["none", "starttls", "tls"]
_CLOSING = 421  # "service not available, closing transmission channel"
_AUTH_REQUIRED = 530  # our configuration lacks a login: not the message's fault, so not permanent


class PermanentFailure(Undeliverable):
    """The server refused for good (5xx): no retry will help. ``code`` is the SMTP code (None when
    the message itself could not be put on the wire) and ``text`` the server's words."""

    def __init__(self, code: int | None, text: str) -> None:
        self.code, self.text = code, text
        super().__init__(f"{code} {text}" if code is not None else text)


def _permanent(code: int) -> bool:
    return 500 <= code < 600


def server_down(error: BaseException) -> bool:
    """The server, not the message: it could not be reached, timed out, dropped the connection or
    is closing it (``421``). The mail waits for it instead of spending its attempts."""
    if isinstance(error, aiosmtplib.SMTPResponseException) and not isinstance(error, aiosmtplib.SMTPConnectError):
        return error.code == _CLOSING
    return isinstance(error, (OSError, asyncio.TimeoutError))


class _Line:
    """One connection of the sender's (None until opened, and after it was dropped)."""

    __slots__ = ("client",)

    def __init__(self) -> None:
        self.client: aiosmtplib.SMTP | None = None

    @property
    def open(self) -> bool:
        return self.client is not None and self.client.is_connected


class SmtpSender:
    def __init__(self, host: str, port: int, security: Security = "starttls",
                 user: str | None = None, password: str | None = None, timeout: float = 30.0,
                 validate_certs: bool = True, connections: int = 1) -> None:
        if security not in ("none", "starttls", "tls"):
            raise ValueError(f"unknown SMTP security {security!r}: none, starttls or tls")
        if connections < 1:
            raise ValueError("at least one SMTP connection")
        self.host, self.port, self.security = host, port, security
        self.user, self.password = user, password
        self.timeout, self.validate_certs = timeout, validate_certs
        self.connections = connections
        self._free = [_Line() for _ in range(connections)]  # the connections no send holds
        self._turns = asyncio.Semaphore(connections)  # a send holds one connection

    @contextlib.asynccontextmanager
    async def _line(self):
        """A free connection for one send: an open one if there is (the latest freed), else a new one."""
        async with self._turns:
            opened = [i for i, line in enumerate(self._free) if line.open]
            line = self._free.pop(opened[-1] if opened else -1)
            try:
                yield line
            finally:
                self._free.append(line)

    async def send(self, message: EmailMessage, *, sender: str | None = None,
                   recipients: list[str] | None = None) -> None:
        """Send one message (envelope from/to default to the message's From / To). Raises
        PermanentFailure on a 5xx answer (to MAIL FROM, RCPT TO or DATA; the SMTP code and text in
        the message); any other error (connection refused, timeout, 4xx) propagates as is (the
        outbox retries it)."""
        async with self._line() as line:
            reused = line.open
            try:
                await self._transaction(message, sender, recipients, line)
            except (ConnectionError, aiosmtplib.SMTPResponseException) as error:
                closed = not isinstance(error, aiosmtplib.SMTPResponseException) or error.code == _CLOSING
                if not (reused and closed):
                    raise
                log.info("SMTP %s:%s closed the connection (%s); sending again on a new one",
                         self.host, self.port, error)
                _drop(line)
                await self._transaction(message, sender, recipients, line)

    async def _transaction(self, message: EmailMessage, sender: str | None,
                           recipients: list[str] | None, line: _Line) -> None:
        client = await self._connected(line)
        try:
            refused, _ = await client.send_message(message, sender=sender, recipients=recipients)
        except aiosmtplib.SMTPRecipientsRefused as error:
            codes = [r.code for r in error.recipients]
            if codes and all(_permanent(c) for c in codes):
                first = error.recipients[0]
                raise PermanentFailure(first.code, f"{first.recipient}: {first.message}") from error
            raise
        except aiosmtplib.SMTPServerDisconnected:
            _drop(line)
            raise
        except aiosmtplib.SMTPResponseException as error:
            if error.code == _CLOSING:
                _drop(line)
            if _permanent(error.code) and error.code != _AUTH_REQUIRED:
                raise PermanentFailure(error.code, error.message) from error
            raise
        except (aiosmtplib.SMTPTimeoutError, OSError):
            _drop(line)  # the connection is in an unknown state: start afresh next time
            raise
        except ValueError as error:  # no From/To, or an address that cannot go on the wire
            raise PermanentFailure(None, str(error)) from error
        if refused:  # accepted for some recipients: trying again would send it to them twice
            log.warning("SMTP %s:%s refused some recipients: %s", self.host, self.port,
                        {address: (r.code, r.message) for address, r in refused.items()})

    async def probe(self) -> None:
        """Open a connection (and log in) now, if none is open: the server answers, or this raises."""
        async with self._line() as line:
            await self._connected(line)

    async def _connected(self, line: _Line) -> aiosmtplib.SMTP:
        if line.open:
            return line.client
        _drop(line)
        client = aiosmtplib.SMTP(
            hostname=self.host, port=self.port, timeout=self.timeout,
            use_tls=self.security == "tls", start_tls=self.security == "starttls",
            validate_certs=self.validate_certs,
        )
        await client.connect()
        try:
            if self.user:
                await client.login(self.user, self.password or "")
        except BaseException:
            client.close()
            raise
        line.client = client
        return client

    async def close(self) -> None:
        """Once the sends under way are over: say goodbye (QUIT) to the server on each open
        connection, and close it."""
        for _ in range(self.connections):
            await self._turns.acquire()
        try:
            for line in self._free:
                client, line.client = line.client, None
                if client is None or not client.is_connected:
                    continue
                try:
                    await client.quit(timeout=min(self.timeout, 5.0))
                except (aiosmtplib.SMTPException, OSError, asyncio.TimeoutError):
                    client.close()
        finally:
            for _ in range(self.connections):
                self._turns.release()


def _drop(line: _Line) -> None:
    client, line.client = line.client, None
    if client is not None:
        client.close()
