"""Hooks for the whole run: the fault suite's table (tests/faults/ledger.py) at the end, added up
across pytest-xdist's workers (they inherit the ledger's path from this process)."""

from __future__ import annotations

import os


def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput"):  # the main process (or a run without workers)
        path = f"/tmp/avalon-fault-ledger-{os.getpid()}.jsonl"
        os.environ["AVALON_FAULT_LEDGER"] = path
        if os.path.exists(path):
            os.unlink(path)


def pytest_terminal_summary(terminalreporter) -> None:
    if hasattr(terminalreporter.config, "workerinput"):
        return  # a worker: the main process prints (and removes) the table once every worker is done
    from tests.faults import ledger

    rows = ledger.totals()
    if not rows:
        return
    terminalreporter.section("fault suite")
    for row in rows:
        terminalreporter.write_line(f"{row.suite}: {row.line()}")
    ledger.LEDGER.unlink(missing_ok=True)
