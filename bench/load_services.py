"""The narrator's side of bench/load_bench.py: ``avalon engine``, ``avalon telegram`` and ``avalon
email`` as processes of their own, what they say (``/metrics``, their logs), and the CPU and memory
of every process of the run."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import aio_pika
import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from email_bench import cpu
from engine_bench import AMQP
from tests.integration.engine_support import create_pg_database, drop_pg_database
from tests.mailservers.dovecot import free_port

AVALON = Path(sys.executable).with_name("avalon")
SERVICES = ("engine", "telegram", "email")
#: ``avalon NAME`` under cProfile counting CPU time (the process's, every thread's), not wall time:
#: on a machine shared with other work, wall time counts whatever else ran meanwhile.
PROFILED = """import cProfile, runpy, sys, time
out, sys.argv = sys.argv[1], ["avalon", *sys.argv[2:]]
profile = cProfile.Profile(time.process_time)
profile.enable()
try:
    runpy.run_module("avalon.services.cli", run_name="__main__")
except SystemExit:
    pass
finally:
    profile.disable()
    profile.dump_stats(out)
"""


# -- the narrator's processes ---------------------------------------------------------------------

class Services:
    def __init__(self, workdir: Path, database_urls: dict[str, str], prefix: str, tg: dict, mail: dict,
                 linger: float, profile: tuple[str, str] | None = None) -> None:
        self.workdir, self.ports, self.processes, self.logs = workdir, {}, {}, {}
        self.profile = profile  # (service, file): that one runs under cProfile
        common = {**os.environ, "AMQP_URL": AMQP, "BUS_PREFIX": prefix, "LOG_LEVEL": "INFO"}
        self.env = {
            "engine": {},
            "telegram": {"TELEGRAM_BOT_TOKEN": tg["token"], "TELEGRAM_API_URL": tg["base_url"],
                         "TELEGRAM_LIMITS": "0,1000000,1000000"},
            "email": {"EMAIL_ADDRESS": mail["narrator"], "EMAIL_SECRET": "a-load-benchmark-secret",
                      "SMTP_HOST": "127.0.0.1", "SMTP_PORT": str(mail["smtp_port"]), "SMTP_SECURITY": "none",
                      "SMTP_USER": mail["narrator"], "SMTP_PASSWORD": "secret", "IMAP_HOST": "127.0.0.1",
                      "IMAP_PORT": str(mail["imap_port"]), "IMAP_SECURITY": "none", "IMAP_USER": mail["narrator"],
                      "IMAP_PASSWORD": "secret", "EMAIL_LINGER": str(linger)},
        }
        for name in SERVICES:
            self.ports[name] = free_port()
            self.env[name] = {**common, **self.env[name], "DATABASE_URL": database_urls[name],
                              "OPS_LISTEN": f"127.0.0.1:{self.ports[name]}"}

    async def start(self, name: str) -> None:
        self.logs[name] = self.workdir / f"{name}.log"
        command = [str(AVALON), name]
        if self.profile and self.profile[0] == name:
            command = [sys.executable, "-c", PROFILED, self.profile[1], name]
        self.processes[name] = subprocess.Popen(command, cwd=self.workdir, env=self.env[name],
                                                stdout=self.logs[name].open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        async with aiohttp.ClientSession() as http:
            while True:
                if self.processes[name].poll() is not None:
                    raise RuntimeError(f"avalon {name} exited:\n{self.logs[name].read_text()[-2000:]}")
                try:
                    async with http.get(f"http://127.0.0.1:{self.ports[name]}/readyz") as answer:
                        if answer.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"avalon {name} not ready after 90 s:\n{self.logs[name].read_text()[-2000:]}")
                await asyncio.sleep(0.2)

    async def metrics(self) -> dict[str, dict[tuple, float]]:
        """Each service's /metrics: name -> {sorted label pairs: value}."""
        found: dict[str, dict[tuple, float]] = {}
        async with aiohttp.ClientSession() as http:
            for name in SERVICES:
                async with http.get(f"http://127.0.0.1:{self.ports[name]}/metrics") as answer:
                    text = await answer.text()
                for family in text_string_to_metric_families(text):
                    for sample in family.samples:
                        found.setdefault(f"{name}:{sample.name}", {})[tuple(sorted(sample.labels.items()))] = \
                            sample.value
        return found

    def stop(self) -> dict[str, int]:
        """SIGTERM each (the gateways first), wait; returns each one's exit status."""
        codes = {}
        for name in ("telegram", "email", "engine"):
            process = self.processes.get(name)
            if process is None:
                continue
            process.terminate()
            try:
                codes[name] = process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                codes[name] = process.wait(10)
        return codes

    def log_lines(self, name: str, level: str) -> list[str]:
        path = self.logs.get(name)
        return [line for line in path.read_text(errors="replace").splitlines() if f" {level} " in line] if path else []


def total(metrics: dict, name: str, **labels: str) -> float:
    return sum(v for k, v in metrics.get(name, {}).items() if all((key, val) in k for key, val in labels.items()))


