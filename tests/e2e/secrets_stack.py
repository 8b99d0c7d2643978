"""The narrator with both channels for the security tests, as ``avalon run`` starts it (one
in-process bus, one SQLite database): the engine, the real Telegram gateway against the fake Bot
API on loopback, and the real email gateway sending through an SMTP server on loopback that keeps
every mail it is given, per recipient (``Postbox``). Mail *in* is handed to the gateway's inbound
handler (``EmailGateway.on_mail``) as the raw bytes a mail program would send, stamped as a
receiving server stamps them (``Authentication-Results``): the IMAP leg is left out so that dozens
of games fit in a test (tests/e2e/test_email_safety.py and test_mixed_game.py run it for real)."""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from dataclasses import dataclass
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from email.utils import formatdate, make_msgid

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from avalon.services.email_gateway.compose import Identity
from avalon.services.email_gateway.gateway import EmailGateway
from avalon.services.email_gateway.smtp import SmtpSender
from avalon.services.email_gateway.tokens import Tokens
from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.shared.bus import InProcessBus
from avalon.shared.narration.render import html_to_text
from tests.e2e.email_support import SECRET, links_of
from tests.e2e.mixed_support import mail_text, start_telegram, stop_telegram
from tests.fakes.telegram_api import FakeTelegram
from tests.mailservers.dovecot import free_port

DOMAIN = "example.test"
NARRATOR = f"narrator@{DOMAIN}"


@dataclass(frozen=True)
class Received:
    """One mail as its recipient's mail program shows it (read once, on arrival)."""

    message: EmailMessage
    message_id: str
    subject: str
    reply_to: str
    text: str  # the plain-text part, as the reader reads it
    html_text: str  # the HTML part, as text (a mail program may show that one instead)
    links: tuple[str, ...]  # the mailto: links of the HTML part


class Postbox:
    """aiosmtpd handler: every mail accepted, kept per recipient in arrival order."""

    def __init__(self) -> None:
        self.boxes: dict[str, list[Received]] = defaultdict(list)
        self.count = 0

    async def handle_DATA(self, server, session, envelope) -> str:
        message = message_from_bytes(envelope.original_content or envelope.content, policy=default)
        html = message.get_body(("html",))
        received = Received(message, str(message.get("Message-ID", "")), str(message.get("Subject", "")),
                            str(message.get("Reply-To", "")), mail_text(message),
                            html_to_text(html.get_content()) if html is not None else "", tuple(links_of(message)))
        for rcpt in envelope.rcpt_tos:
            self.boxes[rcpt.lower()].append(received)
        self.count += 1
        return "250 2.0.0 kept"


def _any_login(server, session, envelope, mechanism, auth_data) -> AuthResult:
    return AuthResult(success=True)


class Stack:
    """Engine + Telegram gateway + email gateway; ``mail_in`` is a player's mail arriving."""

    def __init__(self, fake, database_url: str) -> None:
        self.fake, self.url = fake, database_url
        self.postbox = Postbox()
        self.identity = Identity(NARRATOR, "Avalon")
        self._uids = itertools.count(1)

    async def start(self) -> None:
        self.smtp_port = free_port()
        self.controller = Controller(self.postbox, hostname="127.0.0.1", port=self.smtp_port,
                                     authenticator=_any_login, auth_require_tls=False, ready_timeout=10)
        await asyncio.to_thread(self.controller.start)
        self.store = Store(self.url)
        await self.store.migrate()
        self.bus = InProcessBus()
        await self.bus.start()
        await start_telegram(self)
        smtp = SmtpSender("127.0.0.1", self.smtp_port, "none", NARRATOR, "secret")
        self.email = EmailGateway(self.bus, self.store.engine, identity=self.identity, tokens=Tokens(SECRET),
                                  smtp=smtp, linger=0.2, first_delay=0.2, max_delay=2.0)
        await self.email.start()
        self.engine = EngineService(self.store, self.bus, DeadlineScheduler(self.bus), channels=channel_map())
        await self.engine.start()

    async def stop(self) -> None:
        await stop_telegram(self)
        await self.email.close()
        await self.engine.stop()
        await self.bus.close()
        await self.store.close()
        await asyncio.to_thread(self.controller.stop)

    async def idle(self, timeout: float = 30) -> None:
        """Both outboxes have sent what they hold."""
        await self.email.outbox.idle(timeout)
        await self.telegram.outbox.idle(timeout)

    def mails(self, address: str) -> list[Received]:
        return self.postbox.boxes.get(address.lower(), [])

    async def mail_in(self, sender: str, name: str, to: str, subject: str, body: str, *,
                      in_reply_to: Received | None = None, dmarc: str = "pass",
                      headers: dict[str, str] | None = None) -> str:
        """A mail from ``sender`` as the narrator's server receives it, read by the gateway; returns
        its Message-ID. ``dmarc`` is the receiving server's verdict on the From."""
        message = EmailMessage()
        message["Authentication-Results"] = f"mx.{DOMAIN}; dmarc={dmarc} header.from={sender.rpartition('@')[2]}"
        message["From"] = f"{name} <{sender}>"
        message["To"], message["Subject"] = to, subject
        message["Date"] = formatdate(localtime=True)
        message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2])
        if in_reply_to is not None:
            parent = in_reply_to.message_id.strip()
            message["In-Reply-To"] = parent
            message["References"] = " ".join([*str(in_reply_to.message.get("References", "")).split(), parent])
        for key, value in (headers or {}).items():
            del message[key]
            message[key] = value
        message.set_content(body)
        await self.email.on_mail(next(self._uids), bytes(message))
        return str(message["Message-ID"])


@pytest.fixture
async def stack(tmp_path):
    """The narrator of these tests, started, with an SQLite database of the test's own."""
    fake = await FakeTelegram().start()
    narrator = Stack(fake, f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}")
    await narrator.start()
    try:
        yield narrator
    finally:
        await narrator.stop()
        await fake.stop()
