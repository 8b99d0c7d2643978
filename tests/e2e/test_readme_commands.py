"""The README's promises: its commands work as written."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def readme_test_commands(readme: str = README) -> dict[str, str]:
    """The README's test commands: the quick one (a folder of tests) and the full one (everything)."""
    blocks = [b.strip() for b in re.findall(r"```sh\n(.*?)\n```", readme, re.S) if "pytest" in b]
    return {"quick": next(b for b in blocks if b.endswith("-m pytest tests/unit")),
            "full": next(b for b in blocks if b.endswith("-m pytest"))}


def test_the_readmes_full_test_command_is_the_one_ci_runs_word_for_word():
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme_test_commands()["full"] in ci.splitlines()


def test_the_readmes_quick_test_command_runs_only_tests_that_need_no_server():
    # the quick command runs tests/unit: none of its tests may reach for the servers the full run has
    assert readme_test_commands()["quick"].split("&&")[0] == readme_test_commands()["full"].split("&&")[0]
    servers = ("tests.integration", "tests.mailservers", "tests.e2e", "tests.faults", "RabbitBus(", "asyncpg.connect",
               "postgresql+asyncpg://postgres", "require_rabbitmq", "docker")
    for path in sorted((ROOT / "tests" / "unit").glob("*.py")):
        text = path.read_text()
        found = [s for s in servers if s in text and not (s == "docker" and path.name == "test_compose.py")]
        assert not found, f"{path.name} needs a server ({found}): it belongs under tests/integration or tests/e2e"


def test_the_readme_is_for_the_people_who_use_the_narrator():
    # try it with nothing set up first; what developers and operators read is in docs/, linked
    assert README.index("avalon demo") < README.index("avalon run") < README.index("docker compose up")
    for doc in ("docs/operations.md", "docs/development.md", "docs/architecture.md", "docs/rules.md"):
        assert f"({doc}" in README and (ROOT / doc).exists(), doc
    for words in ("2-core", "this development machine", "bench/", "Peak RSS", "rabbitmqctl set_permissions"):
        assert words not in README, f"{words!r}: for docs/development.md or docs/operations.md"


def test_avalon_run_starts_the_embedded_narrator_and_stops_cleanly_on_sigterm(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}", "LOG_LEVEL": "INFO"}
    log = tmp_path / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", "run"], cwd=tmp_path, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while "engine ready" not in log.read_text():
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "avalon run did not become ready:\n" + log.read_text()
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
    assert (tmp_path / "avalon.db").exists(), "the embedded default keeps its games in SQLite"
