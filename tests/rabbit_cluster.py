"""A three-node RabbitMQ cluster on this machine, beside the default node, for tests and benchmarks of
the narrator against a cluster (quorum queues, a node going away and coming back).

The nodes (``avalonc1@localhost`` .. ``avalonc3@localhost`` by default) run from the same install as
the default node (``rabbit@localhost``) but share nothing with it: their own AMQP ports
(``first_port`` ..), distribution ports (``first_port + 20000`` .., RabbitMQ's own convention), data
and log directories under ``base_dir``, an empty enabled_plugins file (so no management or prometheus
listener clashes with the default node's 15672/15692), their own rabbitmq.conf and rabbitmq-env.conf
(the system's /etc/rabbitmq files are not read) and their own HOME with an Erlang cookie (root's
``~/.erlang.cookie`` copied when there is one, else a random one), so that no CLI call of ours writes
into the real HOME. Everything listens on 127.0.0.1 only.

Nodes 2 and 3 join node 1 with ``rabbitmqctl join_cluster``; a node restarted later keeps its data
directory and so rejoins by itself.

No pytest here: ``tests/integration/test_rabbit_cluster.py`` uses it, and so can a bench script::

    python tests/rabbit_cluster.py up [DIR]     # prints the AMQP URLs
    python tests/rabbit_cluster.py down [DIR]
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

MARKER = ".avalon-rabbit-cluster"  # base_dir holds one of our clusters: its contents may be wiped
DEFAULT_DIR = Path("/tmp/avalon-rabbit-cluster")
NODES = 3


class ClusterError(RuntimeError):
    """A node would not start, stop or join; the message carries the node's log tail."""


