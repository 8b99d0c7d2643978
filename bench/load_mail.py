"""The mail side of bench/load_bench.py, run in a process of its own: the loopback mail servers and
the scripted mail players of every table.

- Out: the gateway sends through an aiosmtpd server (tests/mailservers' SMTP server with its own
  handler): a mail to a player is recorded with its arrival time and handed to that player at once,
  parsed as a mail program would (players read nothing over IMAP: 700 IMAP logins would be the
  benchmark's own load, not the narrator's).
- In: a player answers over SMTP (AUTH as themself, as tests/mailservers' MailUser does: a reply
  quoting the thread, or a mailto: link sent unchanged), and the server hands the mail to the
  private Dovecot over LMTP, in the narrator's mailbox; the gateway's IMAP watcher reads it there.

A mail-only table: the host mails ``new game`` with the four addresses, each invitee follows the
join link (or replies ``join``), the host replies ``start`` once their mails have told of four
joins; then the leader types ``team A, B #N`` (the first seats the pick links offer), everyone
approves and plays success or the first choice offered. Invited players of a mixed table (the
Telegram host invites them) join and play the same way. A table is done when a mail offers choices
of phase ``phases`` or later (nobody answers them) or, with ``phases`` 0, tells the game ended.

An action's latency: from the player starting to send (SMTP submission included) to the first mail
reaching that player's address afterwards, both on this process's monotonic clock.
"""

from __future__ import annotations

import asyncio
import bisect
import random
import re
import shutil
import tempfile
import time
import types
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from email import message_from_bytes
from email.policy import default
from pathlib import Path

from load_services import answer  # bench/ is on the path: load_bench.py's own directory
from avalon.services.email_gateway import lexicon
from avalon.services.email_gateway.wording import link_body
from tests.e2e.email_support import links_of, read_link
from tests.e2e.mixed_support import mail_text
from tests.mailservers import MailUser, mailbox_of
from tests.mailservers.dovecot import Dovecot, free_port
from tests.mailservers.smtp import DeliverToDovecot, SmtpServer

DOMAIN = "example.test"
JOINED = re.compile(r"➕ (.+?) joined the game")
PICK = re.compile(r"^\S+ (.+?) #(\d+)$")
KINDS = {lexicon.main_word("en", k): k for k in ("join", "approve", "reject", "success", "fail", "pick",
                                                  "excalibur", "sheathe", "lady", "shoot", "accuse", "hand")}


def address(index: int, seat: int) -> str:
    return f"g{index}p{seat}@{DOMAIN}"


class LoadSmtp(DeliverToDovecot):
    """Mail for a mailbox of Dovecot's (the narrator's, the baseline's probe) goes on over LMTP as in
    the tests; mail for anyone else at the domain is recorded and handed to ``on_mail`` (in the SMTP
    server's thread) with its arrival time."""

    def __init__(self, lmtp_socket: Path, local: set[str], passwords: dict[str, str], on_mail) -> None:
        super().__init__(DOMAIN, lambda: passwords, lmtp_socket)
        self.local, self.on_mail = local, on_mail

    async def handle_RCPT(self, server, session, envelope, address: str, rcpt_options) -> str:
        if address.rpartition("@")[2].lower() != self.domain:
            return "550 5.7.1 relaying denied"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        now = time.monotonic()
        content = envelope.original_content or envelope.content
        content = content.encode() if isinstance(content, str) else content
        ours = [r for r in envelope.rcpt_tos if mailbox_of(r) in self.local]
        for rcpt in envelope.rcpt_tos:
            if mailbox_of(rcpt) not in self.local:
                self.on_mail(now, mailbox_of(rcpt), (envelope.mail_from or "").lower(), content)
        if not ours:
            return "250 2.0.0 recorded"
        envelope.rcpt_tos = ours
        return await super().handle_DATA(server, session, envelope)


@dataclass
class Seat:
    index: int
    user: MailUser
    mode: str  # click | below | above
    invites: list[str] = field(default_factory=list)  # a mail-only table's host: who to invite
    seats: int = 5
    joined: set = field(default_factory=set)  # names the host was told joined
    started: bool = False
    acted: set = field(default_factory=set)
    latest: object = None  # the newest mail


