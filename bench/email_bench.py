"""Email gateway benchmark against real mail servers on loopback. Not a test: it prints numbers.

Three processes, so that the narrator's numbers are the narrator's: this one runs the narrator
(engine + email gateway on an in-process bus, SQLite by default, as ``avalon run``); a second the
mail servers of tests/mailservers (a private Dovecot for IMAP + LMTP, and the aiosmtpd SMTP
server delivering to it); a third the scripted players. Timestamps are time.monotonic()
(CLOCK_MONOTONIC, one clock for every process): each LMTP delivery as it completes (a mail
"landed" in a mailbox), the gateway's handing of each mail to SMTP (``gateway.smtp.send``: it
"leaves"), and the gateway's reading of a mail (``inbound.on_mail``, once the IMAP watcher has
fetched it).

1. baseline, no narrator: a user mails an echo bot (the project's IMAP watcher + SMTP sender
   answering every mail at once): the floor under the narrator's reaction time.
2. one 7-player game (Lady of the Lake + Excalibur; replies typed in six languages, quoted
   below or above, or mailto: clicks): the mails each player received, and for every reply that
   landed in the narrator's mailbox the time to the next mail handed to SMTP, to anyone, and to
   the player who replied (when one leaves before that player's next reply lands).
3. N concurrent 5-player games (players answer as soon as a mail lands), each from the host's
   "new game" mail until its phase --phases opens (3: the lobby, the first proposal and its vote;
   0: to the end), at most --max-seconds: mails/s, commands, errors, CPU, the narrator's memory.

Players read their mail from their maildir when the SMTP server reports its delivery (500 IMAP
logins would exceed Dovecot's process limit) and answer over SMTP as a mail program does.

    python bench/email_bench.py [--games 100] [--players 5] [--seed 1] [--phases 3] [--linger 1.0]
                                [--database sqlite|postgres] [--tracemalloc] [--profile FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import cProfile
import gc
import logging
import multiprocessing
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
import types
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import default
from email.utils import getaddresses
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from avalon.services.email_gateway.imap import MailboxWatcher, MemoryStateStore
from avalon.services.email_gateway.smtp import SmtpSender
from avalon.services.email_gateway.wording import Intent, link_body, parse
from avalon.shared import ops
from tests.e2e.email_support import MailPlayer, Narrator, links_of
from tests.integration.engine_support import create_pg_database, drop_pg_database
from tests.mailservers import (
    MailUser,
    dovecot_available,
    mailbox_of,
    start_mail_servers,
    stop_mail_servers,
)

SEVEN = [("host", "en", "below"), ("anna", "ru", "above"), ("bao", "vi", "click"), ("claire", "fr", "below"),
         ("daan", "nl", "click"), ("dara", "fa", "above"), ("eve", "en", "click")]
HEADERS = BytesParser(policy=default)
SPAWN = multiprocessing.get_context("spawn")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def ms(values: list[float]) -> str:
    return f"p50 {1000 * pct(values, 0.5):7.1f} ms  p99 {1000 * pct(values, 0.99):7.1f} ms  (n={len(values)})"


def message_id(raw: bytes) -> str:
    return str(HEADERS.parsebytes(raw, headersonly=True).get("Message-ID", "")).strip()


def spread(counts: list[int]) -> str:
    return f"min {min(counts)}  median {statistics.median(counts):g}  max {max(counts)}  total {sum(counts)}"


# --- the mail servers' process -----------------------------------------------------------------

def mail_servers_process(root: str, control, landed_queue) -> None:
    asyncio.run(_mail_servers(Path(root), control, landed_queue))


async def _mail_servers(root: Path, control, landed_queue) -> None:
    servers = await start_mail_servers(root)
    landed: list[tuple] = []
    handler = servers.smtp.handler
    deliver = handler._lmtp

    def lmtp(mail_from: str, rcpt: str, raw: bytes) -> None:  # in the SMTP server's thread
        deliver(mail_from, rcpt, raw)
        entry = (time.monotonic(), mail_from.lower(), mailbox_of(rcpt), message_id(raw))
        landed.append(entry)
        landed_queue.put(entry[2])
    handler._lmtp = lmtp
    landed_queue.cancel_join_thread()  # what nobody reads after the players stopped must not hold up the exit
    control.send((servers.imap_port, servers.smtp_port, servers.domain, str(servers.dovecot.mail_dir)))
    while (request := await asyncio.to_thread(control.recv))[0] != "stop":
        if request[0] == "add":
            control.send([servers.add_user(local) for local in request[1]])
        elif request[0] == "landed":
            control.send(list(landed))
    await stop_mail_servers(servers)
    control.send("stopped")


class MailServers:
    """The handle on the mail servers' process (what Narrator and MailUser need of tests.mailservers)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="avalon-bench-"))
        self.control, theirs = SPAWN.Pipe()
        self.landed_queue = SPAWN.Queue()
        self.process = SPAWN.Process(target=mail_servers_process, args=(str(self.root), theirs, self.landed_queue),
                                     daemon=True)
        self.process.start()
        self.imap_port, self.smtp_port, self.domain, self.mail_dir = self.control.recv()

    def add_user(self, local: str) -> str:
        return self.add_users([local])[0]

    def add_users(self, locals_: list[str]) -> list[str]:
        self.control.send(("add", locals_))
        return self.control.recv()

    def landed(self) -> list[tuple[float, str, str, str]]:
        """(when, envelope sender, mailbox, Message-ID) of every delivery so far."""
        self.control.send(("landed",))
        return self.control.recv()

    def stop(self) -> None:
        self.control.send(("stop",))
        self.control.recv()
        self.process.join(15)
        shutil.rmtree(self.root, ignore_errors=True)


