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


def test_the_readme_test_command_is_the_one_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    test_command = next(b for b in blocks if "pytest" in b)
    assert test_command.strip() in ci


def test_avalon_run_starts_the_embedded_narrator_and_stops_cleanly_on_sigterm(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}", "LOG_LEVEL": "INFO"}
    log = tmp_path / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "services.cli", "run"], cwd=tmp_path, env=env,
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