class MailWorld:
    def __init__(self, plan: list[tuple[int, str, list[str]]], phases: int, preset: str, narrator: str,
                 smtp_port: int, seed: int) -> None:
        """plan: (index, "mail" | "mixed", addresses) of each table with mail players (a mail-only
        table's host first)."""
        self.phases, self.preset, self.narrator = phases, preset, narrator
        servers = types.SimpleNamespace(smtp_port=smtp_port)
        rng = random.Random(seed)
        self.seats: dict[str, Seat] = {}
        self.tables: dict[int, list[Seat]] = {}
        self.hosts: list[Seat] = []
        for index, kind, addresses in plan:
            seats = [Seat(index, MailUser(servers, a), rng.choice(("click", "below", "above"))) for a in addresses]
            if kind == "mail":
                seats[0].invites, seats[0].seats = addresses[1:], len(addresses)
                self.hosts.append(seats[0])
            self.tables[index] = seats
            self.seats.update({s.user.address: s for s in seats})
        self.arrivals: dict[str, list[float]] = defaultdict(list)  # mailbox -> when each mail arrived
        self.actions: list[tuple[float, str, str]] = []  # (when, mailbox, kind)
        self.sent_wall: dict[str, list[float]] = defaultdict(list)  # mailbox -> time.time() of each action
        self.done: dict[int, float] = {}
        self.failures: list[str] = []
        self.mails = Counter()  # from the narrator, from others
        self.last_arrival = 0.0
        self.total = 1
        self._tasks: set[asyncio.Task] = set()

    def spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def start(self, t0: float, ramp: float) -> None:
        """Each mail-only table's host writes at t0 + its share of ``ramp``."""
        for host in sorted(self.hosts, key=lambda s: s.index):
            delay = t0 + ramp * host.index / self.total - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            subject = "new game" + ("" if self.preset == "classic" else f" {self.preset}")
            self.spawn(self.act(host, "new_game", lambda h=host, s=subject: h.user.send(
                self.narrator, s, "\n".join(h.invites) + "\n")))

    async def act(self, seat: Seat, kind: str, send) -> None:
        try:
            self.actions.append((time.monotonic(), seat.user.address, kind))
            self.sent_wall[seat.user.address].append(time.time())
            await send()
        except Exception as error:  # noqa: BLE001 - counted and reported; the run goes on
            self.failures.append(f"{seat.user.address} ({kind}): {error!r}")

    def answer(self, seat: Seat, message, kind: str, body: str, url: str | None) -> None:
        """Click the link, or reply typing its words (the thread quoted below or above)."""
        if seat.mode == "click" and url is not None:
            self.spawn(self.act(seat, kind, lambda: seat.user.click(url)))
        else:
            quote = "above" if seat.mode == "above" else "below"
            self.spawn(self.act(seat, kind, lambda: seat.user.reply(message, body, quote=quote)))

    # -- what the players receive ---------------------------------------------------------------

    def on_mail(self, now: float, box: str, sender: str, raw: bytes) -> None:
        """In the event loop (the SMTP server's thread hands each mail over)."""
        self.last_arrival = now
        self.arrivals[box].append(now)
        self.mails["narrator" if sender == self.narrator else "other"] += 1
        seat = self.seats.get(box)
        if seat is None:
            return
        try:
            self.read(seat, message_from_bytes(raw, policy=default))
        except Exception as error:  # noqa: BLE001 - counted and reported
            self.failures.append(f"{box} reading a mail: {error!r}")

    def read(self, seat: Seat, message) -> None:
        seat.latest = message
        text = mail_text(message)
        if seat.index in self.done:
            return
        if not self.phases and "🏁" in text:
            self.done[seat.index] = time.monotonic()
            return
        offers = []  # (kind, body, url, phase)
        for url in links_of(message):
            body = read_link(url)[1]
            kind = next((k for w, k in KINDS.items() if body == w or body.startswith(w + " ")), None)
            marker = re.search(r"#(\d+)$", body)
            offers.append((kind, body, url, int(marker.group(1)) if marker else None))
        phases = [p for *_, p in offers if p is not None]
        if self.phases and phases and max(phases) >= self.phases:
            self.done[seat.index] = time.monotonic()
            return
        if seat.invites and not seat.started:  # a mail-only table's host: start once everyone joined
            seat.joined.update(n for n in JOINED.findall(text) if n != seat.user.address.split("@")[0])
            if len(seat.joined) >= seat.seats - 1:
                seat.started = True
                self.answer(seat, message, "start", link_body("en", "start"), None)
        kinds = {k for k, *_ in offers}
        if "join" in kinds and "join" not in seat.acted:
            seat.acted.add("join")
            body, url = next((b, u) for k, b, u, _ in offers if k == "join")
            self.answer(seat, message, "join", body, url)
            return
        if not phases:
            return
        phase = max(phases)
        if "pick" in kinds and ("team", phase) not in seat.acted:
            seat.acted.add(("team", phase))
            names = [PICK.match(b).group(1) for k, b, _, p in offers if k == "pick" and p == phase]
            size = int(re.search(r"pick (\d+)", text).group(1))
            self.answer(seat, message, "team", link_body("en", "team", names[:size], phase), None)
        elif "approve" in kinds and ("vote", phase) not in seat.acted:
            seat.acted.add(("vote", phase))
            body, url = next((b, u) for k, b, u, p in offers if k == "approve")
            self.answer(seat, message, "vote", body, url)
        elif "success" in kinds and ("card", phase) not in seat.acted:
            seat.acted.add(("card", phase))
            body, url = next((b, u) for k, b, u, p in offers if k == "success")
            self.answer(seat, message, "card", body, url)
        elif kinds - {"pick", "approve", "reject", "success", "fail", None} and ("other", phase) not in seat.acted:
            seat.acted.add(("other", phase))
            kind, body, url, _ = next(o for o in offers if o[0] not in ("pick", "approve", "reject", None))
            self.answer(seat, message, kind, body, url)

    # -- what is reported -----------------------------------------------------------------------

    def progress(self) -> dict:
        return {"done": list(self.done), "last_arrival": self.last_arrival, "mails": self.mails["narrator"],
                "failures": len(self.failures)}

    def report(self) -> dict:
        latency: dict[str, list[float]] = defaultdict(list)
        for when, box, kind in self.actions:
            times = self.arrivals.get(box, [])
            i = bisect.bisect_right(times, when)
            latency[kind].append(times[i] - when if i < len(times) else float("nan"))
        return {"latency": dict(latency), "mails": dict(self.mails), "actions": len(self.actions),
                "sent_wall": dict(self.sent_wall),
                "failures": self.failures[:20], "failure_count": len(self.failures), "done": len(self.done),
                "tables": len(self.tables),
                "not_done": [i for i in self.tables if i not in self.done][:10]}


