"""Several engines sharing the games (issue 23) over the real broker and PostgreSQL. Not a test: it prints numbers.

Every configuration is ``avalon engine`` started K times as its own processes (ENGINE_PARTITIONS the
same for all, default 6; LOG_LEVEL=INFO so each log tells which command partitions it serves; OPS_LISTEN
on a free port of its own for /metrics) on a fresh PostgreSQL database and a fresh queue prefix, driven
by engine_bench.py's lean client (``Players``, which publishes each command with its game's partition's
routing key). Before any load, the engines are left to even out the partitions: each one's
``avalon_engine_partitions`` is polled until they differ by at most one and add up to the count. Then:

1. throughput: the same saturated workload (N concurrent 5-player games played as fast as the engines
               answer, after a short warm-up) with 1, 2 and 3 engines: commands/s, the ratio against one
               engine, the p50/p99 command-to-event latency, and the CPU seconds each kind of process
               spent (the engines summed, the broker's beam.smp, the PostgreSQL backends of this run's
               database and the rest of PostgreSQL, this client, and whatever else ran on the machine,
               from /proc/stat): on two cores, what bounds the scaling. ``--rounds R`` runs the
               configurations R times over, alternating (1, 2, 3, 1, 2, 3...), each round's ratios
               against its own one-engine run: the machine may be shared, its other load shifting;
2. kills:      three engines under a light background load (a few games at a time, the players
               thinking a moment before each move); again and again an engine that serves partitions
               (the one whose partitions were killed least so far) is SIGKILLed, its partitions read
               off its log, and right after the kill a
               ``create_game`` of a fresh game in each of those partitions is sent: the time from the
               kill to the first event caused by each is that partition's time to be served again, the
               kill's is the slowest of its partitions. The killed engine is started again and the
               engines are left to even out before the next kill (that time is printed too). At the
               end the background games must all have ended: for a game stuck (a command lost, or
               applied out of order) its commands' fates, the events received and the engines' log
               lines about its partition are printed;
3. memory:     G open games (lobbies with five players, engine_bench's ``open_games``) held by three
               engines: each engine's RSS and the sum, against the aim of under 1 GB in all.

``--cluster`` runs phases 1 and 2 again on a three-node RabbitMQ cluster of this machine
(tests/rabbit_cluster.py, beside the default node) with one node stopped: every process is given the
three nodes (AMQP_URL comma-separated) and so connects to node 1 first, where the quorum queues are
declared (their leaders there); once the engines have evened out, node 1 is stopped (``rabbitmqctl
stop``), a ``create_game`` is sent to each partition as soon as it is down and the time from the stop
to each one's first event is printed (every connection moves to node 2, every queue elects a new
leader), then the phase's measurement runs on the two nodes left. Node 1 is started again before the
next configuration. The broker's CPU is then the two running nodes'.

Each phase cleans up after itself, even on failure: the engines stopped, the database dropped, the
queues and exchanges deleted. The engines' logs stay in /tmp/<prefix>/ and each phase ends with a
line about their warnings and errors.

    python bench/engines_bench.py [--quick] [--games 300] [--rounds 1] [--kills 20] [--open-games 100000]
                                  [--partitions 6] [--no-throughput] [--no-kills] [--no-memory] [--cluster]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_bench import (  # noqa: E402 - bench/ is this script's own directory
    AMQP, PG_ADMIN, ROOT, Players, cpu_of, cpu_used, open_games, pct, play_games, rss_mb)
from avalon.shared.bus.rabbit import RabbitBus, partition_of  # noqa: E402
from tests.rabbit_cluster import RabbitCluster, missing_reason  # noqa: E402
from avalon.shared.runtime import settle_gc  # noqa: E402

CLOCK = os.sysconf("SC_CLK_TCK")
SERVED = re.compile(r"command partition\(s\) ([\d, ]+) (served here|no longer served)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loadavg() -> str:
    return "load average " + " ".join(f"{n:.2f}" for n in os.getloadavg())


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def machine_busy() -> float:
    """CPU seconds the whole machine spent busy so far (every core, every process: /proc/stat)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(
        int, Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9])
    return (user + nice + system + irq + softirq + steal) / CLOCK