# --- the players' process ----------------------------------------------------------------------

@dataclass
class BenchPlayer(MailPlayer):
    """MailPlayer reading its maildir when a delivery to it is reported; types replies in its language."""

    box: list = field(default_factory=list)  # its maildir's new/ and cur/
    read: set = field(default_factory=set)
    choices: dict = field(default_factory=dict)  # Message-ID -> its mailto: links
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    failures: int = 0
    greet: bool = False  # first say its language in a reply to the invitation
    size: int = 0  # for a host: the number of players it starts the game with
    started: bool = False

    async def new_mail(self) -> list[EmailMessage]:
        found = []
        for directory in self.box:
            for entry in os.scandir(directory):
                if entry.name.split(":")[0] not in self.read:
                    self.read.add(entry.name.split(":")[0])
                    found.append((entry.stat().st_mtime_ns, entry.name, entry.path))
        fresh = [message_from_bytes(Path(path).read_bytes(), policy=default) for *_, path in sorted(found)]
        for m in fresh:
            self.seen.add(m["Message-ID"])
            self.mails.append(m)
            self.choices[m["Message-ID"]] = links_of(m)
        return fresh

    async def step(self) -> bool:
        """MailPlayer.step, reading each mail's links once."""
        await self.new_mail()
        actionable = [m for m in self.mails if self.choices[m["Message-ID"]]]
        if not actionable or actionable[-1]["Message-ID"] in self.acted_on:
            return False
        self.acted_on.add(actionable[-1]["Message-ID"])
        choice = self.choose(actionable[-1])
        if choice is not None:
            await self.answer(actionable[-1], choice[1], choice[0])
        return choice is not None

    async def answer(self, message, body, url=None):
        if self.mode != "click" or url is None:
            players, seats = self.table()
            intent = parse(body, players, seats)
            if isinstance(intent, Intent):
                body = link_body(self.language, intent.kind, [players[t] for t in intent.targets], intent.phase_id)
        await super().answer(message, body, url)

    async def run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self.wake.wait(), 2.0)
            except TimeoutError:
                pass
            self.wake.clear()
            try:
                if self.greet and (fresh := await self.new_mail()):
                    self.greet = False
                    await self.user.reply(fresh[-1], f"language {self.language}", quote="below")
                await self.step()
                if self.size and not self.started and len(self.table()[0]) == self.size and self.mails:
                    self.started = True
                    await self.user.reply(self.mails[-1], link_body("en", "start"), quote="below")
            except Exception as error:  # noqa: BLE001 - counted and reported; the player carries on
                self.failures += 1
                logging.getLogger("bench").warning("player %s: %s", self.user.address, error)


