"""Sending mail over SMTP: one kept-open connection, shared by every send under a lock.

A send is the whole SMTP transaction of one message on that connection, so concurrent sends
wait for each other (mail to players goes out one at a time; the outbox keeps order per player).
A connection the server closed while idle is replaced: a send on a reused connection that finds
it gone (disconnected, or ``421`` closing) is tried once more on a fresh one.

A ``5xx`` answer to MAIL FROM, RCPT TO or DATA is a :class:`PermanentFailure` (no retry will
help), as is a message whose addresses cannot be sent at all; anything else (refused connection,
timeout, ``4xx``, a failed login, ``530`` authentication required: the host's configuration, not
the message) propagates as it is, for the outbox to try again.
"""

from __future__ import annotations

import asyncio
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


class SmtpSender:
    def __init__(self, host: str, port: int, security: Security = "starttls",
                 user: str | None = None, password: str | None = None, timeout: float = 30.0,
                 validate_certs: bool = True) -> None:
        if security not in ("none", "starttls", "tls"):
            raise ValueError(f"unknown SMTP security {security!r}: none, starttls or tls")
        self.host, self.port, self.security = host, port, security
        self.user, self.password = user, password
        self.timeout, self.validate_certs = timeout, validate_certs
        self._client: aiosmtplib.SMTP | None = None
        self._lock = asyncio.Lock()

    async def send(self, message: EmailMessage, *, sender: str | None = None,
                   recipients: list[str] | None = None) -> None:
        """Send one message (envelope from/to default to the message's From / To). Raises
        PermanentFailure on a 5xx answer (to MAIL FROM, RCPT TO or DATA; the SMTP code and text in
        the message); any other error (connection refused, timeout, 4xx) propagates as is (the
        outbox retries it)."""
        async with self._lock:
            reused = self._client is not None and self._client.is_connected
            try:
                await self._transaction(message, sender, recipients)
            except (ConnectionError, aiosmtplib.SMTPResponseException) as error:
                closed = not isinstance(error, aiosmtplib.SMTPResponseException) or error.code == _CLOSING
                if not (reused and closed):
                    raise
                log.info("SMTP %s:%s closed the connection (%s); sending again on a new one",
                         self.host, self.port, error)
                await self._drop()
                await self._transaction(message, sender, recipients)

    async def _transaction(self, message: EmailMessage, sender: str | None,
                           recipients: list[str] | None) -> None:
        client = await self._connected()
        try:
            refused, _ = await client.send_message(message, sender=sender, recipients=recipients)
        except aiosmtplib.SMTPRecipientsRefused as error:
            codes = [r.code for r in error.recipients]
            if codes and all(_permanent(c) for c in codes):
                first = error.recipients[0]
                raise PermanentFailure(first.code, f"{first.recipient}: {first.message}") from error
            raise
        except aiosmtplib.SMTPServerDisconnected:
            await self._drop()
            raise
        except aiosmtplib.SMTPResponseException as error:
            if error.code == _CLOSING:
                await self._drop()
            if _permanent(error.code) and error.code != _AUTH_REQUIRED:
                raise PermanentFailure(error.code, error.message) from error
            raise
        except (aiosmtplib.SMTPTimeoutError, OSError):
            await self._drop()  # the connection is in an unknown state: start afresh next time
            raise
        except ValueError as error:  # no From/To, or an address that cannot go on the wire
            raise PermanentFailure(None, str(error)) from error
        if refused:  # accepted for some recipients: trying again would send it to them twice
            log.warning("SMTP %s:%s refused some recipients: %s", self.host, self.port,
                        {address: (r.code, r.message) for address, r in refused.items()})

    async def _connected(self) -> aiosmtplib.SMTP:
        if self._client is not None and self._client.is_connected:
            return self._client
        await self._drop()
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
        self._client = client
        return client

    async def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    async def close(self) -> None:
        """Say goodbye (QUIT) to the server and close the connection, if one is open."""
        async with self._lock:
            client, self._client = self._client, None
            if client is None or not client.is_connected:
                return
            try:
                await client.quit(timeout=min(self.timeout, 5.0))
            except (aiosmtplib.SMTPException, OSError, asyncio.TimeoutError):
                client.close()
