"""Engine service benchmark over the real broker and PostgreSQL. Not a test: it prints numbers.

Starts ``avalon engine`` as its own process (under cProfile, writing the file named by
``BENCH_ENGINE_PROFILE`` if that is set; RabbitMQ + PostgreSQL, a fresh
database and a fresh queue prefix), then:

1. raw:       the plain aio-pika publish -> consume round trip on the same broker
              (the floor any command-to-event latency sits on), one at a time; and
              at each offered rate, the engine's path with no engine: a quorum queue,
              a relay publishing each message on into a second quorum queue, a consumer;
2. saturate:  N concurrent 5-player games played by scripted players as fast as
              the engine answers: commands per second, and the CPU each process
              (engine, broker, this client, PostgreSQL) spent per command;
3. paced:     the same at fixed offered rates (default 500 commands/s):
              p50 / p99 command-to-event latency, split into "sent -> decided"
              (the broker's delivery, the engine's queue) and "decided -> received"
              (commit, publish, the broker, this client); the p99 of each tenth of
              the run; the broker's own publish-confirm latency for this client's
              commands under the same load; CPU per process and per command;
4. open:      G open games (lobbies with five players) held by the engine: its RSS.

The scripted players are a lean client (aiormq, plain JSON; see ``Players``): they
share the two cores with the engine, the broker and PostgreSQL.

    python bench/engine_bench.py [--games 1000] [--rates 500] [--open-games 10000] [--no-saturate]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import aio_pika
import aiormq
import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from avalon.shared.bus.rabbit import RabbitBus  # noqa: E402
from avalon.shared.protocol import CommandEnvelope  # noqa: E402
from avalon.shared.runtime import settle_gc  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AMQP = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
PG_ADMIN = os.environ.get("PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/test")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def tenths(trace: list[tuple[float, float]]) -> list[float]:
    """p99 latency (ms) of the commands sent in each tenth of a run: is the tail spread or bunched?"""
    trace = sorted(trace)
    step = max(1, len(trace) // 10)
    return [pct([1000 * lat for _, lat in trace[i:i + step]], 0.99) for i in range(0, len(trace), step)][:10]


def cpu_seconds(pattern: str) -> dict[int, float]:
    """User + system CPU time so far of each process whose command line matches."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    return cpu_of(map(int, found))


