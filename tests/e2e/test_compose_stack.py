"""The compose stack for real, as a Telegram-only host with several engines sets it up (.env: the
bot's token, COMPOSE_PROFILES=telegram, no email password and ENGINE_PARTITIONS=6; `up -d --scale
engine=3`, as docs/operations.md says): the image built from this checkout, RabbitMQ, PostgreSQL, the
migration step, three engines and the Telegram gateway under Docker (it waits for a Telegram it
cannot reach from here). The engines even out the six command partitions (two each); a game is
played over the stack's bus by scripted players in a container of the image (narration rendered
there, in six languages), and in its middle the engine serving the game's partition is killed with
the game's next command in its hands (frozen by `docker pause` as the command reaches it, then
SIGKILLed), then the engine that took the partition over is stopped (`docker stop`) as the game goes
on: the last engine takes every partition and the game goes on to its end, each command applied
once, no event lost. Then commands queued while the engines are down survive `docker compose down &&
up` with the volumes kept, and so does the finished game.

Needs a Docker engine with `docker compose` (v2). `.ci/run` installs one where it can (with
../shared/compose/standin-images.sh, which also builds local stand-ins for the base images on a
machine that reaches no registry) and then sets AVALON_REQUIRE_DOCKER=1: from then on a missing
Docker is a failure, not a skip. Elsewhere the test skips, saying why.
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from avalon.shared.bus.rabbit import partition_of

ROOT = Path(__file__).resolve().parents[2]
PLAYER = Path(__file__).with_name("stack_player.py")
BUILT = ("broker-users", "migrate", "engine", "telegram")  # the services built from the Dockerfile
ENGINES = 3  # `up -d --scale engine=3`
PARTITIONS = 6  # ENGINE_PARTITIONS in .env
APPLIED = 'avalon_commands_total{result="applied"}'
DUPLICATE = 'avalon_commands_total{result="duplicate"}'  # a command seen before, delivered again: dropped

pytestmark = pytest.mark.slow


def _docker_problem() -> str | None:
    if shutil.which("docker") is None:
        return "no docker command on this machine"
    for probe, what in ((["docker", "info"], "no Docker engine answers"),
                        (["docker", "compose", "version"], "no docker compose v2 plugin")):
        try:
            if subprocess.run(probe, capture_output=True, timeout=30).returncode != 0:
                return what
        except (OSError, subprocess.TimeoutExpired):
            return what
    return None


def require_docker(what: str) -> None:
    """Skip, saying why, when Docker cannot run here; fail instead where it must (AVALON_REQUIRE_DOCKER=1)."""
    problem = _docker_problem()
    if problem:
        if os.environ.get("AVALON_REQUIRE_DOCKER") == "1":
            pytest.fail(f"Docker is required here (AVALON_REQUIRE_DOCKER=1) but {problem}")
        pytest.skip(f"{what} is not run: {problem} (see ../shared/compose or install Docker)")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    require_docker("the compose stack")
    scratch = tmp_path_factory.mktemp("stack")
    env = scratch / "env"
    admin = secrets.token_hex(12)
    # a Telegram-only host: no EMAIL_AMQP_PASSWORD, nothing of the email channel
    env.write_text(f"POSTGRES_PASSWORD={secrets.token_hex(12)}\nRABBITMQ_PASSWORD={admin}\n"
                   + "".join(f"{s}_AMQP_PASSWORD={secrets.token_hex(12)}\n" for s in ("ENGINE", "TELEGRAM"))
                   + f"TELEGRAM_BOT_TOKEN=123456:{secrets.token_hex(8)}\nCOMPOSE_PROFILES=telegram\n"
                   + f"ENGINE_PARTITIONS={PARTITIONS}\n")
    # Builds on the host's network: a daemon without a default bridge (as here) cannot build otherwise.
    override = scratch / "override.yml"
    override.write_text("services:\n" + "".join(f"  {s}:\n    build:\n      network: host\n" for s in BUILT))
    stack = Stack(f"avalon-test-{secrets.token_hex(3)}", env, override, f"amqp://avalon:{admin}@rabbitmq:5672/")
    try:
        stack.compose("build", timeout=900)
        yield stack
    finally:
        stack.compose("down", "-v", "--remove-orphans", "--timeout", "20", check=False, timeout=180)


class Stack:
    def __init__(self, project: str, env: Path, override: Path, admin_url: str) -> None:
        self.project = project
        self.admin_url = admin_url  # the players stand for any channel: the broker's admin, not a service's user
        self.base = ["docker", "compose", "-p", project, "--env-file", str(env),
                     "-f", str(ROOT / "docker-compose.yml"), "-f", str(override)]

    def compose(self, *args: str, check: bool = True, timeout: float = 300, stdin: Path | None = None
                ) -> subprocess.CompletedProcess:
        feed = stdin.read_bytes() if stdin else b""
        done = subprocess.run([*self.base, *args], cwd=ROOT, input=feed, capture_output=True, timeout=timeout)
        out = subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(errors="replace"),
                                          done.stderr.decode(errors="replace"))
        if check and out.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {out.returncode}:\n{out.stdout[-3000:]}\n"
                                 f"{out.stderr[-3000:]}\n{self.logs()}")
        return out

    def logs(self) -> str:
        return self.compose("logs", "--no-color", "--tail", "40", check=False, timeout=60).stdout[-6000:]

    def states(self) -> dict[str, str]:
        """Each service's container's state; the engines' as engine-1, engine-2, ..."""
        out = self.compose("ps", "-a", "--format", "json", check=False, timeout=60).stdout
        rows = [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]
        states: dict[str, str] = {}
        for row in rows:
            replica = re.fullmatch(rf"{re.escape(self.project)}-{re.escape(row['Service'])}-(\d+)", row["Name"])
            if replica is None:
                continue  # a one-off container (`compose run`)
            name = f"engine-{replica.group(1)}" if row["Service"] == "engine" else row["Service"]
            states[name] = f"{row.get('State')}/{row.get('Health') or '-'}"
        return states

    def up_until_healthy(self, timeout: float = 240) -> float:
        """`up -d --scale engine=3`, until the three engines are healthy."""
        started = time.monotonic()
        self.compose("up", "-d", "--scale", f"engine={ENGINES}", timeout=600)
        while (engines := {k: v for k, v in self.states().items() if k.startswith("engine-")}) != {
                f"engine-{n}": "running/healthy" for n in range(1, ENGINES + 1)}:
            assert time.monotonic() - started < timeout, f"the engines are {engines} after {timeout} s:\n{self.logs()}"
            time.sleep(1)
        return time.monotonic() - started

    # -- the engines, one by one (engine-1 .. engine-3) -------------------------------------------

    def engine_name(self, n: int) -> str:
        return f"{self.project}-engine-{n}"

    def running_engines(self) -> list[int]:
        return sorted(int(k.removeprefix("engine-")) for k, v in self.states().items()
                      if k.startswith("engine-") and v.startswith("running"))

    def engine_log(self, n: int) -> str:
        done = subprocess.run(["docker", "logs", self.engine_name(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=60)
        return done.stdout.decode(errors="replace")

    def served(self, n: int, since: int = 0, keep: bool = False) -> set[int]:
        """The partitions engine n serves, as its log tells (taken over, handed on or lost); `keep`: every
        one it took over after that offset of its log, whether it still serves it or not."""
        served: set[int] = set()
        for line in self.engine_log(n)[since:].splitlines():
            found = re.search(r"command partition\(s\) ([\d, ]+) (served here|no longer served)", line)
            if found:
                numbers = {int(p) for p in found.group(1).split(",")}
                served = served | numbers if found.group(2) == "served here" or keep else served - numbers
        return served

    def sharing(self, counts: list[int], timeout: float = 60) -> tuple[dict[int, set[int]], float]:
        """Until the running engines serve every partition, each by one engine, so many each (sorted
        counts): what each serves, and how long it took."""
        started = time.monotonic()
        while True:
            served = {n: self.served(n) for n in self.running_engines()}
            if sorted(map(len, served.values())) == counts and set().union(*served.values()) == set(range(PARTITIONS)):
                return served, time.monotonic() - started
            assert time.monotonic() - started < timeout, f"the engines serve {served} after {timeout} s, " \
                f"not {counts}:\n" + "\n".join(self.engine_log(n)[-2500:] for n in served)
            time.sleep(0.5)

    def server_of(self, partition: int, timeout: float = 60, gone: tuple[int, ...] = ()) -> tuple[int, float]:
        """The one running engine (not one of `gone`) whose log says it serves the partition, and how long
        it took to find."""
        started = time.monotonic()
        while True:
            serving = [n for n in self.running_engines() if n not in gone and partition in self.served(n)]
            if len(serving) == 1:
                return serving[0], time.monotonic() - started
            assert len(serving) == 0, f"partition {partition} served by engines {serving} at once"
            assert time.monotonic() - started < timeout, f"nobody serves partition {partition} after {timeout} s"
            time.sleep(0.2)

    def in_engine(self, *command: str, n: int = 1) -> str:
        return self.compose("exec", "-T", "--index", str(n), "engine", *command, timeout=120).stdout

    def metrics(self, n: int) -> dict[str, float]:
        text = self.in_engine("python3", "-c", "import urllib.request as u; "
                              "print(u.urlopen('http://127.0.0.1:9100/metrics').read().decode())", n=n)
        return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
                for line in text.splitlines() if line.startswith("avalon_")}

    def docker(self, *args: str, timeout: float = 60) -> float:
        started = time.monotonic()
        done = subprocess.run(["docker", *args], capture_output=True, timeout=timeout)
        assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr.decode(errors='replace')}"
        return time.monotonic() - started

    def player(self, *args: str) -> dict:
        """stack_player.py in a new container of the image, on the stack's network and settings (as the
        broker's admin: its players' queues belong to no service's user)."""
        out = self.compose("run", "--rm", "-T", "--no-deps", "-e", f"AMQP_URL={self.admin_url}", "engine",
                           "python3", "-", *args, stdin=PLAYER, timeout=300)
        line = next((line for line in out.stdout.splitlines() if line.startswith("RESULT ")), None)
        assert line, f"no result from the players:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        return json.loads(line.removeprefix("RESULT "))