# -- memory and CPU ---------------------------------------------------------------------------------

def status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def group_pids(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


class Watch:
    """Peak RSS (sampled every second; a process's own VmHWM where it is one process) and CPU."""

    def __init__(self, singles: dict[str, int], dovecot_pgid: int, pg: "Postgres | None") -> None:
        self.singles, self.dovecot_pgid, self.pg = singles, dovecot_pgid, pg
        broker = subprocess.run(["pgrep", "-x", "beam.smp"], capture_output=True, text=True).stdout.split()
        self.broker = int(broker[0]) if broker else None
        self.peak: dict[str, float] = {}
        self.cpu_start: dict[str, float] = {}
        self.pg_cpu: dict[int, tuple[float, float]] = {}  # backend pid -> (first, last) CPU seen

    def cpus(self) -> dict[str, float]:
        out = {name: cpu(pid, tree=False) for name, pid in self.singles.items()}  # Dovecot: the mail world's child
        out["dovecot"] = cpu(self.dovecot_pgid)  # its master (the group's leader) and every child, reaped or not
        if self.broker:
            out["broker"] = cpu(self.broker, tree=False)
        return out

    async def sample(self) -> None:
        while True:
            rss = {name: status_kb(pid, "VmRSS") for name, pid in self.singles.items()}
            rss["dovecot"] = sum(status_kb(pid, "VmRSS") for pid in group_pids(self.dovecot_pgid))
            if self.broker:
                rss["broker"] = status_kb(self.broker, "VmRSS")
            if self.pg is not None:
                pids = await self.pg.backends()
                rss["postgres"] = sum(status_kb(pid, "VmRSS") for pid in pids)
                for pid in pids:
                    used = cpu(pid, tree=False)
                    self.pg_cpu[pid] = (self.pg_cpu.get(pid, (used, used))[0], used)
            for name, kb in rss.items():
                self.peak[name] = max(self.peak.get(name, 0), kb / 1024)
            await asyncio.sleep(1.0)


class Postgres:
    def __init__(self) -> None:
        self.url = self.name = None
        self.admin = None

    async def create(self) -> str:
        import asyncpg

        self.url, self.name = await create_pg_database()
        self.admin = await asyncpg.connect(self.url.replace("+asyncpg", ""))
        return self.url

    async def backends(self) -> list[int]:
        rows = await self.admin.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> "
                                      "pg_backend_pid()", self.name)
        return [r["pid"] for r in rows]

    async def drop(self) -> None:
        if self.admin is not None:
            await self.admin.close()
        if self.name:
            await drop_pg_database(self.name)


READ = re.compile(r"^(\S+ \S+) INFO services\.email_gateway\.inbound: mail \d+ from (\S+): (\w+)")
ODD = re.compile(r"services\.email_gateway\.inbound: (mail \d+ .*(ignored|read before)|.*throttled)")


def mail_reads(services: Services) -> tuple[dict[str, int], dict[str, list[float]]]:
    """What the email gateway did with each mail it read (its INFO line ``mail N from X: outcome``;
    a mail ignored, read twice or throttled counts as ``odd``), and when it read each sender's mails."""
    outcomes: dict[str, int] = {}
    read: dict[str, list[float]] = {}
    for text in services.log_lines("email", "INFO"):
        found = READ.match(text)
        if found:
            outcomes[found.group(3)] = outcomes.get(found.group(3), 0) + 1
            at = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            read.setdefault(found.group(2), []).append(at)
        elif ODD.search(text):
            outcomes["odd"] = outcomes.get("odd", 0) + 1
    return outcomes, read


def read_delays(sent: dict[str, list[float]], read: dict[str, list[float]]) -> list[float]:
    """A player's mail sent -> the gateway's log line saying it was read, matched in order per sender
    (each mail is read once, in the order sent, unless something above says otherwise)."""
    return [r - s for box, times in sent.items() for s, r in zip(sorted(times), sorted(read.get(box, [])))]


async def queue_depths(prefix: str) -> dict[str, int]:
    """Messages ready (not yet delivered to a consumer) in the run's queues."""
    connection = await aio_pika.connect(AMQP)
    out = {}
    async with connection:
        channel = await connection.channel()
        for name in ("commands", "events.telegram", "events.email", "dead"):
            queue = await channel.declare_queue(f"{prefix}.{name}", passive=True)
            out[name] = queue.declaration_result.message_count or 0
    return out


async def answer(control, world) -> None:
    """A world process's side of its pipe (load_bench.World): start the tables, tell progress and the
    report, until asked to stop (the caller cleans up, then answers that)."""
    while True:
        request = await asyncio.to_thread(control.recv)
        if request[0] == "start":
            world.spawn(world.start(*request[1:]))
            control.send(True)
        elif request[0] == "progress":
            control.send(world.progress())
        elif request[0] == "report":
            control.send(world.report())
        elif request[0] == "stop":
            return