def players_process(ports, narrator: str, games: list, seed: int, landed_queue, told, results) -> None:
    asyncio.run(_players(ports, narrator, games, seed, landed_queue, told, results))


async def _players(ports, narrator: str, games: list, seed: int, landed_queue, told_queue, results) -> None:
    """games: [(options, [(address, language, mode), ...]), ...], the host first."""
    imap_port, smtp_port, _domain, mail_dir = ports
    servers = types.SimpleNamespace(imap_port=imap_port, smtp_port=smtp_port)
    rng, loop = random.Random(seed), asyncio.get_running_loop()
    known: dict[str, tuple[dict, tuple]] = {}  # host -> (players: id -> name, seats), from the narrator
    everyone: dict[str, BenchPlayer] = {}
    tables: dict[str, list[asyncio.Task]] = {}  # host -> its game's players at work
    stop = asyncio.Event()
    for options, seats in games:
        host = seats[0][0]
        for address, language, mode in seats:
            local, _, domain = address.partition("@")
            player = BenchPlayer(MailUser(servers, address), language, mode, random.Random(rng.random()),
                                 box=[Path(mail_dir, domain, local, "new"), Path(mail_dir, domain, local, "cur")],
                                 greet=mode == "click" and language != "en",
                                 size=len(seats) if address == host else 0)
            player.table = lambda host=host: known.get(host, ({}, ()))
            everyone[address] = player

    def told(item) -> None:
        if item[0] == "stop":
            stop.set()
        elif item[0] == "done":  # the game went as far as measured: its players stop
            for task in tables[item[1]]:
                task.cancel()
        else:
            _, host, players, seats = item
            known[host] = (players, tuple(seats))
            everyone[host].wake.set()

    def listen(queue, handle) -> None:
        while True:
            item = queue.get()
            loop.call_soon_threadsafe(handle, item)
            if item == ("stop",):
                return
    threading.Thread(target=listen, args=(told_queue, told), daemon=True).start()
    threading.Thread(target=listen, args=(landed_queue, lambda box: box in everyone and everyone[box].wake.set()),
                     daemon=True).start()
    for _, seats in games:
        tables[seats[0][0]] = [asyncio.create_task(everyone[a].run()) for a, _, _ in seats]
    tasks = [task for group in tables.values() for task in group]
    await asyncio.gather(*(everyone[seats[0][0]].user.send(narrator, "new game", f"{options}\n" + "\n".join(
        a for a, _, _ in seats[1:]) + "\n") for options, seats in games))
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    results.send({a: (p.failures, sorted({how for how, _ in p.sent})) for a, p in everyone.items()})


class Players:
    """The handle on the players' process; tells it each game's table (who sits, by which name)."""

    def __init__(self, servers: MailServers, narrator, games: list, seed: int, phases: int) -> None:
        self.narrator, self.hosts, self.phases = narrator, {seats[0][0] for _, seats in games}, phases
        self.tables = SPAWN.Queue()
        self.results, theirs = SPAWN.Pipe()
        ports = (servers.imap_port, servers.smtp_port, servers.domain, servers.mail_dir)
        self.process = SPAWN.Process(target=players_process, args=(ports, narrator.address, games, seed,
                                                                   servers.landed_queue, self.tables, theirs),
                                     daemon=True)
        self.process.start()
        self.told: dict[str, tuple] = {}
        self.done: set[str] = set()
        self.pusher = asyncio.create_task(self.push())

    async def push(self) -> None:
        gw = self.narrator.gateway
        while True:
            names = gw.roster.names()
            for game in list(gw.games.values()):
                host = game.table.seats.host[len("mail:"):]
                if host not in self.hosts or host in self.done:
                    continue
                players = game.table.seats.players
                table = ({p: names.get(p, p) for p in players}, list(players))
                if self.told.get(host) != table:
                    self.told[host] = table
                    self.tables.put(("table", host, *table))
                if self.finished(game):
                    self.done.add(host)
                    self.tables.put(("done", host))
            await asyncio.sleep(0.2)

    def finished(self, game) -> bool:
        return game.table.over or bool(self.phases) and game.table.turn.phase_id >= self.phases

    def games(self) -> list:
        return [g for g in self.narrator.gateway.games.values() if g.table.seats.host[len("mail:"):] in self.hosts]

    async def stop(self) -> dict:
        self.pusher.cancel()
        self.tables.put(("stop",))
        found = await asyncio.to_thread(self.results.recv)
        self.process.join(15)
        return found

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()