class Engine:
    """One ``avalon engine`` process: started (again) with a port of its own for /metrics, killed, stopped;
    what its log says it serves, and its metrics."""

    def __init__(self, name: str, env: dict[str, str], logs: Path) -> None:
        self.name = name
        self.env = env
        self.log = logs / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.mark = 0  # where this run of the process starts in its log (a restart appends)
        self.starts = 0

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def text(self, since: int | None = None) -> str:
        if not self.log.exists():
            return ""
        return self.log.read_bytes()[self.mark if since is None else since:].decode(errors="replace")

    def size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    async def start(self, timeout: float = 60.0) -> None:
        self.port = free_port()
        self.mark = self.size()
        self.starts += 1
        with self.log.open("ab") as handle:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "avalon.services.cli", "engine"], cwd=ROOT,
                env={**self.env, "OPS_LISTEN": f"127.0.0.1:{self.port}"}, stdout=handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while "engine ready" not in self.text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start:\n{self.text()[-3000:]}")
            await asyncio.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL, not waited for (the caller reaps it with ``reap``)."""
        os.kill(self.pid, signal.SIGKILL)

    def reap(self) -> None:
        if self.proc is not None:
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def served(self, since: int | None = None, *, taken: bool = False) -> set[int]:
        """The partitions its log says it serves now (``taken``: every one it took over since ``since``)."""
        served: set[int] = set()
        for found in SERVED.finditer(self.text(since)):
            numbers = {int(n) for n in found.group(1).split(",")}
            served = served | numbers if found.group(2) == "served here" or taken else served - numbers
        return served

    def metrics(self) -> dict[str, float]:
        """Its /metrics: ``name{labels}`` -> value."""
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5).read().decode()
        found = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                found[name] = float(value)
        return found

    def partitions(self) -> int:
        return int(self.metrics().get("avalon_engine_partitions", 0))

    def commands(self) -> float:
        """Commands it took from the partitions since it started."""
        return sum(v for k, v in self.metrics().items() if k.startswith("avalon_engine_partition_commands_total{"))

    def trouble(self) -> Counter:
        """Its log's WARNING and ERROR lines (and tracebacks), by message with the numbers blanked."""
        found: Counter = Counter()
        for line in self.text(0).splitlines():
            if " WARNING " in line or " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback"):
                message = line.split(" ", 2)[-1] if line[:4].isdigit() else line
                found[re.sub(r"\d+(\.\d+)?", "N", message)[:160]] += 1
        return found


async def wait_even(engines: list[Engine], partitions: int, timeout: float = 90.0) -> float:
    """Seconds until the engines' ``avalon_engine_partitions`` differ by at most one and add up to the count,
    and each engine's log names as many partitions served as its gauge counts (the gauge counts a partition
    from its first delivery, the log line comes once its takeover has read the database)."""
    start = time.monotonic()
    while True:
        try:
            served = [engine.partitions() for engine in engines]
        except OSError:  # an engine's /metrics not up yet
            served = []
        if served and max(served) - min(served) <= 1 and sum(served) == partitions \
                and all(len(engine.served()) == n for engine, n in zip(engines, served)):
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"the engines did not even out the partitions in {timeout:.0f} s: {served}, "
                               f"their logs: {[sorted(engine.served()) for engine in engines]}")
        await asyncio.sleep(0.2)


