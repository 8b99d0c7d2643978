"""The parts the fault suite breaks, each a real one it can stop and start again:

- ``PrivateRabbit``: a RabbitMQ node of its own (its own port, data directory and cookie), so that
  stopping and restarting the broker disturbs nothing else on the machine;
- ``TcpProxy``: a loopback TCP proxy in front of PostgreSQL that can refuse every connection (the
  server unreachable) or hold them silent (a stalled network) for a while, then let them through;
- ``ServiceProcess``: an ``avalon`` service (engine, telegram, email) as its own process, killed
  with SIGKILL and started again on the same database.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def rabbit_available() -> str | None:
    """None when a private RabbitMQ node can be started here, else why not."""
    if not (RABBIT_BIN / "rabbitmq-server").exists():
        return f"no RabbitMQ server at {RABBIT_BIN} (Debian's rabbitmq-server package)"
    return None


class PrivateRabbit:
    """A RabbitMQ node of the suite's own; ``stop()`` shuts it down as an operator would (or
    ``crash()`` kills it), ``start()`` brings it back on the same data: durable queues and the
    messages in them survive, connections do not."""

    def __init__(self, tmp: Path) -> None:
        self.dir = tmp / "rabbit"
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "plugins").write_text("[].\n")
        self.port = free_port()
        self.node = f"avalonfaults{self.port}@localhost"
        self.env = {**os.environ, "HOME": str(self.dir), "RABBITMQ_NODENAME": self.node,
                    "RABBITMQ_NODE_PORT": str(self.port), "RABBITMQ_DIST_PORT": str(free_port()),
                    "RABBITMQ_MNESIA_BASE": str(self.dir / "mnesia"), "RABBITMQ_LOG_BASE": str(self.dir / "log"),
                    "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.dir / "plugins"),
                    "RABBITMQ_CONFIG_FILE": str(self.dir / "rabbitmq"),
                    "RABBITMQ_ADVANCED_CONFIG_FILE": str(self.dir / "advanced.config"),
                    "RABBITMQ_CONF_ENV_FILE": str(self.dir / "rabbitmq-env.conf")}
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    async def start(self, timeout: float = 90) -> None:
        self.starts += 1
        log = (self.dir / f"server{self.starts}.log").open("w")
        self.proc = subprocess.Popen([str(RABBIT_BIN / "rabbitmq-server")], env=self.env, stdout=log, cwd=self.dir,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not port_open(self.port):  # the AMQP listener opens last, once the broker has booted
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log_file = self.dir / f"server{self.starts}.log"
                said = log_file.read_text()[-3000:] if log_file.exists() else f"(no {log_file})"
                raise RuntimeError(f"RabbitMQ node {self.node} did not start (exit {self.proc.poll()}):\n{said}")
            await asyncio.sleep(0.1)

    async def stop(self) -> None:
        """A clean shutdown (``rabbitmqctl stop``), as a host restarting the broker does."""
        if self.proc is None or self.proc.poll() is not None:
            return
        await asyncio.to_thread(subprocess.run, [str(RABBIT_BIN / "rabbitmqctl"), "-n", self.node, "stop"],
                                env=self.env, capture_output=True, timeout=60)
        try:
            await asyncio.to_thread(self.proc.wait, 30)
        except subprocess.TimeoutExpired:
            self.crash()

    def crash(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    async def close(self) -> None:
        await self.stop()
        self.crash()
        subprocess.run(["pkill", "-9", "-f", f"-sname {self.node}"], capture_output=True)
        subprocess.run(["pkill", "-9", "-f", self.node], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


class TcpProxy:
    """127.0.0.1:<port> -> target. ``refuse()``: every connection is cut and new ones are closed at
    once (the server is unreachable); ``stall()``: connections stay open but nothing passes either
    way (a network that drops packets); ``restore()``: traffic flows again (stalled connections stay
    dead, as they would after such an outage: their peers must give up on them)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.mode = "pass"
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self.connections = 0

    async def start(self) -> "TcpProxy":
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode != "pass":
            if self.mode == "refuse":
                writer.close()
            else:
                self._stalled(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self.connections += 1
        link = (writer, up_writer)
        self._links.add(link)
        await asyncio.gather(self._pipe(reader, up_writer, link), self._pipe(up_reader, writer, link))

    def _stalled(self, writer: asyncio.StreamWriter) -> None:
        self._links.add((writer, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link) -> None:
        try:
            while data := await reader.read(65536):
                while self.mode == "stall" and link in self._links:
                    await asyncio.sleep(0.05)
                if link not in self._links:
                    return
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self._cut(link)

    def _cut(self, link) -> None:
        if link in self._links:
            self._links.discard(link)
            for w in link:
                w.close()

    def refuse(self) -> None:
        self.mode = "refuse"
        for link in list(self._links):
            self._cut(link)

    def stall(self) -> None:
        self.mode = "stall"

    def restore(self) -> None:
        if self.mode == "stall":  # what was held during the stall is gone, as after a real partition
            for link in list(self._links):
                self._cut(link)
        self.mode = "pass"

    async def close(self) -> None:
        self.refuse()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


#: The developer's own settings, left out of a service's environment: it gets only what its test gives.
OURS = ("EMAIL_", "SMTP_", "IMAP_", "TELEGRAM_", "DATABASE_", "AMQP_", "BUS_")


class ServiceProcess:
    """``python -m avalon.services.cli <command>`` with ``env`` (over this process's environment, less the
    developer's own settings); ``kill()`` is SIGKILL, ``start()`` again appends to the same log and
    waits for the ready line."""

    def __init__(self, command: str, env: dict[str, str], log: Path, ready: str) -> None:
        self.command, self.log, self.ready = command, log, ready
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith(OURS)},
                    "LOG_LEVEL": "INFO", "OPS_LISTEN": "off", "PYTHONPATH": str(ROOT), **env}
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.kills = 0

    async def start(self, timeout: float = 90) -> None:
        self.starts += 1
        with self.log.open("a") as out:
            out.write(f"--- start {self.starts}\n")
            out.flush()
            self.proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", self.command], cwd=ROOT,
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while self.text().count(self.ready) < self.starts:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"avalon {self.command} did not start:\n{self.tail()}")
            await asyncio.sleep(0.05)

    def kill(self) -> None:
        self.kills += 1
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    async def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return 0 if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.to_thread(self.proc.wait, 30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.text().splitlines()[-lines:])

    def errors(self) -> list[str]:
        """ERROR lines and tracebacks the service logged: a fault the service expects is not one."""
        return [line for line in self.text().splitlines() if " ERROR " in line or line.startswith("Traceback")]


def require_private_rabbit() -> None:
    why = rabbit_available()
    if why is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"the fault suite needs its own RabbitMQ node: {why}", pytrace=False)
    pytest.skip(f"the fault suite needs its own RabbitMQ node: {why}")
