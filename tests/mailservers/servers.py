"""MailServers: a private Dovecot and the SMTP server in front of it, for one test (or module),
with switches that make them misbehave for the fault tests."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from tests.mailservers.dovecot import Dovecot, dovecot_available, free_port
from tests.mailservers.smtp import REFUSALS, DeliverToDovecot, SmtpServer, mailbox_of


@dataclass
class MailServers:
    root: Path  # temp dir holding config, mail, logs
    imap_port: int
    smtp_port: int  # our SMTP server (aiosmtpd), delivering to Dovecot over LMTP
    domain: str  # "example.test"
    dovecot: Dovecot = field(repr=False)
    smtp: SmtpServer = field(repr=False)
    passwords: dict[str, str] = field(default_factory=dict, repr=False)  # address -> password
    imaps_port: int | None = None  # with tls=True: IMAP over TLS; STARTTLS is then offered on imap_port
    cert: Path | None = None  # with tls=True: the self-signed certificate (CN localhost, IP 127.0.0.1)

    def address(self, local_part: str) -> str:
        return f"{local_part}@{self.domain}"

    def add_user(self, local_part: str, password: str = "secret") -> str:
        """Create a mailbox (it exists at once, for IMAP and for mail to it) and return its address."""
        address = self.address(local_part).lower()
        self.dovecot.add_user(address, password)
        self.passwords[address] = password
        return address

    def deliver_directly(self, address: str, raw: bytes) -> None:
        """Put a mail straight into address's maildir, as a local delivery agent would: mail that
        arrives while IMAP is down (the SMTP server needs Dovecot's LMTP, so it answers 451 then)."""
        self.dovecot.deliver_directly(mailbox_of(address), raw)

    def refuse_recipient(self, address: str, code: Literal[451, 550] | None) -> None:
        """From now on SMTP answers RCPT TO for address (and its plus-addresses, when address is a
        plain mailbox) with '451 try later' or '550 no such user'; None accepts it again."""
        if code is None:
            self.smtp.handler.refusals.pop(address.lower(), None)
        else:
            self.smtp.handler.refusals[address.lower()] = REFUSALS[code]

    def bounce_recipient(self, address: str, bouncing: bool = True) -> None:
        """From now on mail to address's mailbox is accepted, then returned to its sender with a
        delivery report quoting its headers (a full or broken mailbox behind a relay); False: delivered again."""
        if bouncing:
            self.smtp.handler.bouncing.add(mailbox_of(address))
        else:
            self.smtp.handler.bouncing.discard(mailbox_of(address))

    async def stop_smtp(self) -> None:
        await asyncio.to_thread(self.smtp.stop)

    async def start_smtp(self) -> None:
        await asyncio.to_thread(self.smtp.start)

    async def stop_imap(self) -> None:
        """Stop Dovecot (IMAP and LMTP): connections drop, mail sent meanwhile is refused with 451."""
        await asyncio.to_thread(self.dovecot.stop)

    async def start_imap(self) -> None:
        """Start Dovecot again on the same port, with the same users and mail."""
        await asyncio.to_thread(self.dovecot.start)

    def log_tail(self, lines: int = 30) -> str:
        return self.dovecot.log_tail(lines)


async def start_mail_servers(root: Path, domain: str = "example.test", *, tls: bool = False) -> MailServers:
    """Start Dovecot and the SMTP server with their files under root (which every user must be
    able to reach: tempfile.mkdtemp() is fine, pytest's tmp_path is not). tls: Dovecot also
    serves TLS, with a self-signed certificate (needs openssl)."""
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    dovecot = Dovecot(root, free_port(), free_port() if tls else None)
    dovecot.write_config()
    await asyncio.to_thread(dovecot.start)
    passwords: dict[str, str] = {}
    smtp = SmtpServer(DeliverToDovecot(domain, lambda: passwords, dovecot.lmtp_socket), free_port(), domain)
    try:
        await asyncio.to_thread(smtp.start)
    except BaseException:
        await asyncio.to_thread(dovecot.stop)
        raise
    return MailServers(root, dovecot.imap_port, smtp.port, domain.lower(), dovecot, smtp, passwords,
                       imaps_port=dovecot.imaps_port, cert=dovecot.cert if tls else None)


async def stop_mail_servers(servers: MailServers) -> None:
    await asyncio.to_thread(servers.smtp.stop)
    await asyncio.to_thread(servers.dovecot.stop)


def require_mail_servers() -> None:
    """Skip the calling test when Dovecot cannot run here; fail instead under AVALON_REQUIRE_MAIL=1."""
    reason = dovecot_available()
    if reason is None:
        return
    if os.environ.get("AVALON_REQUIRE_MAIL") == "1":
        pytest.fail(f"the mail servers are required here (AVALON_REQUIRE_MAIL=1) but {reason}", pytrace=False)
    pytest.skip(f"no mail servers for this test: {reason}")


@pytest.fixture
async def mail_servers(request):
    """A fresh Dovecot + SMTP pair for one test (they start in a fraction of a second). Indirect
    parametrization with {"tls": True} adds TLS (see start_mail_servers)."""
    require_mail_servers()
    root = Path(tempfile.mkdtemp(prefix="avalon-mail-"))
    servers = await start_mail_servers(root, **getattr(request, "param", {}))
    try:
        yield servers
    finally:
        await stop_mail_servers(servers)
        print(f"Dovecot log ({root}):\n{servers.log_tail()}")  # shown only when the test failed
        shutil.rmtree(root, ignore_errors=True)


__all__ = ["MailServers", "mail_servers", "mailbox_of", "require_mail_servers", "start_mail_servers",
           "stop_mail_servers"]
