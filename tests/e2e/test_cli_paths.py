"""The avalon command's paths a newcomer or a host walks first: Ctrl-C at any moment, a database of
another version, `broker-users --print`, `export` where there is no database or no server, a terminal
that cannot show Persian. Each ends in its exit status and at most one line, and leaves nothing behind."""

from __future__ import annotations

import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_cli_errors import avalon, env_for, one_error_line

ROOT = Path(__file__).resolve().parents[2]
TRIES = 8


def interpreter_start_up() -> float:
    """How long Python itself takes to start here (site and its .pth files, before any of avalon's code
    runs): a Ctrl-C then is the interpreter's to handle (it may say "Fatal Python error"), not avalon's."""
    took = []
    for _ in range(3):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        took.append(time.monotonic() - started)
    return statistics.median(took) * 1.5


def interrupted_at_random_moments(tmp_path: Path, *args: str, seed: int, until: float, **settings: str):
    """Runs the command TRIES times, each sent one SIGINT at a random moment of its life; yields what it
    left: (delay, exit status, stdout, stderr, its folder, what is in its temporary directory)."""
    rng = random.Random(seed)
    floor = interpreter_start_up()
    for attempt in range(TRIES):
        work, scratch = tmp_path / f"work{attempt}", tmp_path / f"tmp{attempt}"
        work.mkdir()
        scratch.mkdir()
        env = {**env_for(work, **settings), "TMPDIR": str(scratch)}
        proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", *args], cwd=work, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        delay = rng.uniform(floor, until)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        yield delay, proc.returncode, out, err, work, list(scratch.iterdir())


def lifetime(tmp_path: Path, *args: str) -> float:
    """How long the command takes here when nobody interrupts it (the moments are drawn within it)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "avalon.services.cli", *args], cwd=tmp_path, env=env_for(tmp_path),
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return time.monotonic() - started


def test_ctrl_c_at_any_moment_of_avalon_demo_is_status_130_one_line_and_leaves_nothing(tmp_path):
    whole = lifetime(tmp_path, "demo", "--seed", "3")
    for delay, code, out, err, work, temporary in interrupted_at_random_moments(
            tmp_path, "demo", "--seed", "3", seed=20, until=whole):
        files = list(work.iterdir())
        said = f"SIGINT after {delay:.2f} s: exit {code}\n{err[-3000:]}"
        assert "Traceback" not in err and "Fatal Python error" not in err, said
        assert temporary == [] and files == [], f"left behind: {temporary} {files}; {said}"
        if code == 0:  # the game was over and printed before the Ctrl-C came
            assert "🏁" in out and err == "", said
            continue
        assert code == 130, said
        assert err.splitlines() == ["avalon: interrupted"], said


def test_ctrl_c_at_any_moment_of_avalon_run_is_status_130_one_line_and_leaves_only_its_database(tmp_path):
    # LOG_LEVEL=ERROR: start-up says nothing, so every line is one a Ctrl-C caused
    for delay, code, out, err, work, temporary in interrupted_at_random_moments(
            tmp_path, "run", seed=21, until=5.0, LOG_LEVEL="ERROR"):
        files = {p.name for p in work.iterdir()}
        said = f"SIGINT after {delay:.2f} s: exit {code}\n{err[-3000:]}"
        assert code == 130, said
        assert len(err.splitlines()) == 1 and err.startswith("avalon: interrupted"), said
        assert temporary == [], said
        assert files <= {"avalon.db", "avalon.db-wal", "avalon.db-shm"}, said
        if "avalon.db" in files:  # whatever moment it was stopped at, the database opens and is whole
            with sqlite3.connect(work / "avalon.db") as db:
                assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",), said


def test_a_database_migrated_by_a_newer_version_is_one_line_for_migrate_run_and_export(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    assert avalon(tmp_path, "migrate", DATABASE_URL=url).returncode == 0
    with sqlite3.connect(tmp_path / "a.db") as db:
        db.execute("UPDATE alembic_version SET version_num = '0099'")
    for args in (["migrate"], ["run"], ["export", "g"]):
        done = avalon(tmp_path, *args, DATABASE_URL=url)
        assert done.returncode == 1, (args, done.stderr)
        line = one_error_line(done, "'0099'", "newer version")
        assert done.stderr.splitlines() == [line], (args, done.stderr)
        assert "Can't locate" not in line


def test_broker_users_print_writes_only_the_commands(tmp_path):
    done = avalon(tmp_path, "broker-users", "--print", LOG_LEVEL="INFO")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("# ") and all(line.startswith("rabbitmqctl ") for line in lines[1:]), done.stdout


def test_export_creates_no_database_where_there_is_none(tmp_path):
    done = avalon(tmp_path, "export", "abc", DATABASE_URL="sqlite+aiosqlite:///./avalon.db")
    assert done.returncode == 1, done.stderr
    one_error_line(done, "no database", "avalon.db")
    assert done.stderr.count("\n") == 1 and done.stdout == ""
    assert list(tmp_path.iterdir()) == [], "nothing created"


def test_export_gives_up_on_a_database_server_it_cannot_reach_in_one_line(tmp_path):
    with __import__("socket").socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = avalon(tmp_path, "export", "abc",
                  DATABASE_URL=f"postgresql+asyncpg://avalon:hunter2@127.0.0.1:{port}/avalon")
    assert done.returncode == 1, done.stderr
    line = one_error_line(done, "unreachable", f"127.0.0.1:{port}")
    assert done.stderr.splitlines() == [line] and "hunter2" not in line


def test_export_of_a_game_that_is_not_there_is_status_2_and_leaves_the_database_as_it_was(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    assert avalon(tmp_path, "migrate", DATABASE_URL=url).returncode == 0
    before = (tmp_path / "a.db").stat().st_mtime_ns
    done = avalon(tmp_path, "export", "nope", DATABASE_URL=url)
    assert done.returncode == 2 and "no game 'nope'" in done.stderr, done.stderr
    assert (tmp_path / "a.db").stat().st_mtime_ns == before


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_the_demo_in_persian_prints_on_a_terminal_that_cannot_show_it(tmp_path, encoding):
    done = subprocess.run([sys.executable, "-m", "avalon.services.cli", "demo", "--lang", "fa", "--seed", "3"],
                          cwd=tmp_path, capture_output=True, timeout=300,
                          env={**env_for(tmp_path), "PYTHONIOENCODING": encoding})
    err = done.stderr.decode(encoding)
    assert done.returncode == 0, err[-3000:]
    out = done.stdout.decode(encoding)
    assert "[group]" in out and "\\u0645\\u0631\\u0644\\u06cc\\u0646" in out, out[-500:]  # مرلین, escaped
    assert err == ""


def test_every_command_says_in_its_help_what_it_reads_from_the_environment(tmp_path):
    from avalon.services.settings_check import reads

    for command in ("run", "engine", "telegram", "email", "migrate", "export", "broker-users"):
        done = avalon(tmp_path, command, "--help")
        assert done.returncode == 0, done.stderr
        for name in reads(command):
            assert f"  {name.upper()} " in done.stdout, f"avalon {command} --help does not say {name.upper()}"
    assert "GAME        the game's code as its end and the history show it" in avalon(tmp_path, "export", "--help").stdout
    assert "EMAIL_AMQP_PASSWORD" in avalon(tmp_path, "broker-users", "--help").stdout
    assert "reads no setting" in avalon(tmp_path, "demo", "--help").stdout