def cpu_of(pids) -> dict[int, float]:
    """User + system CPU time so far of each of these processes (those still there)."""
    times = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        times[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return times


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two readings (a process started meanwhile counts from zero)."""
    return sum(used - before.get(pid, 0.0) for pid, used in after.items())


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def raw_round_trip(n: int = 2000) -> tuple[float, float, float]:
    """p50, p99 (ms) and messages/s of a plain persistent publish -> consume loop."""
    conn = await aio_pika.connect_robust(AMQP)
    channel = await conn.channel(publisher_confirms=True)
    queue = await channel.declare_queue(f"bench.raw.{uuid.uuid4().hex[:8]}", auto_delete=True)
    got: dict[str, float] = {}
    done = asyncio.Event()

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        got[message.message_id] = time.perf_counter()
        await message.ack()
        if len(got) == n:
            done.set()
    await queue.consume(on_message)
    sent: dict[str, float] = {}
    latencies = []
    for i in range(200):  # sequential: pure latency
        mid = f"l{i}"
        sent[mid] = time.perf_counter()
        await channel.default_exchange.publish(
            aio_pika.Message(b"{}", message_id=mid, delivery_mode=aio_pika.DeliveryMode.PERSISTENT), queue.name)
        while mid not in got:
            await asyncio.sleep(0)
        latencies.append((got[mid] - sent[mid]) * 1000)
    got.clear()
    start = time.perf_counter()
    await asyncio.gather(*(channel.default_exchange.publish(
        aio_pika.Message(b"{}", message_id=str(i), delivery_mode=aio_pika.DeliveryMode.PERSISTENT), queue.name)
        for i in range(n)))
    await done.wait()
    rate = n / (time.perf_counter() - start)
    await conn.close()
    return statistics.median(latencies), pct(latencies, 0.99), rate


async def raw_relay(rate: float, seconds: float = 10.0) -> tuple[float, float]:
    """p50, p99 (ms) of the engine's path with no engine: at a fixed rate, persistent confirmed messages
    into a quorum queue, a relay that publishes each one on (confirmed) into a second quorum queue and
    then acks it, and a consumer of that queue. A command crosses the broker the same way."""
    connections = [await aio_pika.connect_robust(AMQP) for _ in range(2)]
    client, relay = [await c.channel(publisher_confirms=True) for c in connections]
    await relay.set_qos(prefetch_count=1024)
    queues = [await client.declare_queue(f"bench.relay{i}.{uuid.uuid4().hex[:8]}", durable=True,
                                         arguments={"x-queue-type": "quorum"}) for i in range(2)]
    relay_queue = await relay.get_queue(queues[0].name)
    sent: dict[str, float] = {}
    latencies: list[float] = []

    async def pass_on(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        await relay.default_exchange.publish(
            aio_pika.Message(message.body, message_id=message.message_id,
                             delivery_mode=aio_pika.DeliveryMode.PERSISTENT), queues[1].name)
        await message.ack()

    async def receive(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        latencies.append((time.perf_counter() - sent[message.message_id]) * 1000)
        await message.ack()
    tags = [(relay_queue, await relay_queue.consume(pass_on)), (queues[1], await queues[1].consume(receive))]

    async def publish(mid: str) -> None:
        sent[mid] = time.perf_counter()
        await client.default_exchange.publish(
            aio_pika.Message(b"{}", message_id=mid, delivery_mode=aio_pika.DeliveryMode.PERSISTENT), queues[0].name)
    start, count, tasks = time.perf_counter(), 0, []
    while time.perf_counter() - start < seconds:
        while count < (time.perf_counter() - start) * rate:
            tasks.append(asyncio.ensure_future(publish(str(count))))
            count += 1
        await asyncio.sleep(0.001)
    await asyncio.gather(*tasks)
    while len(latencies) < count:
        await asyncio.sleep(0.01)
    for queue, tag in tags:
        await queue.cancel(tag)
    for queue in queues:
        await queue.delete(if_unused=False, if_empty=False)
    for connection in connections:
        await connection.close()
    return statistics.median(latencies), pct(latencies, 0.99)


class Players:
    """Scripted players driven by the events: leaders propose the first seats, all approve, all succeed.

    A lean client, as a load generator should be: aiormq directly (no aio-pika message objects, no
    task per delivery), envelopes written and read as plain JSON (one is checked against the
    protocol's models at the start), events acknowledged in bulk like the bus does. It still
    publishes every command persistent, mandatory and confirmed, on the protocol's exchange with its
    game's partition's key (the bus's count of partitions: set, or read off the broker on start),
    and consumes the events from a quorum queue of its own bound to ``test.#``, as a gateway would.
    Its CPU per command is the price of the players, not of the engine, and it shares these cores."""

    def __init__(self, bus: RabbitBus, url: str = AMQP) -> None:
        self.bus = bus
        self.url = url  # one broker node (this client does not reconnect)
        self.sent_at: dict[str, float] = {}
        self.latency: list[float] = []
        self.ended: set[str] = set()
        self.commands = 0
        self.rate: float | None = None
        self._next_slot = time.perf_counter()
        self.players: dict[str, list[str]] = {}
        self.sent_wall: dict[str, float] = {}
        self.to_decided: list[float] = []  # sent -> the engine decided (the event's occurred_at)
        self.from_decided: list[float] = []  # decided -> received here
        self.trace: list = []
        self.confirms: list[float] = []  # this client's publish -> the broker's confirm (ms)
        self._connection: aiormq.abc.AbstractConnection | None = None
        self._publish: aiormq.abc.AbstractChannel | None = None
        self._consume: aiormq.abc.AbstractChannel | None = None
        self._ack_tag = 0
        self._ack_scheduled = False
        self._ids = itertools.count()
        self._run = uuid.uuid4().hex[:8]

    async def start(self) -> None:
        _, probe = self.envelope("g", "test:p", {"type": "join"}, 3)
        CommandEnvelope.model_validate_json(probe)  # what this client writes is a command of the protocol
        self._connection = await aiormq.connect(self.url)
        self._publish = await self._connection.channel(publisher_confirms=True)
        self._consume = await self._connection.channel()
        await self._consume.basic_qos(prefetch_count=self.bus.event_prefetch)
        queue = self.bus.event_queue_name("bench")
        await self._consume.queue_declare(queue, durable=True, arguments=self.bus.topology.quorum_arguments())
        await self._consume.queue_bind(queue, self.bus.topology.events_exchange_name, routing_key="test.#")
        await self._consume.basic_consume(queue, self._on_message)

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()

    def reset(self) -> None:
        self.latency.clear()
        self.trace.clear()
        self.confirms.clear()
        self.to_decided.clear()
        self.from_decided.clear()

    def envelope(self, game: str, actor: str, body: dict, phase_id: int | None) -> tuple[str, bytes]:
        message_id = f"{self._run}-{next(self._ids)}"
        return message_id, json.dumps({"v": 1, "message_id": message_id, "game_id": game, "actor": actor, "channel": "test",
                           "sent_at": datetime.now(timezone.utc).isoformat(), "phase_id": phase_id,
                           "command": body}).encode()

    async def send(self, game: str, actor: str, body: dict, phase_id: int | None = None, *,
                   timed: bool = True) -> str:
        if self.rate:
            self._next_slot = max(self._next_slot + 1 / self.rate, time.perf_counter())
            delay = self._next_slot - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        message_id, raw = self.envelope(game, actor, body, phase_id)
        if timed:
            self.sent_at[message_id] = time.perf_counter()
            self.sent_wall[message_id] = time.time()
        self.commands += 1
        assert self._publish is not None
        started = time.perf_counter()
        confirm = await self._publish.basic_publish(
            raw, exchange=self.bus.topology.commands_exchange_name, routing_key=self.bus.topology.key_of(game),
            mandatory=True,
            properties=aiormq.spec.Basic.Properties(delivery_mode=2, content_type="application/json",
                                                    message_id=message_id))
        if not isinstance(confirm, aiormq.spec.Basic.Ack):
            raise RuntimeError(f"the broker did not take command {message_id}: {confirm!r}")
        self.confirms.append((time.perf_counter() - started) * 1000)
        return message_id

    async def _on_message(self, message: aiormq.abc.DeliveredMessage) -> None:
        data = json.loads(message.body)
        for env in data if isinstance(data, list) else (data,):
            self.on_event(env)
        self._ack_tag = max(self._ack_tag, message.delivery_tag)
        if not self._ack_scheduled:  # one multiple ack for what this loop turn handled
            self._ack_scheduled = True
            asyncio.get_running_loop().call_soon(self._ack)

    def _ack(self) -> None:
        self._ack_scheduled = False
        asyncio.ensure_future(self._send_ack(self._ack_tag))

    async def _send_ack(self, tag: int) -> None:
        assert self._consume is not None
        if self._consume.is_closed:  # closing at the end of the run: the broker requeues the rest
            return
        try:
            await self._consume.basic_ack(tag, multiple=True)
        except aiormq.exceptions.AMQPError as error:
            print(f"  could not acknowledge events up to {tag}: {error!r}", file=sys.stderr)

    def on_event(self, env: dict) -> None:
        caused_by = env["caused_by"]
        t = self.sent_at.pop(caused_by, None) if caused_by else None
        if t is not None:
            now = time.perf_counter()
            self.latency.append((now - t) * 1000)
            self.trace.append((t, now - t))
            sent, decided = self.sent_wall.pop(caused_by, None), datetime.fromisoformat(env["occurred_at"]).timestamp()
            if sent is not None:
                self.to_decided.append((decided - sent) * 1000)
                self.from_decided.append((time.time() - decided) * 1000)
        e = env["event"]
        kind = e["type"]
        game = env["game_id"]
        if kind == "game_started":
            self.players[game] = e["seats"]
        elif kind == "phase_opened":
            asyncio.ensure_future(self.act(game, e))
        elif kind == "conference_opened" and env["audience"]["kind"] == "players":
            if e["shooter"] in env["audience"]["players"]:
                good = [p for p in self.players[game] if p not in e["members"]]
                asyncio.ensure_future(self.send(game, e["shooter"], {"type": "assassinate", "target": good[0]}))
        elif kind == "game_ended":
            self.ended.add(game)

    async def act(self, game: str, e: dict) -> None:
        phase, phase_id = e["phase"], e["phase_id"]
        if phase == "proposal":
            team = list(self.players[game][: e["team_size"]])
            await self.send(game, e["leader"], {"type": "propose_team", "team": team, "excalibur": None}, phase_id)
        elif phase == "vote":
            await asyncio.gather(*(self.send(game, p, {"type": "cast_vote", "approve": True}, phase_id)
                                   for p in e["actors"]))
        elif phase == "quest":
            await asyncio.gather(*(self.send(game, p, {"type": "play_card", "card": "success"}, phase_id)
                                   for p in e["actors"]))


async def play_games(bus: RabbitBus, players: Players, games: int, tag: str) -> float:
    ids = [f"{tag}{i}" for i in range(games)]

    async def lobby(game: str) -> None:  # each game's lobby in order, the games side by side
        seats = [f"test:{game}p{j}" for j in range(5)]
        await players.send(game, seats[0], {"type": "create_game", "options": {}})
        for p in seats[1:]:
            await players.send(game, p, {"type": "join"})
        await players.send(game, seats[0], {"type": "start_game"})

    start = time.perf_counter()
    await asyncio.gather(*(lobby(game) for game in ids))
    while not set(ids) <= players.ended:
        await asyncio.sleep(0.05)
    return time.perf_counter() - start


async def open_games(players: Players, count: int, tag: str = "o", streams: int = 1) -> float:
    """``count`` open games (lobbies: a creator and four who joined), sent by ``streams`` senders side by
    side; returns the seconds until the engine(s) answered every game's last join."""
    start = time.perf_counter()
    last: set[str] = set()

    async def stream(first: int) -> None:
        for i in range(first, count, streams):
            game = f"{tag}{i}"
            seats = [f"test:{game}p{j}" for j in range(5)]
            await players.send(game, seats[0], {"type": "create_game", "options": {}}, timed=False)
            for p in seats[1:]:  # the last join timed: in sent_at before it goes, until its event comes
                message_id = await players.send(game, p, {"type": "join"}, timed=p == seats[-1])
            last.add(message_id)
    await asyncio.gather(*(stream(first) for first in range(streams)))
    while last:
        last = {message_id for message_id in last if message_id in players.sent_at}
        await asyncio.sleep(0.1)
    return time.perf_counter() - start


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--rates", default="500", help="offered rates for the paced runs, e.g. 100,300,500")
    parser.add_argument("--open-games", type=int, default=10000)
    parser.add_argument("--no-saturate", action="store_true", help="skip the saturated run")
    args = parser.parse_args()

    db = f"avalon_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(PG_ADMIN)
    await admin.execute(f'CREATE DATABASE "{db}"')
    prefix = f"bench.{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": f"postgresql+asyncpg://postgres@127.0.0.1:5432/{db}", "AMQP_URL": AMQP,
           "BUS_PREFIX": prefix, "LOG_LEVEL": "WARNING"}
    log = Path(f"/tmp/{prefix}.log")
    profile = ["-m", "cProfile", "-o", os.environ["BENCH_ENGINE_PROFILE"]] if os.environ.get("BENCH_ENGINE_PROFILE") else []
    engine = subprocess.Popen([sys.executable, *profile, "-m", "avalon.services.cli", "engine"], cwd=ROOT, env=env,
                              stdout=log.open("w"), stderr=subprocess.STDOUT)
    bus = RabbitBus(AMQP, prefix=prefix)
    players = None
    try:
        p50, p99, raw_rate = await raw_round_trip()
        print(f"raw aio-pika round trip: p50 {p50:.2f} ms, p99 {p99:.2f} ms, {raw_rate:.0f} msg/s")
        rates = [float(r) for r in args.rates.split(",")]
        floor = {}
        for offered in rates:
            floor[offered] = await raw_relay(offered)
            print(f"raw aio-pika at {offered:.0f} msg/s, two quorum queues with a relay doing nothing between "
                  f"(the engine's path, no engine): p50 {floor[offered][0]:.2f} ms, p99 {floor[offered][1]:.2f} ms")
        await bus.start()  # the topology
        players = Players(bus)
        await players.start()
        settle_gc()  # the same collector settings as the engine's (shared/runtime.py)
        await asyncio.sleep(2)  # the engine connects and migrates

        processes = {"engine": "avalon.services.cli engine", "broker": "beam.smp", "client": "bench/engine_bench.py",
                     "postgres": "postgres"}

        async def run(tag: str, rate: float | None) -> tuple[int, float]:
            players.reset()
            players.rate = rate
            before = players.commands
            cpu_before = {name: cpu_seconds(pattern) for name, pattern in processes.items()}
            elapsed = await play_games(bus, players, args.games, tag)
            n = players.commands - before
            spent = {name: cpu_used(cpu_before[name], cpu_seconds(pattern)) for name, pattern in processes.items()}
            print("  CPU (share of one core; CPU ms per command): " + ", ".join(
                f"{name} {100 * used / elapsed:.0f}% ({1000 * used / n:.2f})" for name, used in spent.items())
                + f"; {os.cpu_count()} cores")
            return n, elapsed

        if not args.no_saturate:
            n, elapsed = await run("s", None)
            print(f"saturate: {args.games} games, {n} commands in {elapsed:.1f} s = {n / elapsed:.0f} commands/s; "
                  f"latency p50 {statistics.median(players.latency):.1f} ms, "
                  f"p99 {pct(players.latency, 0.99):.1f} ms")

        for index, offered in enumerate(rates):
            n, elapsed = await run(f"r{index}_", offered)
            lat50, lat99 = statistics.median(players.latency), pct(players.latency, 0.99)
            print(f"paced at {offered:.0f}/s: {n} commands in {elapsed:.1f} s = {n / elapsed:.0f} commands/s; "
                  f"latency p50 {lat50:.1f} ms, p99 {lat99:.1f} ms ({lat99 / p99:.1f}x the raw broker p99, "
                  f"{lat99 / floor[offered][1]:.1f}x the relay's p99 at this rate); "
                  f"sent -> decided p50 {statistics.median(players.to_decided):.1f} ms "
                  f"p99 {pct(players.to_decided, 0.99):.1f} ms, decided -> received p50 "
                  f"{statistics.median(players.from_decided):.1f} ms p99 {pct(players.from_decided, 0.99):.1f} ms")
            print("  p99 by tenth of the run (ms): " + " ".join(f"{p:.0f}" for p in tenths(players.trace))
                  + f"; the broker's confirm of a command p50 {statistics.median(players.confirms):.1f} ms "
                  f"p99 {pct(players.confirms, 0.99):.1f} ms")
        players.rate = None

        rss_before = rss_mb(engine.pid)
        took = await open_games(players, args.open_games)
        print(f"open: {args.open_games} open games held in {took:.0f} s; engine RSS "
              f"{rss_before:.0f} MB before, {rss_mb(engine.pid):.0f} MB after")
        print("targets: >= 1000 commands/s; p99 < 50 ms at 500 commands/s; 10,000 open games < 500 MB RSS")
    finally:
        if players is not None:
            await players.close()
        await bus.close()
        engine.terminate()
        engine.wait(10)
        await bus.delete_everything("bench")
        await admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        await admin.close()


if __name__ == "__main__":
    import uvloop  # the same loop as `avalon engine`

    uvloop.run(main())
