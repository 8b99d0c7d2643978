"""The mail fault world: `avalon engine` and `avalon email` as real processes on the real RabbitMQ
(a fresh bus prefix) and a fresh PostgreSQL database, a private Dovecot (IMAP + LMTP) and the
aiosmtpd SMTP server in front of it, and the switches the fault tests pull: SIGKILL the email
gateway, stop SMTP, stop Dovecot.

    async with MailWorld(amqp_url, prefix) as world:
        await world.smtp_outage(10)
"""

from __future__ import annotations

import asyncio
import imaplib
import os
import re
import shutil
import tempfile
import time
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from pathlib import Path

from avalon.services.engine.store import Store
from avalon.shared.bus.rabbit import RabbitBus
from tests.integration.engine_support import create_pg_database, drop_pg_database
from tests.faults.world import ServiceProcess
from tests.mailservers import require_mail_servers, start_mail_servers, stop_mail_servers

UID_RE = re.compile(rb"UID (\d+)")
SECRET = "a-fault-test-secret-of-enough-length"


class Mailbox:
    """A player's mail program reading its INBOX over one kept-open IMAP connection (imaplib, in a
    thread), fetching only what is new; while Dovecot is down it reads nothing and connects again."""

    def __init__(self, port: int, address: str, password: str = "secret") -> None:
        self.port, self.address, self.password = port, address, password
        self.imap: imaplib.IMAP4 | None = None
        self.last_uid = 0

    def _fetch(self) -> list[EmailMessage]:
        try:
            if self.imap is None:
                self.imap = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
                self.imap.login(self.address, self.password)
                self.imap.select("INBOX", readonly=True)
            _, found = self.imap.uid("SEARCH", f"UID {self.last_uid + 1}:*")
            uids = sorted(int(u) for u in (found[0] or b"").split() if int(u) > self.last_uid)
            if not uids:
                return []
            _, data = self.imap.uid("FETCH", ",".join(map(str, uids)), "(UID BODY.PEEK[])")
        except (OSError, imaplib.IMAP4.error, EOFError):
            self.close()
            return []
        fetched = sorted((int(m.group(1)), item[1]) for item in data
                         if isinstance(item, tuple) and (m := UID_RE.search(item[0])))
        if fetched:
            self.last_uid = fetched[-1][0]
        return [message_from_bytes(raw, policy=default) for _, raw in fetched]

    async def new_mail(self) -> list[EmailMessage]:
        return await asyncio.to_thread(self._fetch)

    def close(self) -> None:
        imap, self.imap = self.imap, None
        if imap is not None:
            try:
                imap.shutdown()
            except OSError:
                pass


class MailWorld:
    def __init__(self, amqp_url: str, prefix: str, *, linger: float = 0.3) -> None:
        require_mail_servers()
        self.amqp_url, self.prefix, self.linger = amqp_url, prefix, linger
        self.root = Path(tempfile.mkdtemp(prefix="avalon-mf-"))  # the services' logs
        self.mail_root = Path(tempfile.mkdtemp(prefix="avalon-mf-mail-"))  # Dovecot's (it opens it up)
        self.outages: list[tuple[str, float, float]] = []  # (what, down at, up at) in time.time()

    async def __aenter__(self) -> "MailWorld":
        self.url, self.db_name = await create_pg_database()
        self.servers = await start_mail_servers(self.mail_root)
        self.narrator = self.servers.add_user("narrator", "narrator-password")
        env = {"DATABASE_URL": self.url, "AMQP_URL": self.amqp_url, "BUS_PREFIX": self.prefix}
        mail = {"EMAIL_ADDRESS": self.narrator, "EMAIL_SECRET": SECRET, "EMAIL_LINGER": str(self.linger),
                "IMAP_POLL_INTERVAL": "1", "SMTP_HOST": "127.0.0.1", "SMTP_PORT": str(self.servers.smtp_port),
                "SMTP_SECURITY": "none", "SMTP_USER": self.narrator, "SMTP_PASSWORD": "narrator-password",
                "IMAP_HOST": "127.0.0.1", "IMAP_PORT": str(self.servers.imap_port), "IMAP_SECURITY": "none",
                "IMAP_USER": self.narrator, "IMAP_PASSWORD": "narrator-password"}
        self.engine = ServiceProcess("engine", env, self.root / "engine.log", "engine ready")
        self.gateway = ServiceProcess("email", {**env, **mail}, self.root / "email.log", "email gateway ready")
        self.store = Store(self.url)
        self.bus = RabbitBus(self.amqp_url, prefix=self.prefix)  # the test's own: options a host set elsewhere
        try:
            await self.engine.start()  # first: it declares the exchanges and queues
            await self.gateway.start()
            await self.bus.start()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        for service in (self.gateway, self.engine):
            await service.stop()
        await self.bus.close()
        await self.bus.delete_everything("email")
        await self.store.close()
        await stop_mail_servers(self.servers)
        await drop_pg_database(self.db_name)
        if exc[0] is not None:
            print(f"email gateway log:\n{self.gateway.tail(80)}\nengine log:\n{self.engine.tail(30)}\n"
                  f"Dovecot log:\n{self.servers.log_tail()}")
        if os.environ.get("AVALON_KEEP_LOGS"):  # to read after the run
            print(f"the services' logs are kept in {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.mail_root, ignore_errors=True)

    def mailbox(self, local_part: str) -> tuple[str, Mailbox]:
        address = self.servers.add_user(local_part)
        return address, Mailbox(self.servers.imap_port, address)

    # -- faults --------------------------------------------------------------------------------

    async def smtp_outage(self, seconds: float) -> None:
        await self._outage("SMTP", self.servers.stop_smtp, self.servers.start_smtp, seconds)

    async def imap_outage(self, seconds: float) -> None:
        await self._outage("IMAP", self.servers.stop_imap, self.servers.start_imap, seconds)

    async def _outage(self, what: str, stop, start, seconds: float) -> None:
        down = time.time()
        await stop()
        await asyncio.sleep(seconds)
        await start()
        self.outages.append((what, down, time.time()))
