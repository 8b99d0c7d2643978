"""Scripted 5-player mail games for the fault tests: each player reads their INBOX over IMAP and
answers the narrator's newest offer by typing a reply (quoting the thread), sent over SMTP; a
reply the SMTP server does not accept (it is down, or Dovecot behind it is) is sent again until it
is. Every accepted reply is written down: that is a move the narrator owes the player."""

from __future__ import annotations

import asyncio
import random
import re
import time
from dataclasses import dataclass, field
from email.message import EmailMessage

import aiosmtplib

from avalon.shared.protocol import CommandEnvelope
from tests.e2e.email_support import links_of, read_link
from tests.faults.mail_world import Mailbox, MailWorld
from tests.mailservers import MailUser

CODE = re.compile(r"\bmail-[a-z0-9]{7}\b")
PHASE = re.compile(r"#(\d+)\s*$")
EXAMPLE_TEAM = re.compile(r"“team ([^”#]+)”")


def text_of(message: EmailMessage) -> str:
    part = message.get_body(("plain",))
    return part.get_content().replace("\r\n", "\n") if part is not None else ""


@dataclass
class Sent:
    """A reply the SMTP server accepted: the narrator must act on it once."""

    player: str  # mail:<address>
    message_id: str  # without <>
    body: str
    at: float


@dataclass
class Player:
    address: str
    mailbox: Mailbox
    user: MailUser
    rng: random.Random
    mails: list[EmailMessage] = field(default_factory=list)
    acted: int = -1  # the last phase acted on
    votes_seen: int = 0
    skip_vote: int | None = None  # the n-th vote (1-based) this player lets run out (a deadline game)

    @property
    def id(self) -> str:
        return f"mail:{self.address}"


class MailTable:
    """One game: the host opens it by mail, four friends join by replying, everyone plays it out."""

    def __init__(self, world: MailWorld, n: int, sent: list[Sent], *, timers: dict | None = None,
                 seed: int = 0) -> None:
        self.world, self.n, self.sent, self.timers = world, n, sent, timers
        rng = random.Random(seed)
        self.players: list[Player] = []
        for name in ("host", "ann", "bob", "cleo", "dan"):
            address, mailbox = world.mailbox(f"{name}{n}")
            self.players.append(Player(address, mailbox, MailUser(world.servers, address), random.Random(rng.random())))
        if timers:  # one friend lets the second vote run out: that phase must end by its deadline
            self.players[1 + n % 4].skip_vote = 2
        self.code: str | None = None
        self.over = False

    @property
    def host(self) -> Player:
        return self.players[0]

    async def send(self, player: Player, body: str, reply_to: EmailMessage | None = None) -> None:
        """A reply to ``reply_to`` (the thread quoted below), else a new mail to the narrator, sent
        until the SMTP server accepts it (it may be down): then it is a move the narrator owes."""
        while True:
            try:
                if reply_to is not None:
                    message_id = await player.user.reply(reply_to, body, quote="below")
                else:
                    message_id = await player.user.send(self.world.narrator, "new game", body)
                break
            except (aiosmtplib.SMTPException, OSError, asyncio.TimeoutError):
                await asyncio.sleep(0.5)
        self.sent.append(Sent(player.id, message_id.strip("<>"), body, time.time()))

    async def open(self) -> None:
        friends = "\n".join(p.address for p in self.players[1:])
        await self.send(self.host, f"Let's play!\n\n{friends}\n")

    async def play(self, timeout: float, tick: float = 0.4, look: float = 2.0) -> None:
        """Read and answer mail every ``tick`` s until the game is over by the engine's own record
        (looked up every ``look`` s: whether everyone has joined, whether the game has ended)."""
        deadline = time.monotonic() + timeout
        started, looked = False, 0.0
        while True:
            await asyncio.gather(*(self.turn(p) for p in self.players))
            if self.code and time.monotonic() - looked > look:
                looked = time.monotonic()
                loaded = await self.world.store.load(self.code)
                if loaded is not None and not started and len(loaded.state.players) == 5:
                    await self.start()
                    started = True
                elif loaded is not None and started and loaded.state.over:
                    self.over = True
                    return
            assert time.monotonic() < deadline, f"game {self.code} did not end in {timeout} s"
            await asyncio.sleep(tick)

    async def start(self) -> None:
        if self.timers:  # short deadlines: options a host sets in the lobby (by mail there is no word for it)
            from avalon.services.engine.rules import Options
            from avalon.shared.game.options import Timers

            options = Options.preset_defaults("classic", timers=Timers(**self.timers)).to_dict()
            await self.world.bus.send_command(CommandEnvelope(
                message_id=f"options-{self.code}", game_id=self.code, actor=self.host.id, channel="test",
                command={"type": "change_options", "options": options}))
        await self.send(self.host, "start", self.host.mails[-1])

    async def read(self, player: Player) -> list[EmailMessage]:
        fresh = await player.mailbox.new_mail()
        player.mails += fresh
        return fresh

    async def turn(self, player: Player) -> None:
        fresh = await self.read(player)
        for message in fresh:
            if self.code is None and (found := CODE.search(str(message["Subject"]) + text_of(message))):
                self.code = found.group()
        offers = [m for m in fresh if links_of(m)]
        if not offers:
            return
        latest = offers[-1]
        choices = [read_link(url)[1] for url in links_of(latest)]
        if choices[0] == "join":  # an invitation
            if player.acted < 0:
                player.acted = 0
                await self.send(player, "join", latest)
            return
        phases = {int(m.group(1)) for c in choices if (m := PHASE.search(c))}
        if len(phases) != 1:
            return
        phase = phases.pop()
        if phase <= player.acted:
            return  # acted on it already (a mail sent again, or a refusal repeating the choices)
        player.acted = phase
        body = self.choose(player, latest, choices, phase)
        if body is not None:
            await self.send(player, body, latest)

    def choose(self, player: Player, message: EmailMessage, choices: list[str], phase: int) -> str | None:
        kinds = {c.split()[0]: c for c in choices}
        rng = player.rng
        if "pick" in kinds:
            names = [c.split()[1] for c in choices if c.startswith("pick ")]
            example = EXAMPLE_TEAM.search(text_of(message))
            size = len(example.group(1).split(",")) if example else 2
            return f"team {', '.join(rng.sample(names, size))} #{phase}"
        if "approve" in kinds:
            player.votes_seen += 1
            if player.votes_seen == player.skip_vote:
                return None  # lets the deadline pass
            return kinds["approve"] if rng.random() < 0.8 else kinds["reject"]
        if "success" in kinds:
            return kinds["fail"] if "fail" in kinds and rng.random() < 0.5 else kinds["success"]
        if "shoot" in kinds:
            return rng.choice([c for c in choices if c.startswith("shoot ")])
        return None