class Playing:
    """stack_player.py's `play GAME Q...` running in the background (a container named for the test):
    the test waits for each pause (after the Q-th quest), does something, and lets the game go on."""

    def __init__(self, stack: Stack, game: str, *pauses: int) -> None:
        self.stack = stack
        self.name = f"{stack.project}-player"
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.out: list[str] = []
        self.err: list[str] = []
        self.process = subprocess.Popen(
            [*stack.base, "run", "--rm", "-T", "--no-deps", "--name", self.name, "-e", f"AMQP_URL={stack.admin_url}",
             "engine", "python3", "-", "play", game, *map(str, pauses)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.process.stdin is not None
        self.process.stdin.write(PLAYER.read_bytes())
        self.process.stdin.close()
        threading.Thread(target=self._read, args=(self.process.stdout, self.out, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.process.stderr, self.err, None), daemon=True).start()

    @staticmethod
    def _read(stream, into: list[str], lines: queue.Queue | None) -> None:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            into.append(line)
            if lines is not None:
                lines.put(line)
        if lines is not None:
            lines.put(None)

    def _next(self, timeout: float) -> str:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing from the players in {timeout} s:\n{self._said()}") from None
        assert line is not None, f"the players stopped:\n{self._said()}"
        return line

    def _said(self) -> str:
        return "\n".join(self.out[-30:]) + "\n" + "\n".join(self.err[-100:])

    def paused(self, quest: int, timeout: float = 150) -> None:
        deadline = time.monotonic() + timeout
        while (line := self._next(max(deadline - time.monotonic(), 0.1))) != f"PAUSED {quest}":
            assert not line.startswith("RESULT "), f"the game ended before quest {quest} was over: {line}"

    def go(self, quest: int) -> None:
        self.stack.docker("exec", self.name, "touch", f"/tmp/go-{quest}")

    def sent(self, timeout: float = 60) -> str:
        """The next command the players sent (on the broker), once they have."""
        deadline = time.monotonic() + timeout
        while not (line := self._next(max(deadline - time.monotonic(), 0.1))).startswith("SENT "):
            assert not line.startswith("RESULT "), f"the game ended: {line}"
        return line.removeprefix("SENT ")

    def result(self, timeout: float = 150) -> dict:
        deadline = time.monotonic() + timeout
        while not (line := self._next(max(deadline - time.monotonic(), 0.1))).startswith("RESULT "):
            pass
        self.process.wait(timeout=60)
        return json.loads(line.removeprefix("RESULT "))

    def close(self) -> None:
        if self.process.poll() is None:
            subprocess.run(["docker", "rm", "-f", self.name], capture_output=True, timeout=60)
            self.process.kill()
            self.process.wait(timeout=30)


def test_a_telegram_only_stack_of_three_engines_plays_a_game_through_engines_dying_and_keeps_it_all(stack):
    took = stack.up_until_healthy()
    # three engines, six partitions: two each, each partition served by one engine
    served, evened = stack.sharing([2, 2, 2])
    print(f"\nthe engines healthy {took:.1f} s after `up -d`, the partitions evened out {evened:.1f} s later: {served}")
    states = stack.states()
    assert states["migrate"].startswith("exited") and states["broker-users"].startswith("exited"), states
    assert "email" not in states, "no gateway runs without its profile"
    assert states["telegram"].startswith("running"), states
    users = stack.compose("logs", "--no-color", "broker-users", timeout=60).stdout
    assert "avalon-engine in vhost" in users and "avalon-telegram in vhost" in users, users
    assert "avalon-email" not in users and "COMPOSE_PROFILES" not in users, "no email user, nothing to warn of"
    waited = time.monotonic()  # no network out of this machine's containers: the gateway waits for Telegram
    while "Telegram Bot API at https://api.telegram.org unreachable" not in (
            telegram := stack.compose("logs", "--no-color", "telegram", timeout=60).stdout):
        assert time.monotonic() - waited < 180, f"the gateway does not say it waits:\n{telegram[-3000:]}"
        time.sleep(2)
    assert stack.states()["telegram"].startswith("running"), "it waits, it is not restarted"
    assert "Traceback" not in telegram and "avalon: error" not in telegram, telegram[-3000:]

    # broker-users, as `up` runs it: the telegram profile without its password stops the stack in one line;
    # the bot's token set with the profile off is warned of
    missing = stack.compose("run", "--rm", "-T", "--no-deps", "-e", "TELEGRAM_AMQP_PASSWORD=", "broker-users",
                            check=False, timeout=120)
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert "TELEGRAM_AMQP_PASSWORD is not set" in missing.stderr and "Traceback" not in missing.stderr
    off = stack.compose("run", "--rm", "-T", "--no-deps", "-e", "COMPOSE_PROFILES=", "broker-users", timeout=180)
    assert "TELEGRAM_BOT_TOKEN is set but COMPOSE_PROFILES does not have telegram" in off.stderr, off.stderr

    for n in range(1, ENGINES + 1):
        ready = json.loads(stack.in_engine("python3", "-c", "import urllib.request as u; "
                                           "print(u.urlopen('http://127.0.0.1:9100/readyz').read().decode())", n=n))
        assert ready["ready"] and set(ready["components"]) >= {"bus", "database", "engine"}, (n, ready)

    assert [stack.metrics(n)["avalon_engine_partitions"] for n in sorted(served)] == [2.0] * ENGINES

    # a game, through the engine serving its partition killed after the first quest (frozen, the game's
    # next command sent to it, then SIGKILLed: a command delivered to it and not handled goes to the next
    # engine), then the one that took the partition over stopped after the second (`docker stop` as the
    # game goes on: it hands the partition on as it shuts down); the last engine plays the game to its end
    game_id = "stack-game"
    partition = partition_of(game_id, PARTITIONS)
    applied = 0.0  # commands applied, summed over the engines (each one's just before it goes)
    playing = Playing(stack, game_id, 1, 2)
    frozen: str | None = None
    try:
        playing.paused(1)
        first, _ = stack.server_of(partition)
        applied += stack.metrics(first).get(APPLIED, 0.0)
        marks = {n: len(stack.engine_log(n)) for n in stack.running_engines() if n != first}
        stack.docker("pause", frozen := stack.engine_name(first))
        playing.go(1)
        in_flight = playing.sent()
        time.sleep(0.5)  # the broker hands it to the frozen engine at once (its prefetch: 1024 commands)
        stack.docker("kill", frozen)
        frozen = None
        second, killed = stack.server_of(partition, gone=(first,))
        assert partition in stack.served(second, marks[second], keep=True), "taken over after the kill"
        playing.paused(2)
        served, _ = stack.sharing([3, 3])
        assert first not in served, f"engine-{first} was killed; it is not restarted: {stack.states()}"
        second, _ = stack.server_of(partition)
        before = stack.metrics(second)
        applied += before.get(APPLIED, 0.0)
        marks = {n: len(stack.engine_log(n)) for n in served if n != second}
        started = time.monotonic()
        stopping = subprocess.Popen(["docker", "stop", stack.engine_name(second)], stdout=subprocess.DEVNULL)
        playing.go(2)
        assert stopping.wait(timeout=60) == 0, f"docker stop {stack.engine_name(second)} failed"
        stopped = time.monotonic() - started
        third, _ = stack.server_of(partition, gone=(second,))
        assert partition in stack.served(third, marks[third], keep=True), "taken over after the stop"
        game = playing.result()
    finally:
        playing.close()
        if frozen is not None:
            subprocess.run(["docker", "kill", frozen], capture_output=True, timeout=60)
    after = stack.metrics(third)
    print(f"partition {partition}: engine-{first} killed with {in_flight} in its hands, engine-{second} served "
          f"the partition {killed:.1f} s later; engine-{second} stopped in {stopped:.1f} s, engine-{third} served "
          f"it then; commands applied already and delivered again: {before.get(DUPLICATE, 0):.0f} to "
          f"engine-{second}, {after.get(DUPLICATE, 0):.0f} to engine-{third}; events the players saw twice: "
          f"{len(game['duplicates'])}")
    assert stack.running_engines() == [third], stack.states()
    served, alone = stack.sharing([PARTITIONS])
    print(f"engine-{third} serves every partition {alone:.1f} s after the game ended")
    # polled: a lone engine now hands a partition on every 2 s and takes it straight back (it counts the
    # probe it sent while it did not serve the partition as another engine's), so the gauge flickers
    waited = time.monotonic()
    while (metrics := stack.metrics(third))["avalon_engine_partitions"] != PARTITIONS:
        assert time.monotonic() - waited < 30, metrics
        time.sleep(0.2)
    assert metrics["avalon_engine_partition_takeovers_total"] >= PARTITIONS, metrics
    applied += metrics.get(APPLIED, 0.0)

    assert game["winner"] in ("good", "evil") and game["quests"] >= 3, game
    assert {"game_started", "role_assigned", "quest_resolved", "game_ended"} <= set(game["kinds"]), game
    for locale, count in game["rendered"].items():
        assert count == game["events"], f"{locale}: {count} of {game['events']} events rendered in the image"
    assert game["gaps"] == [], f"events lost on the way (last seen, prev_seq, seq): {game['gaps']}"
    assert applied >= game["events"] / 10, (applied, game["events"])

    assert_applied_once_in_order(stack.in_engine("avalon", "export", game_id, n=third))

    # Commands sent while the engines are down wait in RabbitMQ, and survive the broker's restart.
    stack.compose("stop", "engine")
    assert stack.player("queue", "queued", "5") == {"queued": 5}
    stack.compose("down", timeout=180)
    stack.up_until_healthy()
    assert stack.player("collect", "queued", "5") == {"opened": [f"queued-{i}" for i in range(1, 6)]}
    stack.sharing([2, 2, 2])  # the three engines are back, sharing the partitions again

    log = [json.loads(line) for line in stack.in_engine("avalon", "export", "stack-game").splitlines()
           if line.startswith("{")]
    assert log and log[-1]["event"]["type"] == "game_ended", "the finished game is still in PostgreSQL"


def assert_applied_once_in_order(export: str) -> None:
    """A game's ``avalon export``: each command applied once, in order, whichever engine applied it, and
    the game over."""
    log = [json.loads(line) for line in export.splitlines() if line.startswith("{")]
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1)), [e["seq"] for e in log]
    blocks: list[str] = []
    for e in log:
        if e["caused_by"] is not None and (not blocks or blocks[-1] != e["caused_by"]):
            blocks.append(e["caused_by"])
    assert len(blocks) == len(set(blocks)), "a command's events were applied twice"
    assert log[-1]["event"]["type"] == "game_ended", log[-1]
