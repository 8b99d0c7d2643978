"""Support for the email games: the narrator (engine + email gateway, in-process bus, SQLite)
against real Dovecot and SMTP on loopback, and scripted players who read their mail over IMAP
and answer over SMTP as a mail client does: a click on a mailto: link, or a typed reply with the
thread quoted below or above."""

from __future__ import annotations

import asyncio
import random
import re
import time
import urllib.parse
from dataclasses import dataclass, field
from email.message import EmailMessage

from avalon.services.email_gateway.compose import Identity
from avalon.services.email_gateway.gateway import EmailGateway
from avalon.services.email_gateway.imap import WINDOW, MailboxWatcher
from avalon.services.email_gateway.smtp import SmtpSender
from avalon.services.email_gateway.tokens import Tokens
from avalon.services.email_gateway.wording import Intent, parse
from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.shared.bus import InProcessBus
from avalon.shared.db import make_engine

SECRET = "a-test-secret-of-enough-length"
MAILTO = re.compile(r'href="(mailto:[^"]+)"')


class Narrator:
    """The engine and the email gateway in one process, as ``avalon run`` starts them."""

    def __init__(self, servers, database_url: str, *, linger: float = 0.2) -> None:
        self.servers = servers
        self.url = database_url
        self.linger = linger
        self.address = servers.add_user("narrator")

    async def start(self) -> None:
        self.store = Store(self.url)
        await self.store.migrate()
        self.bus = InProcessBus()
        await self.bus.start()
        self.engine = EngineService(self.store, self.bus, DeadlineScheduler(self.bus), channels=channel_map())
        await self.start_gateway()
        await self.engine.start()

    async def start_gateway(self) -> None:
        smtp = SmtpSender("127.0.0.1", self.servers.smtp_port, "none", self.address, "secret")
        self.database = make_engine(self.url, concurrency=WINDOW)  # the gateway's own, as EmailRunner's
        self.gateway = EmailGateway(self.bus, self.database, identity=Identity(self.address, "Avalon"),
                                    tokens=Tokens(SECRET), smtp=smtp, linger=self.linger, first_delay=0.2,
                                    max_delay=2.0)
        await self.gateway.start()
        self.watcher = MailboxWatcher("127.0.0.1", self.servers.imap_port, "none", self.address, "secret", "INBOX",
                                      self.gateway.store, self.gateway.on_mail, poll_interval=1.0)
        await self.watcher.start()

    async def stop_gateway(self) -> None:
        await self.watcher.close()
        await self.gateway.close()
        await self.database.dispose()

    async def stop(self) -> None:
        await self.stop_gateway()
        await self.engine.stop()
        await self.bus.close()
        await self.store.close()


async def wait_until(predicate, timeout: float, what: str, tick=None):
    """The value of ``await predicate()`` once truthy (``tick`` awaited before each look), or an
    AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if tick is not None:
            await tick()
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        await asyncio.sleep(0.2)


def links_of(message: EmailMessage) -> list[str]:
    html = message.get_body(("html",))
    if html is None:
        return []
    return [u.replace("&amp;", "&") for u in MAILTO.findall(html.get_content())]


def read_link(url: str) -> tuple[str, str]:
    """(subject, body) of a mailto: URL."""
    _, _, query = url.partition("?")
    fields = urllib.parse.parse_qs(query)
    return fields.get("subject", [""])[0], fields.get("body", [""])[0]


async def unseen(user, seen: set, mails: list) -> list[EmailMessage]:
    """The mails in ``user``'s inbox not seen before: marked seen and kept in ``mails``, in order."""
    fresh = [m for m in await user.inbox() if m["Message-ID"] not in seen]
    for m in fresh:
        seen.add(m["Message-ID"])
        mails.append(m)
    return fresh


@dataclass
class MailPlayer:
    """A player at their mail program: acts on the newest mail that offers choices."""

    user: object  # tests.mailservers.MailUser
    language: str
    mode: str  # click | below | above
    rng: random.Random
    seen: set = field(default_factory=set)
    acted_on: set = field(default_factory=set)
    mails: list = field(default_factory=list)
    picks: dict = field(default_factory=dict)  # phase -> players picked
    sword: dict = field(default_factory=dict)  # phase -> Excalibur's holder chosen
    sent: list = field(default_factory=list)  # (how, body)
    table: object = None  # () -> (players: id -> name, seats): the names the player reads in their mail

    async def new_mail(self) -> list[EmailMessage]:
        return await unseen(self.user, self.seen, self.mails)

    async def answer(self, message: EmailMessage, body: str, url: str | None = None) -> None:
        if self.mode == "click" and url is not None:
            await self.user.click(url)
        else:
            await self.user.reply(message, body, quote="above" if self.mode == "above" else "below")
        self.sent.append((self.mode if url is None or self.mode != "click" else "click", body))

    async def step(self) -> bool:
        """Act on the newest mail with choices, once; True if something was sent."""
        await self.new_mail()
        actionable = [m for m in self.mails if links_of(m)]
        if not actionable:
            return False
        latest = actionable[-1]
        if latest["Message-ID"] in self.acted_on:
            return False
        self.acted_on.add(latest["Message-ID"])
        choice = self.choose(latest)
        if choice is None:
            return False
        url, body = choice
        await self.answer(latest, body, url)
        return True

    def choose(self, message: EmailMessage) -> tuple[str, str] | None:
        options = []
        players, seats = self.table() if self.table else ({}, ())
        for url in links_of(message):
            _, body = read_link(url)
            intent = parse(body, players, seats)
            kind = intent.kind if isinstance(intent, Intent) else None
            target = intent.targets[0] if isinstance(intent, Intent) and intent.targets else None
            options.append((kind, url, body, target))
        kinds = {o[0] for o in options}
        if "join" in kinds:
            return next((u, b) for k, u, b, _ in options if k == "join")
        if "pick" in kinds:
            phase = self._phase(options)
            picked = self.picks.setdefault(phase, [])
            names = [(u, b, t) for k, u, b, t in options if k == "pick"]
            if "excalibur" in kinds and phase not in self.sword:
                url, body, target = self.rng.choice([(u, b, t) for k, u, b, t in options if k == "excalibur"])
                self.sword[phase] = target
                return url, body
            holder = self.sword.get(phase)
            if holder and holder not in picked:
                url, body, target = next(x for x in names if x[2] == holder)
            else:
                url, body, target = self.rng.choice([x for x in names if x[2] not in picked])
            picked.append(target)
            return url, body
        if kinds & {"approve", "reject"}:
            want = "approve" if self.rng.random() < 0.75 else "reject"
            return next((u, b) for k, u, b, _ in options if k == want)
        actions = [(u, b) for k, u, b, _ in options if k is not None]
        return self.rng.choice(actions) if actions else None

    @staticmethod
    def _phase(options) -> int:
        for _, _, body, _ in options:
            match = re.search(r"#(\d+)", body)
            if match:
                return int(match.group(1))
        return 0
