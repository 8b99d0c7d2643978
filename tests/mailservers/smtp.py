"""The SMTP side of the test mail servers: an aiosmtpd server on loopback that takes mail for one
domain (plus-addresses included), stamps how the sender authenticated, and hands each message to
Dovecot over LMTP. Submission works with or without AUTH (PLAIN/LOGIN, allowed without TLS), like
an MX that also accepts its own users' mail. Dovecot's LMTP adds Return-Path and Delivered-To.
"""

from __future__ import annotations

import asyncio
import logging
import smtplib
from email.parser import BytesParser
from email.policy import default
from email.utils import getaddresses, make_msgid
from pathlib import Path
from typing import Callable

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

log = logging.getLogger(__name__)


class _QuietAiosmtpd(logging.Filter):
    """aiosmtpd warns on every AUTH about a deprecated attribute it sets itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "login_data is deprecated" not in record.getMessage()


logging.getLogger("mail.log").addFilter(_QuietAiosmtpd())

REFUSALS = {451: "451 4.3.0 try later", 550: "550 5.1.1 no such user"}


def mailbox_of(address: str) -> str:
    """alice+tag@Example.Test -> alice@example.test (the mailbox a plus-address lands in)."""
    local, _, domain = address.strip().lower().rpartition("@")
    return f"{local.split('+', 1)[0]}@{domain}"


class DeliverToDovecot:
    """aiosmtpd handler: RCPT checks (and the refusals switched on by tests), DATA -> LMTP."""

    def __init__(self, domain: str, passwords: Callable[[], dict[str, str]], lmtp_socket: Path) -> None:
        self.domain, self.passwords, self.lmtp_socket = domain.lower(), passwords, lmtp_socket
        self.refusals: dict[str, str] = {}  # mailbox or exact address -> SMTP reply
        self.bouncing: set[str] = set()  # mailboxes whose mail is accepted, then returned to its sender

    def authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login = auth_data.login.decode(errors="replace").lower()
        known = self.passwords().get(login)
        ok = known is not None and known == auth_data.password.decode(errors="replace")
        return AuthResult(success=ok, handled=False, auth_data=login if ok else None)

    async def handle_RCPT(self, server, session, envelope, address: str, rcpt_options) -> str:
        refusal = self.refusals.get(address.lower()) or self.refusals.get(mailbox_of(address))
        if refusal:
            return refusal
        if address.rpartition("@")[2].lower() != self.domain:
            return "550 5.7.1 relaying denied"
        if mailbox_of(address) not in self.passwords():
            return REFUSALS[550]
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        content = envelope.original_content or envelope.content
        if isinstance(content, str):
            content = content.encode()
        stamped = self.authentication_results(session, content) + content
        loop = asyncio.get_running_loop()
        failures = []
        for rcpt in envelope.rcpt_tos:  # one LMTP transaction per recipient: its own Delivered-To
            mail_from = envelope.mail_from or ""
            if mailbox_of(rcpt) in self.bouncing:  # as a relay that took the mail and could not deliver it
                if not mail_from or mailbox_of(mail_from) not in self.passwords():
                    continue  # a bounce of a bounce (null sender), or nobody here to return it to
                rcpt, mail_from, stamped = mail_from, "", delivery_report(self.domain, mail_from, rcpt, content)
            try:
                await loop.run_in_executor(None, self._lmtp, mail_from, rcpt, stamped)
            except smtplib.SMTPRecipientsRefused as e:
                code, text = next(iter(e.recipients.values()))
                failures.append((code, f"{rcpt}: {text.decode(errors='replace')}"))
            except (OSError, smtplib.SMTPException) as e:
                failures.append((451, f"{rcpt}: {e}"))
        if not failures:
            return "250 2.0.0 delivered"
        log.warning("test SMTP: LMTP delivery failed: %s", failures)
        permanent = all(code >= 500 for code, _ in failures) and len(failures) == len(envelope.rcpt_tos)
        return ("554 5.0.0 " if permanent else "451 4.3.0 ") + "; ".join(text for _, text in failures)

    def authentication_results(self, session, content: bytes) -> bytes:
        headers = BytesParser(policy=default).parsebytes(content, headersonly=True)
        senders = getaddresses([str(headers.get("From", ""))])
        from_address = senders[0][1] if senders else ""
        from_domain = from_address.rpartition("@")[2].lower() or "unknown"
        passed = bool(session.authenticated) and session.auth_data == mailbox_of(from_address)
        verdict = "dmarc=pass" if passed else "dmarc=fail (p=reject)"
        return f"Authentication-Results: mx.{self.domain}; {verdict} header.from={from_domain}\r\n".encode()

    def _lmtp(self, mail_from: str, rcpt: str, message: bytes) -> None:
        with smtplib.LMTP(str(self.lmtp_socket), timeout=30) as lmtp:
            lmtp.sendmail(mail_from, [rcpt], message)


def delivery_report(domain: str, sender: str, failed: str, content: bytes) -> bytes:
    """The delivery status notification a mail server sends back (null sender) for a mail to ``failed``
    it could not deliver, returning the mail's headers (as Postfix does with its text/rfc822-headers)."""
    headers = content.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0].replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    return (
        "Return-Path: <>\r\n"
        f"From: Mail Delivery System <MAILER-DAEMON@mx.{domain}>\r\n"
        f"To: {sender}\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        f"Message-ID: {make_msgid(domain='mx.' + domain)}\r\n"
        "Auto-Submitted: auto-replied\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="dsn"\r\n\r\n'
        "--dsn\r\nContent-Type: text/plain\r\n\r\n"
        f"I'm sorry to have to inform you that your message could not be delivered to {failed}.\r\n\r\n"
        "--dsn\r\nContent-Type: message/delivery-status\r\n\r\n"
        f"Reporting-MTA: dns; mx.{domain}\r\n\r\n"
        f"Final-Recipient: rfc822; {failed}\r\nAction: failed\r\nStatus: 5.2.2\r\n"
        "Diagnostic-Code: smtp; 552 5.2.2 mailbox full\r\n\r\n"
        "--dsn\r\nContent-Type: text/rfc822-headers\r\n\r\n").encode() + headers + b"\r\n\r\n--dsn--\r\n"


class SmtpServer:
    """The aiosmtpd Controller (its own thread and loop), restartable on the same port."""

    def __init__(self, handler: DeliverToDovecot, port: int, domain: str) -> None:
        self.handler, self.port, self.domain = handler, port, domain
        self.controller: Controller | None = None

    def start(self) -> None:
        if self.controller is not None:
            return
        controller = Controller(
            self.handler, hostname="127.0.0.1", port=self.port, server_hostname=f"mx.{self.domain}",
            authenticator=self.handler.authenticate, auth_require_tls=False, auth_required=False,
            ready_timeout=10)
        controller.start()
        self.controller = controller

    def stop(self) -> None:
        controller, self.controller = self.controller, None
        if controller is not None:
            controller.stop()