# --- the narrator's process (this one) ---------------------------------------------------------

class Taps:
    """When the gateway (or the echo bot) handed each mail to SMTP, and read each mail."""

    def __init__(self) -> None:
        self.sends: list[tuple[float, str]] = []  # (when, mailbox)
        self.send_time: list[float] = []  # how long each SmtpSender.send took (its lock included)
        self.transaction_time: list[float] = []  # how long the SMTP transaction took (inside the lock)
        self.fetched: dict[str, float] = {}  # Message-ID -> when the gateway got it from the watcher
        self.read_time: list[float] = []  # how long the gateway took over each mail (inbound.on_mail)

    def on_sends(self, smtp) -> None:
        original = smtp.send

        async def send(message, **kw):
            start = time.monotonic()
            self.sends.append((start, mailbox_of(getaddresses([str(message["To"])])[0][1])))
            await original(message, **kw)
            self.send_time.append(time.monotonic() - start)
        smtp.send = send
        transaction = smtp._transaction

        async def timed(*a, **kw):
            start = time.monotonic()
            await transaction(*a, **kw)
            self.transaction_time.append(time.monotonic() - start)
        smtp._transaction = timed

    def on_reading(self, inbound) -> None:
        original = inbound.on_mail

        async def on_mail(uid: int, raw: bytes) -> None:
            start = time.monotonic()
            self.fetched.setdefault(message_id(raw), start)
            await original(uid, raw)
            self.read_time.append(time.monotonic() - start)
        inbound.on_mail = on_mail


def reactions(taps: Taps, landed: list, box: str) -> tuple[list[float], list[float], list[float], int, list[float]]:
    """For each mail that landed in ``box``: landed -> read by the gateway, landed -> next mail handed to
    SMTP (to anyone), landed -> next mail to its sender, counted only when that leaves before the
    sender's next mail lands (else the reply is counted as "silent"), and read -> next mail to anyone."""
    sends = sorted(taps.sends)
    times = [t for t, _ in sends]
    to: dict[str, list[float]] = {}
    for t, mailbox in sends:
        to.setdefault(mailbox, []).append(t)
    replies = sorted(e for e in landed if e[2] == box)
    by_sender: dict[str, list[float]] = {}
    for t, sender, _, _ in replies:
        by_sender.setdefault(sender, []).append(t)
    fetched, anyone, replier, silent, inside = [], [], [], 0, []
    for t, sender, _, mid in replies:
        i = bisect.bisect_right(times, t)
        if mid in taps.fetched:
            fetched.append(taps.fetched[mid] - t)
            j = bisect.bisect_right(times, taps.fetched[mid])
            if j < len(sends):
                inside.append(sends[j][0] - taps.fetched[mid])
        if i < len(sends):
            anyone.append(sends[i][0] - t)
        later = by_sender[sender]
        after = later[bisect.bisect_right(later, t)] if bisect.bisect_right(later, t) < len(later) else float("inf")
        theirs = to.get(sender, [])
        k = bisect.bisect_right(theirs, t)
        if k < len(theirs) and theirs[k] < after:
            replier.append(theirs[k] - t)
        else:
            silent += 1
    return fetched, anyone, replier, silent, inside


def commands() -> dict[str, int]:
    get = ops.REGISTRY.get_sample_value
    return {r: int(get("avalon_commands_total", {"result": r}) or 0) for r in ("applied", "rejected", "ignored",
                                                                                "duplicate")}


