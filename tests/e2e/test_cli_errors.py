"""What a host sees when something is wrong: one clear line and a non-zero exit, or a clean wait
for a server that comes back by itself; never a traceback."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from avalon.shared.bus.rabbit import RabbitBus
from tests.fakes.telegram_api import FakeTelegram
from tests.integration.conftest import amqp_url, rabbit_prefix  # noqa: F401  (fixtures)
from tests.mailservers import mail_servers  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]


def env_for(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "EMAIL_", "SMTP_", "IMAP_"))}
    env.update({"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}", "OPS_LISTEN": "off",
                "PYTHONPATH": str(ROOT)})
    env.update(settings)
    return env


def avalon(tmp_path: Path, *args: str, **settings: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "avalon.services.cli", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env_for(tmp_path, **settings))


def one_error_line(done: subprocess.CompletedProcess, *words: str) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("avalon: error:")]
    assert len(errors) == 1, done.stderr
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


class Running:
    """A long-running avalon command, its log, and a signal to end it."""

    def __init__(self, tmp_path: Path, *args: str, **settings: str) -> None:
        self.log = tmp_path / f"{args[0]}.log"
        self.out = self.log.open("w")
        self.proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", *args], cwd=tmp_path,
                                     env=env_for(tmp_path, **settings), stdout=self.out, stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text()

    def wait_for(self, needle: str, timeout: float = 60, count: int = 1) -> None:
        deadline = time.monotonic() + timeout
        while self.text().count(needle) < count:
            assert self.proc.poll() is None, f"exited {self.proc.returncode}:\n{self.text()}"
            assert time.monotonic() < deadline, f"no {needle!r} ({count}x) within {timeout} s:\n{self.text()}"
            time.sleep(0.1)

    def stop(self, sig=signal.SIGTERM) -> int:  # as a service manager stops it (Ctrl-C: SIGINT, 130)
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.out.close()


def test_a_closed_pipe_ends_quietly_without_a_traceback(tmp_path):
    done = subprocess.run(f"{sys.executable} -m avalon.services.cli schema | head -n 1", shell=True, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "{"
    assert done.stderr == "", done.stderr


@pytest.mark.parametrize("setting, value, words", [
    ("LOG_LEVEL", "loud", ("LOG_LEVEL", "loud", "DEBUG")),
    ("DATABASE_URL", "garbage", ("DATABASE_URL", "garbage", "postgresql+asyncpg://")),
    ("DATABASE_URL", "mysql://u@h/db", ("DATABASE_URL", "mysql", "sqlite+aiosqlite:///")),
    ("OPS_LISTEN", "bogus", ("OPS_LISTEN", "bogus", "HOST:PORT")),
    ("TELEGRAM_BOT_TOKEN", "not-a-token", ("TELEGRAM_BOT_TOKEN", "@BotFather")),
    ("TELEGRAM_LIMITS", "fast", ("TELEGRAM_LIMITS", "fast", "three numbers")),
    ("THROTTLE_RATE", "-1", ("THROTTLE_RATE", "0 (off) or more")),
    ("DELIVERY_LIMIT", "many", ("DELIVERY_LIMIT", "many")),
    ("DELIVERY_LIMIT", "0", ("DELIVERY_LIMIT", "at least 1")),
    ("SMTP_SECURITY", "bogus", ("SMTP_SECURITY", "bogus", "none, starttls or tls")),
    ("IMAP_SECURITY", "ssl", ("IMAP_SECURITY", "ssl", "none, starttls or tls")),
    ("EMAIL_ADDRESS", "narrator+games@example.org", ("EMAIL_ADDRESS", "narrator+games@example.org", "no +tag")),
    ("EMAIL_ADDRESS", "narrator", ("EMAIL_ADDRESS", "narrator@example.org")),
])
def test_a_bad_setting_is_one_line_naming_it_and_exit_status_2(tmp_path, setting, value, words):
    done = avalon(tmp_path, "run", **{setting: value})
    assert done.returncode == 2
    line = one_error_line(done, *words)
    assert "Value error" not in line and "Input should" not in line, "pydantic's wording stays inside"
    assert done.stderr.strip() == line, "nothing but that line"
    assert not (tmp_path / "avalon.db").exists(), "nothing is started, nor created"


def test_every_bad_setting_of_a_command_is_named_at_once_in_plain_words(tmp_path):
    done = avalon(tmp_path, "email", AMQP_URL=NO_BROKER, LOG_LEVEL="loud", DELIVERY_LIMIT="many",
                  OPS_LISTEN="bogus", DATABASE_URL="garbage", EMAIL_ADDRESS="narrator@example.test",
                  EMAIL_SECRET="short-secret", IMAP_USER="narrator@example.test")
    assert done.returncode == 2, done.stderr
    line = one_error_line(done, "LOG_LEVEL='loud'", "DELIVERY_LIMIT='many': expected a whole number",
                          "OPS_LISTEN='bogus'", "DATABASE_URL='garbage'", "EMAIL_SECRET", "SMTP_HOST is not set",
                          "IMAP_HOST is not set", "IMAP_PASSWORD is not set")
    assert "IMAP_USER" not in line, "a setting that is right is not named"
    assert "short-secret" not in done.stderr, "a secret is never shown"
    assert "Value error" not in line and "Input should" not in line


@pytest.mark.parametrize("command", ["engine", "telegram", "email", "migrate", "export", "demo"])
def test_each_command_says_a_bad_setting_it_reads_and_is_not_stopped_by_one_it_does_not(tmp_path, command):
    done = avalon(tmp_path, command, *(["x"] if command == "export" else []), DATABASE_URL="garbage",
                  AMQP_URL=NO_BROKER, **({"TELEGRAM_BOT_TOKEN": "1:A"} if command == "telegram" else {}),
                  **(EMAIL if command == "email" else {}))
    if command == "demo":  # it reads no setting: nothing in the environment can stop it
        assert done.returncode == 0 and "[group]" in done.stdout, done.stderr
        return
    assert done.returncode == 2, done.stderr
    one_error_line(done, "DATABASE_URL='garbage'")


def test_a_database_that_refuses_the_login_is_one_line_without_the_password(tmp_path):
    done = avalon(tmp_path, "engine", DATABASE_URL="postgresql+asyncpg://nobody:hunter2@127.0.0.1:5432/test")
    assert done.returncode == 1
    line = one_error_line(done, "nobody")
    assert "hunter2" not in done.stderr + done.stdout and "127.0.0.1:5432" in line


def test_avalon_telegram_without_a_token_says_how_to_configure_it(tmp_path):
    done = avalon(tmp_path, "telegram")
    assert done.returncode == 2
    one_error_line(done, "TELEGRAM_BOT_TOKEN", "@BotFather")


async def test_a_token_telegram_refuses_is_one_line_and_exit_1(tmp_path):
    fake = await FakeTelegram().start()
    try:
        done = await asyncio.to_thread(avalon, tmp_path, "run", TELEGRAM_BOT_TOKEN="999:WRONG",
                                       TELEGRAM_API_URL=fake.base_url)
    finally:
        await fake.stop()
    assert done.returncode == 1
    line = one_error_line(done, "refused TELEGRAM_BOT_TOKEN", "401")
    assert "Unclosed" not in done.stderr and " ERROR " not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == line, "the line is the last word"


def test_avalon_run_without_a_channel_says_none_runs_and_how_to_add_one(tmp_path):
    run = Running(tmp_path, "run")
    try:
        run.wait_for("to watch a game narrated")
    finally:
        assert run.stop(signal.SIGTERM) == 0, run.text()
    text = run.text()
    assert "no channel is running" in text and "TELEGRAM_BOT_TOKEN" in text, text
    assert "Traceback" not in text


def test_debug_logging_starts_and_stops_cleanly(tmp_path):
    run = Running(tmp_path, "run", LOG_LEVEL="debug")
    try:
        run.wait_for("engine ready")
    finally:
        assert run.stop(signal.SIGINT) == 130, run.text()[-3000:]  # Ctrl-C: 130 once everything is stopped
    assert "Traceback" not in run.text()
    assert run.text().splitlines()[-1] == "avalon: interrupted", run.text()[-3000:]


def test_the_engine_waits_for_an_absent_broker_and_ctrl_c_during_start_up_ends_in_one_line(tmp_path):
    run = Running(tmp_path, "engine", AMQP_URL="amqp://guest:guest@127.0.0.1:1/")
    try:
        run.wait_for("RabbitMQ at amqp://127.0.0.1:1/ unreachable", count=2)
    finally:
        code = run.stop(signal.SIGINT)
    text = run.text()
    assert code == 130, text
    assert "Traceback" not in text and "interrupted during start-up" in text, text
    assert "guest:guest" not in text, "no password in the log"
    retries = [line for line in text.splitlines() if "unreachable" in line]
    assert all("retrying in" in line for line in retries) and len(text.splitlines()) <= len(retries) + 4, text


def test_ctrl_c_during_simulate_ends_in_one_line(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", "simulate", "--players", "7", "--games",
                             "10000000"], cwd=tmp_path, env=env_for(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip() == "avalon: interrupted", err


async def test_the_telegram_gateway_waits_for_an_absent_bot_api_and_plays_once_it_appears(tmp_path, amqp_url,
                                                                                          rabbit_prefix):
    from tests.integration.conftest import require_rabbitmq

    await require_rabbitmq(amqp_url)
    with socket.socket() as probe:  # a port where nothing listens yet
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    fake = FakeTelegram()
    settings = dict(TELEGRAM_BOT_TOKEN=fake.token, TELEGRAM_API_URL=f"http://127.0.0.1:{port}",
                    AMQP_URL=amqp_url, BUS_PREFIX=rabbit_prefix)
    engine = Running(tmp_path, "engine", AMQP_URL=amqp_url, BUS_PREFIX=rabbit_prefix)
    gateway = Running(tmp_path, "telegram", **settings)
    try:
        await asyncio.to_thread(gateway.wait_for, "unreachable", 60, 3)
        assert gateway.proc.poll() is None, "the gateway stays up while Telegram is away"
        assert "Traceback" not in gateway.text()
        await fake.start(port=port)
        await asyncio.to_thread(gateway.wait_for, "telegram gateway ready", 90)
        await asyncio.to_thread(engine.wait_for, "engine ready", 60)
        ann = fake.user(1, "Ann")
        group = fake.group(-7, "Camelot", members=[ann])
        await ann.start_private()
        await ann.send(group, "/newgame")
        await fake.wait_for_message(group, "A new game", timeout=30)
    finally:
        codes = gateway.stop(), engine.stop()
        await fake.stop()
        bus = RabbitBus(amqp_url, prefix=rabbit_prefix)
        await bus.start()
        await bus.delete_everything("telegram")
        await bus.close()
    assert codes == (0, 0), gateway.text()[-3000:]
    lines = [line for line in gateway.text().splitlines() if "unreachable" in line]
    assert lines and all(line.count("\n") == 0 and "retrying" in line for line in lines)
    assert "Traceback" not in gateway.text()


# -- the email gateway ---------------------------------------------------------------------

EMAIL = dict(EMAIL_ADDRESS="narrator@example.test", EMAIL_SECRET="a-secret-of-thirty-two-characters",
             SMTP_SECURITY="none", IMAP_SECURITY="none", IMAP_USER="narrator@example.test",
             IMAP_PASSWORD="narrator-password", SMTP_HOST="127.0.0.1", IMAP_HOST="127.0.0.1")
NO_BROKER = "amqp://guest:guest@127.0.0.1:1/"  # `avalon email` must not wait for it to say what is wrong


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_avalon_email_without_an_address_says_how_to_configure_it(tmp_path):
    done = avalon(tmp_path, "email", AMQP_URL=NO_BROKER)
    assert done.returncode == 2
    one_error_line(done, "EMAIL_ADDRESS", "EMAIL_SECRET", "SMTP_HOST", "IMAP_HOST", "IMAP_USER", "IMAP_PASSWORD")


@pytest.mark.parametrize("command, changed, words", [
    ("email", {"EMAIL_SECRET": None}, ("EMAIL_SECRET", "16")),
    ("run", {"EMAIL_SECRET": None}, ("EMAIL_SECRET", "16")),
    ("email", {"EMAIL_SECRET": "short-secret"}, ("EMAIL_SECRET", "16")),
    ("email", {"IMAP_USER": None}, ("IMAP_USER",)),
    ("run", {"IMAP_USER": None}, ("IMAP_USER",)),
    ("email", {"SMTP_HOST": ""}, ("SMTP_HOST",)),  # what compose passes when .env does not set it
    ("email", {"SMTP_HOST": None}, ("SMTP_HOST",)),  # no quiet default of 127.0.0.1
    ("run", {"IMAP_HOST": None}, ("IMAP_HOST",)),
], ids=["email no secret", "run no secret", "email short secret", "email no IMAP user", "run no IMAP user",
        "email empty SMTP host", "email no SMTP host", "run no IMAP host"])
def test_an_email_setting_missing_is_one_line_and_exit_2_before_any_server_is_tried(tmp_path, command, changed,
                                                                                   words):
    settings = {k: v for k, v in {**EMAIL, **changed}.items() if v is not None}
    started = time.monotonic()
    done = avalon(tmp_path, command, AMQP_URL=NO_BROKER, **settings)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done, *words)
    assert "short-secret" not in done.stderr + done.stdout, "the secret is not shown"
    assert "RabbitMQ" not in done.stderr and time.monotonic() - started < 30, line


def readyz(port: int) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as answer:
        return answer.code, json.loads(answer.read())


async def test_mail_servers_down_at_start_are_waited_for_and_readyz_names_them_until_they_are_back(
        tmp_path, mail_servers):
    narrator = mail_servers.add_user("narrator", "narrator-password")
    await mail_servers.stop_smtp()
    await mail_servers.stop_imap()
    ops = closed_port()
    run = Running(tmp_path, "run", **{**EMAIL, "OPS_LISTEN": f"127.0.0.1:{ops}", "IMAP_USER": narrator,
                                      "IMAP_HOST": "127.0.0.1", "IMAP_PORT": str(mail_servers.imap_port),
                                      "SMTP_HOST": "127.0.0.1", "SMTP_PORT": str(mail_servers.smtp_port)})
    try:
        await asyncio.to_thread(run.wait_for, "retrying in 1 s", 60, 1)  # the mailbox: a second try
        await asyncio.to_thread(run.wait_for, "retrying in 1.0 s", 60, 1)  # the SMTP server: a second try
        status, body = readyz(ops)
        assert status == 503, body
        email = body["not_ready"]["email"]
        assert "IMAP" in email and str(mail_servers.imap_port) in email, email
        assert f"SMTP 127.0.0.1:{mail_servers.smtp_port}" in email, email
        assert "narrator-password" not in json.dumps(body) + run.text()

        await mail_servers.start_imap()
        await mail_servers.start_smtp()
        deadline = time.monotonic() + 60
        while (answer := readyz(ops))[0] != 200:
            assert run.proc.poll() is None, run.text()
            assert time.monotonic() < deadline, f"not ready once the servers are back: {answer}\n{run.text()}"
            await asyncio.sleep(0.2)
        assert answer[1]["components"]["email"] == "ready"
    finally:
        code = run.stop()
    text = run.text()
    assert code == 0, text
    assert "Traceback" not in text, text


@pytest.mark.parametrize("server", ["IMAP", "SMTP"])
async def test_a_mail_server_that_refuses_the_narrators_login_is_one_line_and_exit_1(tmp_path, mail_servers,
                                                                                        server):
    narrator = mail_servers.add_user("narrator", "narrator-password")
    settings = {**EMAIL, "IMAP_USER": narrator, "IMAP_PASSWORD": "narrator-password", "IMAP_HOST": "127.0.0.1",
                "IMAP_PORT": str(mail_servers.imap_port), "SMTP_HOST": "127.0.0.1",
                "SMTP_PORT": str(mail_servers.smtp_port), "SMTP_USER": narrator, "SMTP_PASSWORD": "narrator-password"}
    settings[f"{server}_PASSWORD"] = "wrong-password"
    done = await asyncio.to_thread(avalon, tmp_path, "run", **settings)
    assert done.returncode == 1, done.stderr
    line = one_error_line(done, server)
    assert "wrong-password" not in done.stderr + done.stdout and "narrator-password" not in line