def mail_world_process(control, plan, phases: int, preset: str, seed: int, total: int) -> None:
    import uvloop

    uvloop.run(_serve(control, plan, phases, preset, seed, total))


async def _serve(control, plan, phases: int, preset: str, seed: int, total: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="avalon-load-"))
    dovecot = Dovecot(root, free_port())
    dovecot.write_config()
    narrator, probe = f"narrator@{DOMAIN}", f"probe@{DOMAIN}"
    passwords = {narrator: "secret", probe: "secret", f"sink@{DOMAIN}": "secret", f"pinger@{DOMAIN}": "secret"}
    passwords.update({a: "secret" for _, _, addresses in plan for a in addresses})
    for box in (narrator, probe):
        dovecot.add_user(box, "secret")
    await asyncio.to_thread(dovecot.start)
    loop = asyncio.get_running_loop()
    world: MailWorld | None = None

    def on_mail(now: float, box: str, sender: str, raw: bytes) -> None:  # the SMTP server's thread
        loop.call_soon_threadsafe(world.on_mail, now, box, sender, raw)
    smtp = SmtpServer(LoadSmtp(dovecot.lmtp_socket, {narrator, probe}, passwords, on_mail), free_port(), DOMAIN)
    await asyncio.to_thread(smtp.start)
    world = MailWorld(plan, phases, preset, narrator, smtp.port, seed)
    world.total = total
    control.send({"smtp_port": smtp.port, "imap_port": dovecot.imap_port, "narrator": narrator, "probe": probe,
                  "dovecot_pid": dovecot.process.pid})
    try:
        await answer(control, world)
    finally:
        await asyncio.to_thread(smtp.stop)
        await asyncio.to_thread(dovecot.stop)
        shutil.rmtree(root, ignore_errors=True)
    control.send(True)