def cpu(pid: int, tree: bool = True) -> float:
    """CPU seconds (user + system) of a process so far, with its descendants' (live or reaped) when tree."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total = sum(int(f) for f in fields[11:15 if tree else 13]) / os.sysconf("SC_CLK_TCK")
        for task in Path(f"/proc/{pid}/task").iterdir() if tree else ():
            total += sum(cpu(int(child)) for child in (task / "children").read_text().split())
    except OSError:
        return 0.0
    return total


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def deep_size(*roots) -> int:
    """Bytes of the objects reachable from roots (classes, modules and functions not followed)."""
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
    seen, stack, total = set(), list(roots), 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


class Counting(logging.Handler):
    count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


COUNTER = Counting(logging.WARNING)


async def baseline(n: int) -> list[float]:
    """No narrator: ``ping`` mails ``echo``, a MailboxWatcher whose handler answers at once through an
    SmtpSender. Returns landed -> answer handed to SMTP, the floor under the narrator's reaction."""
    servers = MailServers()
    ping_address, echo = servers.add_users(["ping", "echo"])
    ping = MailUser(servers, ping_address)
    smtp, taps = SmtpSender("127.0.0.1", servers.smtp_port, "none", echo, "secret"), Taps()
    taps.on_sends(smtp)

    async def answer(uid: int, raw: bytes) -> None:
        taps.fetched[message_id(raw)] = time.monotonic()
        reply = EmailMessage()
        reply["From"], reply["To"], reply["Subject"] = echo, ping_address, "pong"
        reply.set_content("pong")
        await smtp.send(reply)
    watcher = MailboxWatcher("127.0.0.1", servers.imap_port, "none", echo, "secret", "INBOX", MemoryStateStore(),
                             answer, poll_interval=1.0)
    await watcher.start()
    submit, starts = [], []
    try:
        while not watcher.connected:
            await asyncio.sleep(0.05)
        for i in range(n):
            starts.append(time.monotonic())
            await ping.send(echo, f"ping {i}", "ping")
            submit.append(time.monotonic() - starts[-1])
            while len(taps.send_time) <= i:  # the echo's send returns once the SMTP server delivered it
                await asyncio.sleep(0.005)
        landed = servers.landed()
    finally:
        await watcher.close()
        await smtp.close()
        servers.stop()
    fetched, floor, _, _, _ = reactions(taps, landed, echo)
    back = [t for t, _, box, _ in landed if box == ping_address]
    print(f"  SMTP submission by a player (connect, AUTH, DATA, LMTP): {ms(submit)}")
    print(f"  landed -> fetched by the watcher (IMAP IDLE):          {ms(fetched)}")
    print(f"  landed -> echo handed to SMTP (the floor):             {ms(floor)}")
    print(f"  round trip (submit -> echo landed back):               {ms([b - s for b, s in zip(back, starts)])}")
    return floor


async def start_narrator(servers: MailServers, args) -> tuple[Narrator, Taps, str | None]:
    url, pg = f"sqlite+aiosqlite:///{servers.root / 'narrator.db'}", None
    if args.database == "postgres":
        url, pg = await create_pg_database()
    narrator = Narrator(servers, url, linger=args.linger)
    await narrator.start()
    taps = Taps()
    taps.on_sends(narrator.gateway.smtp)
    taps.on_reading(narrator.gateway.inbound)
    return narrator, taps, pg


async def stop_narrator(narrator: Narrator, pg: str | None) -> None:
    await narrator.stop()
    if pg:
        await drop_pg_database(pg)


