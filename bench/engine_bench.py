"""Engine service benchmark over the real broker and PostgreSQL. Not a test: it prints numbers.

Starts ``avalon engine`` as its own process (under cProfile, writing the file named by
``BENCH_ENGINE_PROFILE`` if that is set; RabbitMQ + PostgreSQL, a fresh
database and a fresh queue prefix), then:

1. raw:       the plain aio-pika publish -> consume round trip on the same broker
              (the floor any command-to-event latency sits on);
2. saturate:  N concurrent 5-player games played by scripted players as fast as
              the engine answers: commands per second, and the CPU each process
              (engine, broker, this client, PostgreSQL) spent per command;
3. paced:     the same at fixed offered rates (default 500 commands/s):
              p50 / p99 command-to-event latency, split into "sent -> decided"
              (the broker's delivery, the engine's queue) and "decided -> received"
              (commit, publish, the broker, this client);
4. open:      G open games (lobbies with five players) held by the engine: its RSS.

    python bench/engine_bench.py [--games 1000] [--rates 500] [--open-games 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import aio_pika
import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared.bus.rabbit import RabbitBus  # noqa: E402
from shared.protocol import CommandEnvelope  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AMQP = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
PG_ADMIN = os.environ.get("PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/test")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def cpu_seconds(pattern: str) -> dict[int, float]:
    """User + system CPU time so far of each process whose command line matches."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    times = {}
    for pid in map(int, found):
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