@dataclass
class Broker:
    """Where the stacks' processes connect: the default node, or a three-node cluster of which node
    ``down`` is stopped once the engines have evened out (and started again when the stack is done)."""

    url: str = AMQP
    cluster: RabbitCluster | None = None
    down: int = 0

    @property
    def client_url(self) -> str:
        """The node the players' client and the bench's own bus use: on a cluster one that stays up
        (the lean client does not reconnect: it stands for a gateway that was on another node)."""
        return self.url if self.cluster is None else self.cluster.urls()[(self.down + 1) % len(self.cluster.ports)]

    def pids(self) -> list[int]:
        """The broker processes running now (a stopped node's are gone)."""
        if self.cluster is None:
            return [listener(urlsplit(self.url).port or 5672)]
        return [pid for pid in (self.cluster._beam_pid(i) for i in range(len(self.cluster.ports))) if pid]


@dataclass
class Stack:
    engines: list[Engine]
    bus: RabbitBus
    players: Players
    db: str
    prefix: str
    logs: Path
    broker: Broker = field(default_factory=Broker)


@contextlib.asynccontextmanager
async def stack(count: int, partitions: int, players_kind: type[Players] = Players, label: str = "",
                broker: Broker | None = None):
    """``count`` engines on a fresh database and prefix, the bus and the players' client; all of it
    cleaned up afterwards, whatever happened. On a cluster, one node is stopped once the engines have
    evened out (``node_outage``) and started again at the end."""
    broker = broker or Broker()
    db = f"avalon_bench_{uuid.uuid4().hex[:8]}"
    prefix = f"bench.{uuid.uuid4().hex[:8]}"
    logs = Path(f"/tmp/{prefix}")
    logs.mkdir()
    admin = await asyncpg.connect(PG_ADMIN)
    await admin.execute(f'CREATE DATABASE "{db}"')
    env = {**os.environ, "DATABASE_URL": f"postgresql+asyncpg://postgres@127.0.0.1:5432/{db}", "AMQP_URL": broker.url,
           "BUS_PREFIX": prefix, "LOG_LEVEL": "INFO", "ENGINE_PARTITIONS": str(partitions)}
    engines = [Engine(f"engine{i}", env, logs) for i in range(count)]
    bus = RabbitBus(broker.client_url, prefix=prefix, partitions=partitions)
    players = players_kind(bus, broker.client_url)
    stopped = False
    try:
        for engine in engines:  # one after the other: the first one migrates the database
            await engine.start()
        await bus.start()
        await players.start()
        s = Stack(engines, bus, players, db, prefix, logs, broker)
        if broker.cluster is not None:
            await wait_even(engines, partitions)
            stopped = True
            await node_outage(s, partitions)
        yield s
    finally:
        try:
            dead: object = len(await bus.dead_letters())
        except Exception as error:  # noqa: BLE001 - only a report
            dead = f"? ({error!r})"
        for what, step in (("client", players.close), ("bus", bus.close)):
            try:
                await step()
            except Exception as error:  # noqa: BLE001 - clean up the rest all the same
                print(f"  cleanup: closing the {what}: {error!r}", file=sys.stderr)
        for engine in engines:
            engine.stop()
        report_logs(engines, logs, dead, label or f"{count} engine(s)")
        try:
            await bus.delete_everything("bench")
        except Exception as error:  # noqa: BLE001
            print(f"  cleanup: deleting {prefix}.*: {error!r}", file=sys.stderr)
        await admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        await admin.close()
        if stopped:
            await asyncio.to_thread(broker.cluster.start_node, broker.down)


async def node_outage(s: Stack, partitions: int) -> None:
    """Stop the cluster node every process connected to first; as soon as it is down, a ``create_game``
    to each partition: print the time from the stop to each one's first event."""
    cluster, down = s.broker.cluster, s.broker.down
    assert cluster is not None and isinstance(s.players, Watching)
    games = {p: game_in(p, partitions, f"n{uuid.uuid4().hex[:6]}p{p}") for p in range(partitions)}
    t0 = time.perf_counter()
    await asyncio.to_thread(cluster.stop_node, down)
    stopping = time.perf_counter() - t0
    ids = await asyncio.gather(*(s.players.send(game, f"test:{game}p0", {"type": "create_game", "options": {}},
                                                timed=False) for game in games.values()))
    s.players.watched.update(ids)
    deadline = time.perf_counter() + 120
    while not all(i in s.players.first_event for i in ids) and time.perf_counter() < deadline:
        await asyncio.sleep(0.005)
    each = sorted(s.players.first_event.get(i, float("inf")) - t0 for i in ids)
    evened = await wait_even(s.engines, partitions)
    print(f"  node {cluster.nodenames[down]} stopped (rabbitmqctl stop took {stopping:.1f} s): the {partitions} "
          f"partitions served again {each[0]:.1f}-{each[-1]:.1f} s after the stop began (median "
          f"{statistics.median(each):.1f} s); the engines evened out {evened:.1f} s later")