async def play(servers: MailServers, args, games: list, seed: int, deadline: float, phases: int, progress: bool):
    """Start the narrator and the players, play until every game is over (or the deadline), stop the
    players, let the narrator send what it still has; returns what was measured."""
    narrator, taps, pg = await start_narrator(servers, args)
    before, rss_before, start = commands(), rss_mb(), time.monotonic()
    if args.tracemalloc and progress:
        tracemalloc.start()
    profile = cProfile.Profile() if args.profile and progress else None
    if profile:
        profile.enable()
    players = Players(servers, narrator, games, seed, phases)
    cpu_before = (cpu(os.getpid(), tree=False), cpu(servers.process.pid), cpu(players.process.pid))
    ticks = 0
    try:
        while (over := sum(map(players.finished, players.games()))) < len(games) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            ticks += 1
            if progress and ticks % 75 == 0:
                print(f"  ... {time.monotonic() - start:4.0f} s: {over}/{len(games)} games done, "
                      f"{len(taps.sends)} mails sent, {len(taps.fetched)} read", flush=True)
        elapsed = time.monotonic() - start
        cpu_players = cpu(players.process.pid) - cpu_before[2]
        found = await players.stop()
        await narrator.gateway.outbox.idle(60)
        drained = time.monotonic() - start
        cpus = (cpu(os.getpid(), tree=False) - cpu_before[0], cpu(servers.process.pid) - cpu_before[1], cpu_players)
        out = {"elapsed": elapsed, "drained": drained, "over": over, "players": found, "taps": taps,
               "landed": servers.landed(), "commands": {k: v - before[k] for k, v in commands().items()},
               "outbox": await narrator.gateway.outbox.counts(), "rss": (rss_before, rss_mb()),
               "narrator": narrator.address, "cpu": cpus, "load": os.getloadavg()[0]}
        gw = narrator.gateway
        out["held"] = deep_size(gw.games, gw.roster, gw.profiles, gw.outbox.queues.waiting, gw.outbox.slots)
        if profile:
            profile.disable()
            profile.dump_stats(args.profile)
        if tracemalloc.is_tracing():
            snap = tracemalloc.take_snapshot()
            ours = [tracemalloc.Filter(True, "*email_gateway*"), tracemalloc.Filter(True, "*delivery*")]
            mine = snap.filter_traces(ours)
            out["traced"] = (*tracemalloc.get_traced_memory(), sum(s.size for s in mine.statistics("filename")))
            tracemalloc.stop()
        return out
    finally:
        players.kill()
        await stop_narrator(narrator, pg)


def report_reactions(run: dict, floor: list[float], linger: float, label: str = "") -> None:
    fetched, anyone, replier, silent, inside = reactions(run["taps"], run["landed"], run["narrator"])
    print(f"  {label}reply landed -> read by the gateway:               {ms(fetched)}")
    if not label:  # under load the next mail to anyone is mostly another game's
        print(f"  {label}reply read -> next mail handed to SMTP (anyone):   {ms(inside)}")
        print(f"  {label}reply landed -> next mail handed to SMTP (anyone): {ms(anyone)}")
    print(f"  {label}reply landed -> next mail to the replier:          {ms(replier)}"
          f"  ({silent} replies had none before their sender's next one)")
    if floor and replier:
        print(f"  {label}ratio to the echo floor (p50 / p99): to the replier x{pct(replier, .5) / pct(floor, .5):.1f}"
              f" / x{pct(replier, .99) / pct(floor, .99):.1f}" + ("" if label else f", to anyone x"
              f"{pct(anyone, .5) / pct(floor, .5):.1f} / x{pct(anyone, .99) / pct(floor, .99):.1f}")
              + f" (the gateway's linger, {linger:g} s, included)")


def report_cpu(run: dict) -> None:
    narrator, servers, players = run["cpu"]
    sent = max(1, len(run["taps"].sends))
    print(f"  CPU over {run['drained']:.0f} s: narrator {narrator:.1f} s ({1000 * narrator / sent:.1f} ms per mail "
          "sent), "
          f"mail servers (aiosmtpd + Dovecot) {servers:.1f} s, players {players:.1f} s; load average "
          f"{run['load']:.1f} on {os.cpu_count()} cores")


def report_errors(run: dict) -> None:
    c, box = run["commands"], run["outbox"]
    print(f"  engine commands: {c['applied']} applied, {c['rejected']} rejected (stale clicks: normal), "
          f"{c['ignored']} ignored, {c['duplicate']} duplicate")
    print(f"  errors: {box.get('dead', 0)} dead outbox rows, {box.get('pending', 0)} still pending, "
          f"{sum(f for f, _ in run['players'].values())} failed player sends, "
          f"{COUNTER.count} warnings/errors logged so far")


async def seven_player_game(args, floor: list[float]) -> None:
    servers = MailServers()
    try:
        addresses = servers.add_users([local for local, _, _ in SEVEN])
        seats = [(a, language, mode) for a, (_, language, mode) in zip(addresses, SEVEN)]
        run = await play(servers, args, [("lady excalibur", seats)], args.seed, time.monotonic() + 400, 0, False)
    finally:
        servers.stop()
    received = [sum(1 for e in run["landed"] if e[2] == a) for a in addresses]
    replies = sum(1 for e in run["landed"] if e[2] == run["narrator"])
    modes = sorted({m for _, used in run["players"].values() for m in used})
    print(f"  {'one game' if run['over'] else 'NOT OVER: a game'} in {run['elapsed']:.1f} s: {replies} replies "
          f"({', '.join(modes)}), {len(run['taps'].sends)} mails sent")
    print(f"  mails received per player: {spread(received)}")
    report_reactions(run, floor, args.linger)
    report_errors(run)
    report_cpu(run)


