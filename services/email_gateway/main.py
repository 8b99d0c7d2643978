"""Running the email gateway: SMTP out, the IMAP mailbox in. ``services/app.py`` starts it: alone
on RabbitMQ (``avalon email``, compose) or in the embedded process when ``EMAIL_ADDRESS`` is set
(``avalon run``). A mail server that is down is waited for (the outbox keeps the mail, the
watcher reconnects); a missing setting is a ``StartupError``."""

from __future__ import annotations

import logging

from shared.config import Settings
from shared.db import make_engine, migrate
from shared.ops import readiness
from shared.runtime import StartupError

from .compose import Identity
from .gateway import EmailGateway
from .imap import MailboxWatcher
from .smtp import SmtpSender
from .tokens import Tokens

log = logging.getLogger(__name__)


class EmailRunner:
    def __init__(self, settings: Settings, bus, *, on_fatal=None) -> None:
        s = self.settings = settings
        if not s.email_address:
            raise StartupError("EMAIL_ADDRESS is required for the email gateway")
        if not s.email_secret or len(s.email_secret.encode()) < 16:
            raise StartupError("EMAIL_SECRET must be set to at least 16 random characters "
                               "(it signs each player's reply address)")
        if not s.imap_user or s.imap_password is None:
            raise StartupError("IMAP_USER and IMAP_PASSWORD are required: the narrator reads its replies there")
        self.bus = bus
        self.engine = make_engine(s.database_url)
        identity = Identity(s.email_address, s.email_name)
        smtp = SmtpSender(s.smtp_host, s.smtp_port, s.smtp_security, s.smtp_user, s.smtp_password)
        self.gateway = EmailGateway(bus, self.engine, identity=identity, tokens=Tokens(s.email_secret), smtp=smtp,
                                    default_time_zone=s.email_time_zone, linger=s.email_linger)
        self.watcher = MailboxWatcher(s.imap_host, s.imap_port, s.imap_security, s.imap_user, s.imap_password,
                                      s.imap_folder, self.gateway.store, self.gateway.on_mail,
                                      done_folder=s.imap_done_folder or None, poll_interval=s.imap_poll_interval)
        self.on_fatal = on_fatal
        readiness.register("email", reason="starting")

    async def start(self) -> None:
        await migrate(self.engine)
        await self.gateway.start()
        await self.watcher.start()
        readiness.register("email", check=lambda: None if self.watcher.connected else "connecting to the mailbox")
        s = self.settings
        log.info("email gateway ready: %s, SMTP %s:%s (%s), IMAP %s@%s:%s/%s (%s)", s.email_address, s.smtp_host,
                 s.smtp_port, s.smtp_security, s.imap_user, s.imap_host, s.imap_port, s.imap_folder, s.imap_security)

    async def stop(self) -> None:
        await self.watcher.close()
        await self.gateway.close()
        await self.engine.dispose()
        readiness.unregister("email")
