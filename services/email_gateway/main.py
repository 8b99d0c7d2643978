"""Running the email gateway: SMTP out, the IMAP mailbox in. ``services/app.py`` starts it: alone
on RabbitMQ (``avalon email``, compose) or in the embedded process when ``EMAIL_ADDRESS`` is set
(``avalon run``). A mail server that is down is waited for (the outbox keeps the mail, the
watcher reconnects, an SMTP probe retries with backoff) while ``/readyz`` names it; the settings
it cannot run without are ``problems``, which ``avalon`` says all at once before anything connects."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re

import aiosmtplib

from avalon.shared.config import Settings
from avalon.shared.db import make_engine, migrate
from avalon.shared.ops import readiness
from avalon.shared.runtime import BadSetting, StartupError, one_line, retry
from avalon.shared.throttle import from_settings as throttle_from_settings

from .compose import Identity
from .gateway import EmailGateway
from .imap import WINDOW, MailboxWatcher
from .smtp import PermanentFailure, SmtpSender
from .tokens import Tokens

log = logging.getLogger(__name__)


def problems(s: Settings) -> list[str]:
    """What the gateway cannot run without, every one at once (``avalon`` checks it before anything starts)."""
    found = []
    if not s.email_address:
        found.append("EMAIL_ADDRESS is not set: the narrator's own address, like narrator@example.org")
    if not s.email_secret or len(s.email_secret.encode()) < 16:
        found.append("EMAIL_SECRET must be set to at least 16 random characters (it signs each player's reply "
                     "address)")
    for name, value, what in (("SMTP_HOST", s.smtp_host, "the server the narrator sends through"),
                              ("IMAP_HOST", s.imap_host, "the server of the mailbox the narrator reads"),
                              ("IMAP_USER", s.imap_user, "the login of that mailbox"),
                              ("IMAP_PASSWORD", s.imap_password, "its password")):
        if not value:
            found.append(f"{name} is not set: {what}")
    return found


def check_settings(s: Settings) -> None:
    if found := problems(s):
        raise BadSetting(found)


class WatchedSmtp(SmtpSender):
    """The SMTP sender, and what ``/readyz`` says of it: probed at start until the server answers
    (and takes the login), then the outcome of the latest send."""

    problem: str | None = "not tried yet"

    async def send(self, message, **kwargs) -> None:
        try:
            await super().send(message, **kwargs)
        except PermanentFailure:
            self.problem = None  # the server answered: the message is at fault, not the server
            raise
        except Exception as error:
            self.problem = one_line(error)
            raise
        self.problem = None

    async def probe(self) -> None:
        async with self._lock:
            await self._connected()
        self.problem = None


class EmailRunner:
    def __init__(self, settings: Settings, bus, *, on_fatal=None) -> None:
        s = self.settings = settings
        check_settings(s)
        self.bus = bus
        self.engine = make_engine(s.database_url, concurrency=WINDOW)  # each mail in flight may hold a connection
        identity = Identity(s.email_address, s.email_name)
        self.smtp = WatchedSmtp(s.smtp_host, s.smtp_port, s.smtp_security, s.smtp_user, s.smtp_password)
        self.gateway = EmailGateway(bus, self.engine, identity=identity, tokens=Tokens(s.email_secret),
                                    smtp=self.smtp, default_time_zone=s.email_time_zone, linger=s.email_linger,
                                    throttle=throttle_from_settings(s, quiet_at_least=3600))
        self.imap_problem: str | None = None
        self.watcher = MailboxWatcher(s.imap_host, s.imap_port, s.imap_security, s.imap_user, s.imap_password,
                                      s.imap_folder, self.gateway.store, self.gateway.on_mail,
                                      done_folder=s.imap_done_folder or None, poll_interval=s.imap_poll_interval,
                                      on_error=self._imap_error, on_refused=self._refused)
        self.on_fatal = on_fatal
        self._probing: asyncio.Task | None = None
        readiness.register("email", reason="starting")

    def _refused(self, message: str) -> None:
        """A mail server refused the narrator's login: one line and exit 1 (as for any refused login)."""
        error = StartupError(f"{message} (check IMAP_USER and IMAP_PASSWORD)" if message.startswith("IMAP")
                             else message)
        if self.on_fatal is not None:
            self.on_fatal(error)
        else:
            log.error("%s", error)

    def _imap_error(self, message: str) -> None:
        self.imap_problem = re.sub(r"; retrying in .*$", "", message)

    def _not_ready(self) -> str | None:
        s, problems = self.settings, []
        if not self.watcher.connected:
            problems.append(self.imap_problem or f"connecting to the mailbox (IMAP {s.imap_host}:{s.imap_port})")
        if self.smtp.problem is not None:
            problems.append(f"SMTP {s.smtp_host}:{s.smtp_port}: {self.smtp.problem}")
        return "; ".join(problems) or None

    async def start(self) -> None:
        await migrate(self.engine)
        await self.gateway.start()
        await self.watcher.start()
        self._probing = asyncio.create_task(self._probe_smtp(), name="smtp-probe")
        readiness.register("email", check=self._not_ready)
        s = self.settings
        log.info("email gateway ready: %s, SMTP %s:%s (%s), IMAP %s@%s:%s/%s (%s)", s.email_address, s.smtp_host,
                 s.smtp_port, s.smtp_security, s.imap_user, s.imap_host, s.imap_port, s.imap_folder, s.imap_security)

    async def _probe_smtp(self) -> None:
        """Until the SMTP server first answers: one log line per try, with backoff."""
        s = self.settings

        def waiting(reason: str) -> None:
            self.smtp.problem = reason

        try:
            await retry(f"SMTP {s.smtp_host}:{s.smtp_port} unreachable", self.smtp.probe, log=log, on_wait=waiting,
                        transient=(OSError, asyncio.TimeoutError, aiosmtplib.SMTPConnectError,
                                   aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPTimeoutError))
        except aiosmtplib.SMTPAuthenticationError as refused:
            waiting(one_line(refused))
            self._refused(f"SMTP {s.smtp_host}:{s.smtp_port} refused SMTP_USER and SMTP_PASSWORD: "
                          f"{one_line(refused)}")
        except Exception as error:  # noqa: BLE001 - the sends will retry; /readyz says it meanwhile
            waiting(one_line(error))
            log.warning("SMTP %s:%s: %s", s.smtp_host, s.smtp_port, one_line(error))

    async def stop(self) -> None:
        if self._probing is not None:
            self._probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probing
        await self.watcher.close()
        await self.gateway.close()
        await self.engine.dispose()
        readiness.unregister("email")