class Players:
    """Scripted players driven by the events: leaders propose the first seats, all approve, all succeed."""

    def __init__(self, bus: RabbitBus) -> None:
        self.bus = bus
        self.sent_at: dict[str, float] = {}
        self.latency: list[float] = []
        self.ended: set[str] = set()
        self.commands = 0
        self.rate: float | None = None
        self._next_slot = time.perf_counter()
        self.players: dict[str, tuple[str, ...]] = {}
        self.sent_wall: dict[str, float] = {}
        self.to_decided: list[float] = []  # sent -> the engine decided (the event's occurred_at)
        self.from_decided: list[float] = []  # decided -> received here

    def reset(self) -> None:
        self.latency.clear()
        self.to_decided.clear()
        self.from_decided.clear()

    async def send(self, game: str, actor: str, body: dict, phase_id: int | None = None) -> None:
        if self.rate:
            self._next_slot = max(self._next_slot + 1 / self.rate, time.perf_counter())
            delay = self._next_slot - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        env = CommandEnvelope(game_id=game, actor=actor, phase_id=phase_id, command=body)
        self.sent_at[env.message_id] = time.perf_counter()
        self.sent_wall[env.message_id] = time.time()
        self.commands += 1
        await self.bus.send_command(env)

    async def on_event(self, env) -> None:
        t = self.sent_at.pop(env.caused_by, None) if env.caused_by else None
        if t is not None:
            self.latency.append((time.perf_counter() - t) * 1000)
            sent, decided = self.sent_wall.pop(env.caused_by, None), env.occurred_at.timestamp()
            if sent is not None:
                self.to_decided.append((decided - sent) * 1000)
                self.from_decided.append((time.time() - decided) * 1000)
        e = env.event
        game = env.game_id
        if e.type == "game_started":
            self.players[game] = e.seats
        elif e.type == "phase_opened":
            asyncio.ensure_future(self.act(game, e))
        elif e.type == "conference_opened" and env.audience.kind.value == "players":
            if e.shooter in env.audience.players:
                good = [p for p in self.players[game] if p not in e.members]
                asyncio.ensure_future(self.send(game, e.shooter, {"type": "assassinate", "target": good[0]}))
        elif e.type == "game_ended":
            self.ended.add(game)

    async def act(self, game: str, e) -> None:
        phase = e.phase.value
        if phase == "proposal":
            team = list(self.players[game][: e.team_size])
            await self.send(game, e.leader, {"type": "propose_team", "team": team, "excalibur": None}, e.phase_id)
        elif phase == "vote":
            await asyncio.gather(*(self.send(game, p, {"type": "cast_vote", "approve": True}, e.phase_id)
                                   for p in e.actors))
        elif phase == "quest":
            await asyncio.gather(*(self.send(game, p, {"type": "play_card", "card": "success"}, e.phase_id)
                                   for p in e.actors))


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


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--rates", default="500", help="offered rates for the paced runs, e.g. 100,300,500")
    parser.add_argument("--open-games", type=int, default=10000)
    args = parser.parse_args()

    db = f"avalon_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(PG_ADMIN)
    await admin.execute(f'CREATE DATABASE "{db}"')
    prefix = f"bench.{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": f"postgresql+asyncpg://postgres@127.0.0.1:5432/{db}", "AMQP_URL": AMQP,
           "BUS_PREFIX": prefix, "LOG_LEVEL": "WARNING"}
    log = Path(f"/tmp/{prefix}.log")
    profile = ["-m", "cProfile", "-o", os.environ["BENCH_ENGINE_PROFILE"]] if os.environ.get("BENCH_ENGINE_PROFILE") else []
    engine = subprocess.Popen([sys.executable, *profile, "-m", "services.cli", "engine"], cwd=ROOT, env=env,
                              stdout=log.open("w"), stderr=subprocess.STDOUT)
    bus = RabbitBus(AMQP, prefix=prefix)
    try:
        p50, p99, raw_rate = await raw_round_trip()
        print(f"raw aio-pika round trip: p50 {p50:.2f} ms, p99 {p99:.2f} ms, {raw_rate:.0f} msg/s")
        await bus.start()
        players = Players(bus)
        await bus.subscribe_events("bench", "test.#", players.on_event)
        await asyncio.sleep(2)  # the engine connects and migrates

        players.reset()
        before = players.commands
        processes = {"engine": "services.cli engine", "broker": "beam.smp", "client": "bench/engine_bench.py",
                     "postgres": "postgres"}
        cpu_before = {name: cpu_seconds(pattern) for name, pattern in processes.items()}
        elapsed = await play_games(bus, players, args.games, "s")
        n = players.commands - before
        rate = n / elapsed
        print(f"saturate: {args.games} games, {n} commands in {elapsed:.1f} s = {rate:.0f} commands/s; "
              f"latency p50 {statistics.median(players.latency):.1f} ms, p99 {pct(players.latency, 0.99):.1f} ms")
        spent = {name: cpu_used(cpu_before[name], cpu_seconds(pattern)) for name, pattern in processes.items()}
        print("  CPU while saturated (share of one core; CPU ms per command): " + ", ".join(
            f"{name} {100 * used / elapsed:.0f}% ({1000 * used / n:.2f})" for name, used in spent.items())
            + f"; {os.cpu_count()} cores")

        for index, offered in enumerate(float(r) for r in args.rates.split(",")):
            players.reset()
            players.rate = offered
            before = players.commands
            elapsed = await play_games(bus, players, args.games, f"r{index}_")
            n = players.commands - before
            lat50, lat99 = statistics.median(players.latency), pct(players.latency, 0.99)
            print(f"paced at {offered:.0f}/s: {n} commands in {elapsed:.1f} s = {n / elapsed:.0f} commands/s; "
                  f"latency p50 {lat50:.1f} ms, p99 {lat99:.1f} ms ({lat99 / p99:.1f}x the raw broker p99); "
                  f"sent -> decided p50 {statistics.median(players.to_decided):.1f} ms, "
                  f"decided -> received p50 {statistics.median(players.from_decided):.1f} ms")
        players.rate = None

        rss_before = rss_mb(engine.pid)
        start = time.perf_counter()
        last = None
        for i in range(args.open_games):
            game = f"o{i}"
            seats = [f"test:{game}p{j}" for j in range(5)]
            await players.send(game, seats[0], {"type": "create_game", "options": {}})
            for p in seats[1:]:
                env_ = CommandEnvelope(game_id=game, actor=p, command={"type": "join"})
                players.sent_at[env_.message_id] = time.perf_counter()
                await bus.send_command(env_)
                last = env_.message_id
        while last in players.sent_at:
            await asyncio.sleep(0.1)
        print(f"open: {args.open_games} open games held in {time.perf_counter() - start:.0f} s; engine RSS "
              f"{rss_before:.0f} MB before, {rss_mb(engine.pid):.0f} MB after")
        print("targets: >= 1000 commands/s; p99 < 50 ms at 500 commands/s; 10,000 open games < 500 MB RSS")
    finally:
        await bus.close()
        engine.terminate()
        engine.wait(10)
        await bus.delete_everything("bench")
        await admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        await admin.close()


if __name__ == "__main__":
    import uvloop  # the same loop as `avalon engine`

    uvloop.run(main())