def rabbitmq_scripts() -> Path | None:
    """The directory of rabbitmq-server and rabbitmqctl, or None when RabbitMQ is not installed.

    On Debian /usr/sbin/rabbitmqctl is a wrapper that su's to the rabbitmq user (and so to that
    user's HOME and cookie): the real scripts in /usr/lib/rabbitmq/bin are used instead."""
    env = os.environ.get("RABBITMQ_SCRIPTS_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(Path("/usr/lib/rabbitmq/bin"))
    found = shutil.which("rabbitmq-server")
    if found:
        candidates.append(Path(found).resolve().parent)
    for directory in candidates:
        if (directory / "rabbitmq-server").is_file() and (directory / "rabbitmqctl").is_file():
            return directory
    return None


def missing_reason() -> str | None:
    """Why a cluster cannot run here, or None when it can."""
    if rabbitmq_scripts() is None:
        return ("no rabbitmq-server on this machine (looked in $RABBITMQ_SCRIPTS_DIR, /usr/lib/rabbitmq/bin "
                "and $PATH); install RabbitMQ (e.g. `apt-get install rabbitmq-server`)")
    return None


def _port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def epmd_names(port: int = 4369) -> dict[str, int]:
    """The node names registered with the local epmd (NAMES_REQ), {} when no epmd runs."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(b"\x00\x01n")
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
    except OSError:
        return {}
    names: dict[str, int] = {}
    for line in data[4:].decode(errors="replace").splitlines():
        parts = line.split()  # "name avalonc1 at port 25701"
        if len(parts) == 5 and parts[0] == "name":
            names[parts[1]] = int(parts[4])
    return names


def _beam_pids_named(nodenames: Sequence[str]) -> dict[int, str]:
    """Processes (beam.smp) started with RABBITMQ_NODENAME set to one of these names, as pid -> name.

    Found by environment, not by command line (RabbitMQ starts its distribution after boot, so the
    name is not in the arguments): this catches the nodes of an earlier, aborted run whatever cookie
    it used, and never the default node."""
    wanted = {f"RABBITMQ_NODENAME={n}".encode(): n for n in nodenames}
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not os.readlink(entry / "exe").endswith("beam.smp"):
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in environ:
            if item in wanted:
                found[int(entry.name)] = wanted[item]
                break
    return found


def _terminate(pids, grace: float) -> None:
    """SIGTERM (a node's clean shutdown), then SIGKILL to whichever is still alive after ``grace`` s."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if _pid_alive(pid):
            _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        return f"(no {path}: {e.strerror})"
    return "\n".join(text.splitlines()[-lines:]) or f"({path} is empty)"


class RabbitCluster:
    """Three RabbitMQ nodes clustered on 127.0.0.1. ``start()`` … ``stop()``; see the module's doc."""

    def __init__(self, base_dir: Path, *, first_port: int = 5701, name: str = "avalonc",
                 plugins: Sequence[str] = (), boot_timeout: float = 120.0) -> None:
        """``plugins``: enabled on every node (none by default); rabbitmq_management then listens on
        first_port + 10000 + i and rabbitmq_prometheus on first_port + 10100 + i."""
        self.base_dir = Path(base_dir).resolve()
        self.first_port = first_port
        self.name = name
        self.plugins = list(plugins)
        self.boot_timeout = boot_timeout
        self.nodenames = [f"{name}{i + 1}@localhost" for i in range(NODES)]
        self.ports = [first_port + i for i in range(NODES)]
        self.dist_ports = [first_port + 20000 + i for i in range(NODES)]
        self._procs: list[subprocess.Popen | None] = [None] * NODES
        self._scripts: Path | None = None

    # ---------------------------------------------------------------- public

    def urls(self) -> list[str]:
        return [f"amqp://guest:guest@127.0.0.1:{port}/" for port in self.ports]

    def start(self) -> None:
        """Start the three nodes afresh (whatever an earlier run left is stopped and wiped), join 2 and
        3 to 1; returns once all three run and each sees the other two."""
        self._scripts = self._require_scripts()
        self._kill_strays()
        self._prepare_dir()
        self._check_ports_free()
        for i in range(NODES):
            self._launch(i)
        for i in range(NODES):
            self._await_node(i)
        seed = self.nodenames[0]
        for i in range(1, NODES):
            self.ctl(i, "stop_app")
            self.ctl(i, "join_cluster", seed)
            self.ctl(i, "start_app")
        for i in range(NODES):
            self._await_clustered(i)

    def stop_node(self, i: int, *, kill: bool = False) -> None:
        """Stop node i's whole Erlang VM: ``rabbitmqctl stop`` (an operator), or with ``kill`` a SIGKILL
        of its beam process (a crash). Returns once its AMQP port refuses and epmd forgot it."""
        if kill:
            pid = self._beam_pid(i)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
        elif self._running(i):
            pid = self._beam_pid(i)
            result = self.ctl(i, "stop", check=False, timeout=60)
            if result.returncode != 0 and pid is not None and _pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        self._await_down(i)

    def start_node(self, i: int) -> None:
        """Start node i again on its data directory: it rejoins the cluster. Returns once it runs and
        is clustered with the other running nodes."""
        self._scripts = self._require_scripts()
        if self._running(i):
            raise ClusterError(f"{self.nodenames[i]} is already running")
        self._launch(i)
        self._await_node(i)
        self._await_clustered(i)

    def stop(self) -> None:
        """Stop every node (SIGTERM: a clean shutdown; SIGKILL after 30 s) and wait until none is left.
        Idempotent; also stops nodes of ours that an earlier process started."""
        pids = set(_beam_pids_named(self.nodenames))
        for i in range(NODES):
            pid = self._beam_pid(i)
            if pid is not None:
                pids.add(pid)
        _terminate(pids, 30)
        for i in range(NODES):
            self._await_down(i)

    def running_nodes(self, i: int) -> list[str]:
        """The running cluster members as node i sees them (``rabbitmqctl cluster_status``)."""
        out = self.ctl(i, "cluster_status", "--formatter", "json").stdout
        return sorted(json.loads(out[out.index("{"):])["running_nodes"])

    def ctl(self, i: int, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        """``rabbitmqctl -n <node i> ARGS`` with the cluster's HOME (cookie) and env file."""
        scripts = self._scripts or self._require_scripts()
        command = [str(scripts / "rabbitmqctl"), "-n", self.nodenames[i], *args]
        try:
            result = subprocess.run(command, env=self._cli_env(), capture_output=True, text=True,
                                    timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise ClusterError(f"`{' '.join(command[1:])}` took over {timeout:.0f} s"
                               + self._log_report(i)) from e
        if check and result.returncode != 0:
            raise ClusterError(f"`rabbitmqctl {' '.join(command[1:])}` failed ({result.returncode}):\n"
                               f"{result.stdout}{result.stderr}" + self._log_report(i))
        return result

    # --------------------------------------------------------------- layout

    def _node_dir(self, i: int) -> Path:
        return self.base_dir / f"node{i + 1}"

    def _log_file(self, i: int) -> Path:
        return self._node_dir(i) / "log" / f"{self.nodenames[i]}.log"

    def _pid_file(self, i: int) -> Path:
        return self._node_dir(i) / f"{self.nodenames[i]}.pid"

    def _home(self) -> Path:
        return self.base_dir / "home"

    def _common_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("RABBITMQ_", "ERL_", "ERLANG_")) and k != "NODENAME"}
        env.update(
            HOME=str(self._home()),
            RABBITMQ_CONF_ENV_FILE=str(self.base_dir / "rabbitmq-env.conf"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(self.base_dir / "enabled_plugins"),
            ERL_EPMD_ADDRESS="127.0.0.1",  # should our node be the one to start epmd
            LANG=env.get("LANG", "C.UTF-8"),
        )
        return env

    def _cli_env(self) -> dict[str, str]:
        return self._common_env()

    def _node_env(self, i: int) -> dict[str, str]:
        d = self._node_dir(i)
        env = self._common_env()
        env.update(
            RABBITMQ_NODENAME=self.nodenames[i],
            RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
            RABBITMQ_NODE_PORT=str(self.ports[i]),
            RABBITMQ_DIST_PORT=str(self.dist_ports[i]),
            RABBITMQ_MNESIA_BASE=str(d / "mnesia"),
            RABBITMQ_LOG_BASE=str(d / "log"),
            RABBITMQ_CONFIG_FILE=str(d / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(d / "advanced.config"),  # none: not the system's
            RABBITMQ_PID_FILE=str(self._pid_file(i)),
            # distribution on loopback only, as the default node's ERL_FLAGS do
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}",
        )
        return env

    def _prepare_dir(self) -> None:
        base = self.base_dir
        if base.exists():
            entries = [p for p in base.iterdir() if p.name != MARKER]
            if entries and not (base / MARKER).exists():
                raise ClusterError(f"{base} is not empty and holds no cluster of ours ({MARKER}); "
                                   "refusing to wipe it: give an empty or new directory")
            for p in entries:
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()
        base.mkdir(parents=True, exist_ok=True)
        (base / MARKER).write_text("a RabbitCluster's directory (tests/rabbit_cluster.py); wiped on start\n")
        home = self._home()
        home.mkdir()
        cookie = home / ".erlang.cookie"
        own = Path(os.path.expanduser("~")) / ".erlang.cookie"
        try:
            value = own.read_text().strip()
        except OSError:
            value = ""
        cookie.write_text(value or secrets.token_hex(20).upper())
        cookie.chmod(0o400)
        (base / "rabbitmq-env.conf").write_text("# the cluster's own: /etc/rabbitmq/rabbitmq-env.conf is not read\n")
        (base / "enabled_plugins").write_text(f"[{','.join(self.plugins)}].\n")
        for i in range(NODES):
            d = self._node_dir(i)
            (d / "log").mkdir(parents=True)
            (d / "mnesia").mkdir()
            conf = [
                f"listeners.tcp.1 = 127.0.0.1:{self.ports[i]}",
                "cluster_name = " + self.name,
                "log.console = false",
                "log.file.level = info",
                "loopback_users.guest = true",
            ]
            if "rabbitmq_management" in self.plugins:
                conf += [f"management.tcp.port = {self.first_port + 10000 + i}",
                         "management.tcp.ip = 127.0.0.1"]
            if "rabbitmq_prometheus" in self.plugins:
                conf += [f"prometheus.tcp.port = {self.first_port + 10100 + i}",
                         "prometheus.tcp.ip = 127.0.0.1"]
            (d / "rabbitmq.conf").write_text("\n".join(conf) + "\n")

    # ------------------------------------------------------------ processes

    def _require_scripts(self) -> Path:
        scripts = rabbitmq_scripts()
        if scripts is None:
            raise ClusterError(missing_reason() or "no RabbitMQ")
        return scripts

    def _check_ports_free(self) -> None:
        registered = epmd_names()
        for i in range(NODES):
            short = self.nodenames[i].split("@")[0]
            if short in registered:
                raise ClusterError(f"epmd still lists {short} (port {registered[short]}) after stopping "
                                   "our strays: another user's node of that name? pick another `name`")
            for port in (self.ports[i], self.dist_ports[i]):
                if _port_open(port):
                    raise ClusterError(f"port {port} (for {self.nodenames[i]}) is already in use; "
                                       "pick another first_port")

    def _launch(self, i: int) -> None:
        self._pid_file(i).unlink(missing_ok=True)
        out = open(self._node_dir(i) / "stdout.log", "ab")
        try:
            self._procs[i] = subprocess.Popen(
                [str(self._scripts / "rabbitmq-server")], env=self._node_env(i), cwd=self._node_dir(i),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives a Ctrl-C of ours, and `up` can exit leaving it running
            )
        finally:
            out.close()

    def _beam_pid(self, i: int) -> int | None:
        try:
            pid = int(self._pid_file(i).read_text().strip())
        except (OSError, ValueError):
            pid = None
        if pid is not None and _pid_alive(pid):
            return pid
        found = [p for p, n in _beam_pids_named([self.nodenames[i]]).items()]
        return found[0] if found else None

    def _running(self, i: int) -> bool:
        return self._beam_pid(i) is not None

    def _kill_strays(self) -> None:
        """Stop nodes with our names left by an aborted run (SIGTERM, then SIGKILL)."""
        strays = _beam_pids_named(self.nodenames)
        if not strays:
            return
        _terminate(strays, 20)
        for i in range(NODES):
            self._await_down(i)

    def _log_report(self, i: int) -> str:
        d = self._node_dir(i)
        return (f"\n--- tail of {self._log_file(i)} ---\n{_tail(self._log_file(i))}"
                f"\n--- tail of {d / 'stdout.log'} ---\n{_tail(d / 'stdout.log', 60)}")

    def _await_node(self, i: int) -> None:
        """Until node i's AMQP port answers and `rabbitmqctl await_startup` agrees."""
        deadline = time.monotonic() + self.boot_timeout
        proc = self._procs[i]
        while not _port_open(self.ports[i]):
            if proc is not None and proc.poll() is not None:
                raise ClusterError(f"{self.nodenames[i]} exited (status {proc.returncode}) before opening port "
                                   f"{self.ports[i]}"
                                   + self._log_report(i))
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.nodenames[i]} did not open port {self.ports[i]} within "
                                   f"{self.boot_timeout:.0f} s" + self._log_report(i))
            time.sleep(0.25)
        left = max(5, deadline - time.monotonic())
        self.ctl(i, "await_startup", "--timeout", str(int(left)), timeout=left + 15)

    def _await_clustered(self, i: int) -> None:
        """Until node i's cluster_status lists every node that is running as running."""
        expected = sorted(n for j, n in enumerate(self.nodenames) if self._running(j))
        deadline = time.monotonic() + self.boot_timeout
        seen: list[str] = []
        while True:
            try:
                seen = self.running_nodes(i)
            except (ClusterError, ValueError, KeyError):
                seen = []
            if seen == expected:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.nodenames[i]} sees running nodes {seen}, expected {expected}, "
                                   f"after {self.boot_timeout:.0f} s" + self._log_report(i))
            time.sleep(1)

    def _await_down(self, i: int, timeout: float = 60) -> None:
        """Until node i's beam is gone, its AMQP port refuses and epmd no longer lists it."""
        deadline = time.monotonic() + timeout
        short = self.nodenames[i].split("@")[0]
        while self._running(i) or _port_open(self.ports[i]) or short in epmd_names():
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.nodenames[i]} still running/listening {timeout:.0f} s after "
                                   "being stopped" + self._log_report(i))
            time.sleep(0.2)
        proc = self._procs[i]
        if proc is not None:
            try:
                proc.wait(timeout=10)  # the wrapper script exits once its beam has
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self._procs[i] = None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("up", "down") or len(args) > 2:
        print(f"usage: {Path(sys.argv[0]).name} up|down [DIR]   (DIR defaults to {DEFAULT_DIR})",
              file=sys.stderr)
        return 2
    first_port = int(os.environ.get("AVALON_CLUSTER_FIRST_PORT", "5701"))
    cluster = RabbitCluster(Path(args[1]) if len(args) > 1 else DEFAULT_DIR, first_port=first_port)
    started = time.monotonic()
    try:
        if args[0] == "up":
            cluster.start()
            print(f"cluster up in {time.monotonic() - started:.1f} s: {', '.join(cluster.nodenames)}",
                  file=sys.stderr)
            for url in cluster.urls():
                print(url)
        else:
            cluster.stop()
            print(f"cluster down in {time.monotonic() - started:.1f} s", file=sys.stderr)
    except ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
