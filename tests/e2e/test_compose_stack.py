"""The compose stack for real, as a Telegram-only host sets it up (.env: the bot's token,
COMPOSE_PROFILES=telegram and no email password): the image built from this checkout, RabbitMQ,
PostgreSQL, the migration step, the engine and the Telegram gateway under Docker (it waits for a
Telegram it cannot reach from here); a game played over the stack's bus by scripted
players in a container of the image (narration rendered there, in six languages); then commands
queued while the engine is down survive `docker compose down && up` with the volumes kept, and
so does the finished game.

Needs a Docker engine with `docker compose` (v2). `.ci/run` installs one where it can (with
../shared/compose/standin-images.sh, which also builds local stand-ins for the base images on a
machine that reaches no registry) and then sets AVALON_REQUIRE_DOCKER=1: from then on a missing
Docker is a failure, not a skip. Elsewhere the test skips, saying why.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAYER = Path(__file__).with_name("stack_player.py")
BUILT = ("broker-users", "migrate", "engine", "telegram")  # the services built from the Dockerfile

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


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    problem = _docker_problem()
    if problem:
        if os.environ.get("AVALON_REQUIRE_DOCKER") == "1":
            pytest.fail(f"Docker is required here (AVALON_REQUIRE_DOCKER=1) but {problem}")
        pytest.skip(f"the compose stack is not run: {problem} (see ../shared/compose or install Docker)")
    scratch = tmp_path_factory.mktemp("stack")
    env = scratch / "env"
    admin = secrets.token_hex(12)
    # a Telegram-only host: no EMAIL_AMQP_PASSWORD, nothing of the email channel
    env.write_text(f"POSTGRES_PASSWORD={secrets.token_hex(12)}\nRABBITMQ_PASSWORD={admin}\n"
                   + "".join(f"{s}_AMQP_PASSWORD={secrets.token_hex(12)}\n" for s in ("ENGINE", "TELEGRAM"))
                   + f"TELEGRAM_BOT_TOKEN=123456:{secrets.token_hex(8)}\nCOMPOSE_PROFILES=telegram\n")
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
        out = self.compose("ps", "-a", "--format", "json", check=False, timeout=60).stdout
        rows = [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]
        return {row["Service"]: f"{row.get('State')}/{row.get('Health') or '-'}" for row in rows}

    def up_until_healthy(self, service: str = "engine", timeout: float = 240) -> float:
        started = time.monotonic()
        self.compose("up", "-d", timeout=600)
        while (state := self.states().get(service)) != "running/healthy":
            assert time.monotonic() - started < timeout, f"{service} is {state} after {timeout} s:\n{self.logs()}"
            time.sleep(1)
        return time.monotonic() - started

    def player(self, *args: str) -> dict:
        """stack_player.py in a new container of the image, on the stack's network and settings (as the
        broker's admin: its players' queues belong to no service's user)."""
        out = self.compose("run", "--rm", "-T", "--no-deps", "-e", f"AMQP_URL={self.admin_url}", "engine",
                           "python3", "-", *args, stdin=PLAYER, timeout=300)
        line = next((line for line in out.stdout.splitlines() if line.startswith("RESULT ")), None)
        assert line, f"no result from the players:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        return json.loads(line.removeprefix("RESULT "))

    def in_engine(self, *command: str) -> str:
        return self.compose("exec", "-T", "engine", *command, timeout=120).stdout


def test_a_telegram_only_stack_comes_up_plays_a_game_and_keeps_everything_across_down_and_up(stack):
    took = stack.up_until_healthy()
    states = stack.states()
    assert states["migrate"].startswith("exited") and states["broker-users"].startswith("exited"), states
    assert "email" not in states, "no gateway runs without its profile"
    assert states["telegram"].startswith("running"), states
    print(f"\nengine healthy {took:.1f} s after `up -d`")
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

    ready = json.loads(stack.in_engine("python3", "-c", "import urllib.request as u; "
                                       "print(u.urlopen('http://127.0.0.1:9100/readyz').read().decode())"))
    assert ready["ready"] and set(ready["components"]) >= {"bus", "database", "engine"}, ready

    game = stack.player("play", "stack-game")
    assert game["winner"] in ("good", "evil"), game
    assert {"game_started", "role_assigned", "quest_resolved", "game_ended"} <= set(game["kinds"]), game
    for locale, count in game["rendered"].items():
        assert count == game["events"], f"{locale}: {count} of {game['events']} events rendered in the image"

    metrics = stack.in_engine("python3", "-c", "import urllib.request as u; "
                              "print(u.urlopen('http://127.0.0.1:9100/metrics').read().decode())")
    applied = next(float(line.split()[-1]) for line in metrics.splitlines()
                   if line.startswith('avalon_commands_total{result="applied"}'))
    assert applied >= game["events"] / 10, metrics[-2000:]

    # Commands sent while the engine is down wait in RabbitMQ, and survive the broker's restart.
    stack.compose("stop", "engine")
    assert stack.player("queue", "queued", "5") == {"queued": 5}
    stack.compose("down", timeout=180)
    stack.up_until_healthy()
    assert stack.player("collect", "queued", "5") == {"opened": [f"queued-{i}" for i in range(1, 6)]}

    log = [json.loads(line) for line in stack.in_engine("avalon", "export", "stack-game").splitlines()
           if line.startswith("{")]
    assert log and log[-1]["event"]["type"] == "game_ended", "the finished game is still in PostgreSQL"