def report_logs(engines: list[Engine], logs: Path, dead, label: str) -> None:
    trouble: Counter = Counter()
    for engine in engines:
        trouble += engine.trouble()
    lines = sum(trouble.values())
    print(f"  {label}: engine logs in {logs}: {lines} warning/error line(s); dead letters: {dead}")
    for message, times in trouble.most_common(5):
        print(f"    {times}x {message}")


def listener(port: int) -> int:
    """The process listening on this local TCP port (the machine may run other brokers and databases:
    other test runs', in containers; only the ones this benchmark talks to count)."""
    found = re.search(r"pid=(\d+)", subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True,
                                                    text=True).stdout)
    if not found:
        raise RuntimeError(f"nothing found listening on port {port}")
    return int(found.group(1))


class Readings:
    """CPU seconds so far of each kind of process of a run: the engines, the broker (the beam.smp on
    AMQP_URL's port), PostgreSQL (the server on port 5432 and its children: this run's database's
    backends, and the rest of it), this client, and the whole machine."""

    def __init__(self, s: Stack) -> None:
        self.engines = cpu_of(engine.pid for engine in s.engines)
        self.broker = cpu_of(s.broker.pids())
        postmaster = listener(urlsplit(PG_ADMIN).port or 5432)
        children = [int(pid) for pid in subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True,
                                                       text=True).stdout.split()]
        ours = [pid for pid in children if f" {s.db} " in cmdline(pid)]  # "postgres: postgres <db> <peer> ..."
        self.backends = cpu_of(ours)
        self.postgres = cpu_of([postmaster, *children])  # less the above: walwriter, checkpointer, other databases
        self.client = cpu_of([os.getpid()])
        self.machine = machine_busy()

    def since(self, before: "Readings") -> dict[str, float]:
        used = {"engines": cpu_used(before.engines, self.engines), "broker": cpu_used(before.broker, self.broker),
                "pg backends": cpu_used(before.backends, self.backends)}
        used["pg other"] = cpu_used(before.postgres, self.postgres) - used["pg backends"]
        used["client"] = cpu_used(before.client, self.client)
        used["rest"] = self.machine - before.machine - sum(used.values())
        used["machine"] = self.machine - before.machine
        return used


# -- 1. throughput ------------------------------------------------------------------------------