async def many_games(args, floor: list[float]) -> None:
    servers = MailServers()
    rng = random.Random(args.seed)
    try:
        games = []
        for g in range(args.games):
            addresses = servers.add_users([f"g{g}p{i}" for i in range(args.players)])
            games.append(("", [(a, "en", rng.choice(("click", "below", "above"))) for a in addresses]))
        run = await play(servers, args, games, args.seed, time.monotonic() + args.max_seconds, args.phases, True)
    finally:
        servers.stop()
    sent, elapsed = len(run["taps"].sends), run["drained"]
    received = [sum(1 for e in run["landed"] if e[2] == a) for _, seats in games for a, _, _ in seats]
    goal = f"reached phase {args.phases} or ended" if args.phases else "over"
    print(f"  {run['over']}/{args.games} games {goal} after {run['elapsed']:.1f} s; the last mail left at "
          f"{elapsed:.1f} s (wall)")
    taps = run["taps"]
    print(f"  gateway: {sent} mails handed to SMTP = {sent / elapsed:.1f} mails/s, {len(taps.fetched)} mails read "
          f"= {len(taps.fetched) / elapsed:.1f}/s")
    print(f"  one SMTP send, waiting for the shared connection included: {ms(taps.send_time)}")
    print(f"  one SMTP transaction on it (MAIL .. DATA, LMTP delivery):  {ms(taps.transaction_time)}")
    print(f"  the gateway over one mail read (inbound.on_mail):          {ms(taps.read_time)}")
    print(f"  mails received per player: {spread(received)}")
    report_reactions(run, floor, args.linger, "under load, ")
    report_errors(run)
    report_cpu(run)
    (before, after), held = run["rss"], run["held"]
    print(f"  memory of the narrator process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"
          f" MB, RSS {before:.0f} -> {after:.0f} MB over the run; the gateway's game memory, roster and outbox "
          f"queues: {held / 1024:.0f} KiB")
    if "traced" in run:
        current, peak, mine = run["traced"]
        print(f"  tracemalloc (since the run began): {current / 2**20:.1f} MB live, {peak / 2**20:.1f} MB peak; "
              f"{mine / 2**20:.2f} MB live allocated in services/email_gateway + shared/delivery")


async def main(args) -> None:
    reason = dovecot_available()
    if reason:
        sys.exit(f"no mail servers here: {reason}")
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger().handlers[0].setLevel(logging.ERROR)
    logging.getLogger().addHandler(COUNTER)
    print(f"1. baseline, no narrator: {args.pings} mails to an echo bot, one at a time", flush=True)
    floor = await baseline(args.pings)
    if args.games == 0:
        return
    print(f"2. one 7-player game by mail, Lady of the Lake + Excalibur (seed {args.seed}, linger {args.linger:g} s, "
          f"{args.database})", flush=True)
    await seven_player_game(args, floor)
    goal = (f"from its creation by mail until phase {args.phases} opens (the lobby is 0, then one per proposal, "
            f"vote, quest...)" if args.phases else "to the end")
    print(f"3. {args.games} concurrent {args.players}-player games by mail, players answering at once, each played "
          f"{goal}, at most {args.max_seconds:g} s ({args.database})", flush=True)
    await many_games(args, floor)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--players", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--linger", type=float, default=1.0, help="the gateway's EMAIL_LINGER (default 1.0, as "
                        "the settings' default)")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--pings", type=int, default=30, help="mails to the echo bot in the baseline")
    parser.add_argument("--phases", type=int, default=3, help="play each concurrent game until its phase number "
                        "reaches this (0: to the end)")
    parser.add_argument("--max-seconds", type=float, default=240.0, help="stop the concurrent games after this")
    parser.add_argument("--tracemalloc", action="store_true", help="trace the narrator's allocations in part 3")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the narrator process in part 3 into FILE")
    asyncio.run(main(parser.parse_args()))
