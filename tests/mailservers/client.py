"""MailUser: a scripted mail program for a test player. It reads its INBOX over IMAP (imaplib in a
thread, so the tests never check the watcher's IMAP library with itself) and sends through the
test SMTP server, replying the way real mail programs do."""

from __future__ import annotations

import asyncio
import imaplib
import re
import time
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from email.utils import formatdate, getaddresses, make_msgid
from typing import Callable, Literal
from urllib.parse import unquote, urlsplit

import aiosmtplib

from tests.mailservers.quoting import quoted_reply
from tests.mailservers.servers import MailServers

UID_RE = re.compile(rb"UID (\d+)")


class MailUser:
    def __init__(self, servers: MailServers, address: str, password: str = "secret") -> None:
        self.servers, self.address, self.password = servers, address, password
        self.taken: set[int] = set()  # UIDs already returned by wait_for

    # --- reading -------------------------------------------------------------------------------
    def _fetch(self) -> list[tuple[int, EmailMessage]]:
        with imaplib.IMAP4("127.0.0.1", self.servers.imap_port, timeout=10) as imap:
            imap.login(self.address, self.password)
            imap.select("INBOX", readonly=True)
            _, found = imap.uid("SEARCH", "ALL")
            if not found or not found[0]:
                return []
            _, data = imap.uid("FETCH", "1:*", "(UID BODY.PEEK[])")
        messages = []
        for item in data:
            if isinstance(item, tuple) and (uid := UID_RE.search(item[0])):
                messages.append((int(uid.group(1)), message_from_bytes(item[1], policy=default)))
        return sorted(messages, key=lambda pair: pair[0])

    async def inbox(self) -> list[EmailMessage]:
        """Every message in INBOX, oldest first (nothing is marked read)."""
        return [message for _, message in await asyncio.to_thread(self._fetch)]

    async def wait_for(self, predicate: Callable[[EmailMessage], bool], timeout: float = 20.0) -> EmailMessage:
        """The oldest message matching predicate that no earlier wait_for returned (polling INBOX)."""
        deadline = time.monotonic() + timeout
        while True:
            messages = await asyncio.to_thread(self._fetch)
            for uid, message in messages:
                if uid not in self.taken and predicate(message):
                    self.taken.add(uid)
                    return message
            if time.monotonic() > deadline:
                subjects = [str(m.get("Subject")) for _, m in messages]
                raise TimeoutError(f"{self.address}: no matching mail within {timeout}s; INBOX: {subjects}")
            await asyncio.sleep(0.1)

    # --- writing -------------------------------------------------------------------------------
    async def send(self, to: str, subject: str, body: str, *, in_reply_to: EmailMessage | None = None,
                   html: str | None = None, headers: dict[str, str] | None = None, authenticate: bool = True,
                   from_address: str | None = None) -> str:
        """Send a mail; returns its Message-ID. Authenticates as this user unless told not to;
        from_address forges the From header (the envelope sender stays this user)."""
        message = self._compose(from_address or self.address, to, subject, in_reply_to)
        message.set_content(body)
        if html is not None:
            message.add_alternative(html, subtype="html")
        return await self._submit(message, headers, authenticate)

    async def reply(self, original: EmailMessage, body: str, *,
                    quote: Literal["below", "above", "none"] = "below", html_only: bool = False) -> str:
        """Reply as a mail client does: to the Reply-To (else From), subject "Re: ...", In-Reply-To and
        References from the original, the original's text quoted below the answer ('On DATE, NAME
        <addr> wrote:' + '> ' lines, Gmail style), or with quote="above" the answer on top of the
        thread under '-----Original Message-----' (Outlook style), or not at all. html_only sends one
        text/html part (the quote as a Gmail blockquote or an Outlook header block)."""
        to = str(original.get("Reply-To") or original.get("From"))
        subject = str(original.get("Subject", ""))
        if not re.match(r"(?i)\s*re\s*:", subject):
            subject = f"Re: {subject}"
        text, html = quoted_reply(original, body, quote, to_address=self.address)
        if not html_only:
            return await self.send(to, subject, text, in_reply_to=original)
        message = self._compose(self.address, to, subject, original)
        message.set_content(html, subtype="html")
        return await self._submit(message, None, True)

    async def click(self, mailto_url: str, *, authenticate: bool = True) -> str:
        """Send what a mail program sends for a mailto: link: its recipients, subject, body and any
        other header fields (RFC 6068), unchanged. Returns the Message-ID."""
        parts = urlsplit(mailto_url)
        if parts.scheme.lower() != "mailto":
            raise ValueError(f"not a mailto: URL: {mailto_url}")
        recipients = [unquote(parts.path)] if parts.path else []
        fields: dict[str, str] = {}
        for pair in filter(None, parts.query.split("&")):
            name, _, value = pair.partition("=")  # '+' is a plus in mailto:, not a space
            name, value = unquote(name).lower(), unquote(value)
            if name == "to":
                recipients.append(value)
            else:
                fields[name] = value
        body, subject = fields.pop("body", ""), fields.pop("subject", "")
        to = ", ".join(filter(None, recipients))
        return await self.send(to, subject, body, headers={k.title(): v for k, v in fields.items()},
                               authenticate=authenticate)

    def _compose(self, from_address: str, to: str, subject: str, in_reply_to: EmailMessage | None) -> EmailMessage:
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = from_address, to, subject
        message["Date"] = formatdate(localtime=True)
        message["Message-ID"] = make_msgid(domain=self.address.rpartition("@")[2])
        if in_reply_to is not None:
            parent = str(in_reply_to.get("Message-ID", "")).strip()
            message["In-Reply-To"] = parent
            references = str(in_reply_to.get("References", "")).split()
            message["References"] = " ".join([*references, parent])
        return message

    async def _submit(self, message: EmailMessage, headers: dict[str, str] | None, authenticate: bool) -> str:
        for name, value in (headers or {}).items():
            del message[name]
            message[name] = value
        recipients = [addr for _, addr in getaddresses(message.get_all("To", []) + message.get_all("Cc", []))]
        credentials = {"username": self.address, "password": self.password} if authenticate else {}
        await aiosmtplib.send(message, hostname="127.0.0.1", port=self.servers.smtp_port, sender=self.address,
                              recipients=recipients, start_tls=False, use_tls=False, timeout=30, **credentials)
        return str(message["Message-ID"])