async def throughput(args, broker: Broker) -> None:
    print(f"\n1. throughput{where(broker)}: {args.games} concurrent 5-player games, saturated, "
          f"{args.partitions} partitions, each configuration on a fresh database and prefix; {loadavg()}")
    rows = []
    for count in args.engine_counts * args.rounds:
        async with stack(count, args.partitions, Watching if broker.cluster else Players, broker=broker) as s:
            evened = await wait_even(s.engines, args.partitions)
            await play_games(s.bus, s.players, max(10, args.games // 10), f"w{count}_")  # warm-up
            s.players.reset()
            before, commands = Readings(s), s.players.commands
            taken = [engine.commands() for engine in s.engines]
            elapsed = await play_games(s.bus, s.players, args.games, f"s{count}_")
            used = Readings(s).since(before)
            n = s.players.commands - commands
            share = [engine.commands() - t for engine, t in zip(s.engines, taken)]
            served = [engine.partitions() for engine in s.engines]
            rows.append((count, n, elapsed, used, statistics.median(s.players.latency),
                         pct(s.players.latency, 0.99), served, share, evened))
    cores = os.cpu_count() or 1
    against = f"vs {args.engine_counts[0]}"
    print(f"  {'engines':>7} {'commands':>8} {'s':>5} {'cmd/s':>6} {against:>5} {'p50 ms':>6} {'p99 ms':>6} "
          f"{'busy':>5}  partitions (share of the commands) per engine; evened out in")
    for index, (count, n, elapsed, used, p50, p99, served, share, evened) in enumerate(rows):
        first = rows[index - index % len(args.engine_counts)]  # this round's first configuration
        base, rate = first[1] / first[2], n / elapsed
        print(f"  {count:>7} {n:>8} {elapsed:>5.1f} {rate:>6.0f} {rate / base:>5.2f} {p50:>6.0f} {p99:>6.0f} "
              f"{100 * used['machine'] / (elapsed * cores):>4.0f}%  "
              + ", ".join(f"{p} ({c / max(1, n):.0%})" for p, c in zip(served, share)) + f"; {evened:.1f} s")
    kinds = ["engines", "broker", "pg backends", "pg other", "client", "rest", "machine"]
    print(f"  CPU seconds during the run (ms per command): busy = the machine's use of its {cores} cores; "
          f"rest = every other process on the machine")
    print(f"  {'engines':>7}  " + " ".join(f"{k:>13}" for k in kinds))
    for count, n, elapsed, used, *_ in rows:
        print(f"  {count:>7}  " + " ".join(f"{used[k]:>5.1f} ({1000 * used[k] / n:>5.2f})" for k in kinds))


# -- 2. SIGKILL to served again -------------------------------------------------------------------

class Watching(Players):
    """The players, thinking ``think`` seconds before each move; the arrival of the first event caused
    by each command in ``watched``; and, for the background games, what was sent and received (to tell
    what happened to a game that got stuck)."""

    think = 0.0  # set by ``kills`` (the throughput runs on a cluster use this class too, unthinking)

    def __init__(self, bus: RabbitBus, url: str = AMQP) -> None:
        super().__init__(bus, url)
        self.watched: set[str] = set()
        self.first_event: dict[str, float] = {}
        self.sent: dict[str, list[tuple]] = {}  # background game -> (message id, command, phase id)
        self.received: dict[str, list[tuple]] = {}  # background game -> (seq, prev_seq, type, caused by)

    def on_event(self, env: dict) -> None:
        caused_by = env["caused_by"]
        if caused_by in self.watched and caused_by not in self.first_event:
            self.first_event[caused_by] = time.perf_counter()
        if env["game_id"].startswith("bg"):
            self.received.setdefault(env["game_id"], []).append(
                (env["seq"], env["prev_seq"].get("test"), env["event"]["type"], caused_by))
        super().on_event(env)

    async def send(self, game: str, actor: str, body: dict, phase_id: int | None = None, *,
                   timed: bool = True) -> str:
        message_id = await super().send(game, actor, body, phase_id, timed=timed)
        if game.startswith("bg"):
            self.sent.setdefault(game, []).append((message_id, body["type"], phase_id))
        return message_id

    async def act(self, game: str, e: dict) -> None:
        if self.think:
            await asyncio.sleep(self.think)
        await super().act(game, e)


def game_in(partition: int, partitions: int, tag: str) -> str:
    """A fresh game id whose commands go to ``partition``."""
    for n in range(10_000):
        game = f"{tag}_{n}"
        if partition_of(game, partitions) == partition:
            return game
    raise AssertionError(partition)


@dataclass
class Background:
    finished: int = 0
    stuck: list[str] = field(default_factory=list)


async def background(s: Stack, slots: int, stop: asyncio.Event, result: Background) -> None:
    """``slots`` games at a time, each followed by the next until ``stop``; a game not over in 120 s is stuck."""
    async def slot(j: int) -> None:
        for n in range(1_000_000):
            if stop.is_set():
                return
            tag = f"bg{j}_{n}_"
            try:
                await asyncio.wait_for(play_games(s.bus, s.players, 1, tag), 120)
                result.finished += 1
            except asyncio.TimeoutError:
                result.stuck.append(f"{tag}0")
    await asyncio.gather(*(slot(j) for j in range(slots)))


async def kills(args, broker: Broker) -> None:
    print(f"\n2. SIGKILL to served again{where(broker)}: 3 engines, {args.partitions} partitions, {args.kills} "
          f"kills; background: {args.background} games at a time, players thinking {args.think:.2f} s a move; "
          f"{loadavg()}")
    async with stack(3, args.partitions, Watching, broker=broker) as s:
        Watching.think = args.think  # not while node_outage's commands were being answered
        players = s.players
        assert isinstance(players, Watching)
        await wait_even(s.engines, args.partitions)
        stop, load = asyncio.Event(), Background()
        loader = asyncio.create_task(background(s, args.background, stop, load))
        await asyncio.sleep(3)
        commands_before, started = players.commands, time.perf_counter()
        times: list[float] = []
        evens: list[float] = []
        slow: list[str] = []
        killed: Counter = Counter()  # partition -> the kills of the engine serving it
        try:
            for kill in range(args.kills):
                # the engine serving the partitions killed the least so far (every partition gets its
                # turn; a partition taken over tends to stay with the engine that took it), ties in turn
                candidates = s.engines[kill % 3:] + s.engines[:kill % 3]
                served = {engine.name: engine.partitions() for engine in candidates}
                victim = min((engine for engine in candidates if served[engine.name] >= 1),
                             key=lambda engine: sum(killed[p] for p in engine.served()))
                partitions = sorted(victim.served())
                if len(partitions) != served[victim.name]:
                    print(f"  kill {kill + 1}: {victim.name}'s log says {partitions}, its /metrics "
                          f"{served[victim.name]} partition(s)")
                killed.update(partitions)
                games = {p: game_in(p, args.partitions, f"k{kill}p{p}") for p in partitions}
                survivors = [engine for engine in s.engines if engine is not victim]
                marks = {engine.name: engine.size() for engine in survivors}
                t0, wall = time.perf_counter(), time.strftime("%H:%M:%S")  # the logs' clock, to find the kill
                victim.kill()
                ids = await asyncio.gather(*(players.send(game, f"test:{game}p0", {"type": "create_game",
                                                                                   "options": {}}, timed=False)
                                             for game in games.values()))
                players.watched.update(ids)
                victim.reap()
                deadline = time.perf_counter() + 60
                while not all(i in players.first_event for i in ids) and time.perf_counter() < deadline:
                    await asyncio.sleep(0.005)
                each = {p: players.first_event.get(i, float("inf")) - t0 for p, i in zip(partitions, ids)}
                worst = max(each.values())
                times.append(worst)
                by = {p: [e.name for e in survivors if p in e.served(marks[e.name], taken=True)] for p in partitions}
                line = (f"  kill {kill + 1:>2} {wall}: {victim.name} served {','.join(map(str, partitions))} -> "
                        "served again in " + ", ".join(f"{p}: {1000 * t:.0f} ms by {'/'.join(by[p]) or '?'}"
                                                       for p, t in each.items()))
                if worst > 5:
                    slow.append(line)
                await victim.start()
                evens.append(await wait_even(s.engines, args.partitions))
                print(line + f"; restarted, evened out again in {evens[-1]:.1f} s")
        finally:
            stop.set()
            elapsed = time.perf_counter() - started
            try:
                await asyncio.wait_for(loader, 150)
            except asyncio.TimeoutError:
                print("  the background games did not end in 150 s", file=sys.stderr)
        ms = [1000 * t for t in times]
        print(f"  {'kills':>5} {'median ms':>9} {'p90 ms':>7} {'worst ms':>8}   evened out after the restart "
              f"(median / worst s)   background")
        print(f"  {len(ms):>5} {statistics.median(ms):>9.0f} {pct(ms, 0.9):>7.0f} {max(ms):>8.0f}   "
              f"{statistics.median(evens):>.1f} / {max(evens):.1f}"
              f"{'':>36}{(players.commands - commands_before) / elapsed:.0f} commands/s, {load.finished} games "
              f"ended, {len(load.stuck)} stuck{': ' + ', '.join(load.stuck[:5]) if load.stuck else ''}")
        for line in slow:
            print("  slow:" + line)
        for game in load.stuck[:3]:
            await diagnose(s, game, players, args.partitions)


async def diagnose(s: Stack, game: str, players: Watching, partitions: int) -> None:
    """What the database, this client and the engines' logs know of a stuck game: its phase; each command
    sent, when it was committed and how (a rejection with its reason); the events received and any gap in
    them; and what the engines' logs say of the game's partition around those moments."""
    db = await asyncpg.connect(PG_ADMIN.rsplit("/", 1)[0] + f"/{s.db}")
    try:
        row = await db.fetchrow("SELECT phase, phase_id, version FROM games WHERE id = $1", game)
        processed = {r["message_id"]: r for r in await db.fetch(
            "SELECT message_id, outcome, processed_at FROM processed_commands WHERE game_id = $1", game)}
        reasons = dict(await db.fetch("SELECT body::json->>'caused_by', body::json->'event'->>'reason' FROM events "
                                      "WHERE game_id = $1 AND seq IS NULL", game))
        unpublished = await db.fetchval("SELECT count(*) FROM events WHERE game_id = $1 AND NOT published", game)
    finally:
        await db.close()
    partition = partition_of(game, partitions)
    print(f"  stuck {game} (partition {partition}): database: {dict(row) if row else 'no game'}, "
          f"{unpublished} event(s) unpublished")
    times = []
    for mid, kind, _phase in players.sent.get(game, [])[-6:]:
        found = processed.get(mid)
        if found is None:
            print(f"    {kind:<12} {mid}: NOT PROCESSED")
            continue
        times.append(found["processed_at"].timestamp())
        print(f"    {kind:<12} {mid}: {found['outcome']} at {found['processed_at'].strftime('%H:%M:%S.%f')[:-3]}"
              + (f" ({reasons.get(mid)})" if mid in reasons else ""))
    received = players.received.get(game, [])
    seqs = [r[0] for r in received]
    gaps = [r for i, r in enumerate(received) if r[1] is not None and r[1] not in (0, *seqs[:i])]
    print(f"    received {len(received)} event(s), last (seq, prev_seq, type, caused by): {received[-3:]}; "
          f"events whose previous one never came: {gaps[:3]}")
    if times:  # the engines' lines about the partition from 5 s before the first command to 2 s after the last
        mine = re.compile(rf"partition(\(s\))? ([\d, ]*\b{partition}\b[\d, ]*) (served|no longer|handed)")
        for engine in s.engines:
            for line in engine.text(0).splitlines():
                if line[:4].isdigit() and mine.search(line):
                    at = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")) + int(line[20:23]) / 1000
                    if min(times) - 5 <= at <= max(times) + 2:  # the log's local time, made epoch seconds
                        print(f"    {engine.name}: {line[11:23]} {line.split(': ', 1)[1][:70]}")


def where(broker: Broker) -> str:
    if broker.cluster is None:
        return ""
    return (f" on a three-node cluster ({', '.join(str(p) for p in broker.cluster.ports)}) with "
            f"{broker.cluster.nodenames[broker.down]} stopped")


# -- 3. memory ----------------------------------------------------------------------------------

async def memory(args) -> None:
    print(f"\n3. memory: {args.open_games} open games (5-player lobbies) across 3 engines, "
          f"{args.partitions} partitions, {args.streams} senders; {loadavg()}")
    async with stack(3, args.partitions) as s:
        await wait_even(s.engines, args.partitions)
        before = [rss_mb(engine.pid) for engine in s.engines]
        commands = s.players.commands
        took = await open_games(s.players, args.open_games, "o", streams=args.streams)
        await asyncio.sleep(2)
        after = [rss_mb(engine.pid) for engine in s.engines]
        share = [engine.commands() for engine in s.engines]
        n = s.players.commands - commands
        print(f"  created in {took:.0f} s ({args.open_games / took:.0f} games/s, {n / took:.0f} commands/s)")
        print(f"  {'engine':>7} {'partitions':>10} {'games':>7} {'RSS before MB':>13} {'RSS after MB':>12}")
        for engine, b, a, c in zip(s.engines, before, after, share):
            print(f"  {engine.name:>7} {engine.partitions():>10} {c / 5:>7.0f} {b:>13.0f} {a:>12.0f}")
        total = sum(after)
        print(f"  {'all':>7} {'':>10} {args.open_games:>7} {sum(before):>13.0f} {total:>12.0f}   "
              f"aim: < 1024 MB in all -> {'met' if total < 1024 else 'NOT met'}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 60 games, 5 kills, 5000 open games")
    parser.add_argument("--partitions", type=int, default=6, help="ENGINE_PARTITIONS of every engine")
    parser.add_argument("--games", type=int, help="concurrent games of the throughput runs (300)")
    parser.add_argument("--engines", default="1,2,3", help="the engine counts of the throughput runs")
    parser.add_argument("--rounds", type=int, default=1, help="throughput runs of each engine count, alternating")
    parser.add_argument("--kills", type=int, help="SIGKILLs (20)")
    parser.add_argument("--background", type=int, default=4, help="background games at a time during the kills")
    parser.add_argument("--think", type=float, default=0.2, help="seconds the background players think a move")
    parser.add_argument("--open-games", type=int, help="open games held by three engines (100000)")
    parser.add_argument("--streams", type=int, default=16, help="senders side by side creating the open games")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--no-kills", action="store_true")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--cluster", action="store_true",
                        help="then phases 1 and 2 again on a three-node cluster with one node stopped")
    parser.add_argument("--cluster-only", action="store_true", help="phases 1 and 2 only on the cluster")
    parser.add_argument("--cluster-port", type=int, default=5781, help="the cluster's first AMQP port")
    args = parser.parse_args()
    quick = dict(games=60, kills=5, open_games=5000) if args.quick else dict(games=300, kills=20, open_games=100000)
    for name, value in quick.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.engine_counts = [int(n) for n in args.engines.split(",")]

    memory_total = next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                        if line.startswith("MemTotal:"))
    print(f"engines_bench: {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
          f"{int(memory_total) / 2**20:.1f} GB, {loadavg()}; "
          f"Python {platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M')}")
    settle_gc()  # the same collector settings as the engines' (shared/runtime.py)
    started = time.perf_counter()
    if not args.cluster_only:
        if not args.no_throughput:
            await throughput(args, Broker())
        if not args.no_kills:
            await kills(args, Broker())
        if not args.no_memory:
            await memory(args)
    if args.cluster or args.cluster_only:
        why = missing_reason()
        if why is not None:
            raise SystemExit(f"--cluster: {why}")
        cluster = RabbitCluster(Path("/tmp/avalon-bench-cluster"), first_port=args.cluster_port, name="avalonbc")
        began = time.perf_counter()
        await asyncio.to_thread(cluster.start)
        print(f"\nthe cluster: {', '.join(cluster.nodenames)} on {', '.join(map(str, cluster.ports))}, "
              f"started in {time.perf_counter() - began:.0f} s")
        broker = Broker(",".join(cluster.urls()), cluster, down=0)
        try:
            if not args.no_throughput:
                await throughput(args, broker)
            if not args.no_kills:
                await kills(args, broker)
        finally:
            await asyncio.to_thread(cluster.stop)
    print(f"\ndone in {time.perf_counter() - started:.0f} s; {loadavg()} now")


if __name__ == "__main__":
    import uvloop  # the same loop as `avalon engine`

    uvloop.run(main())
