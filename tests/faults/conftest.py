"""The fault suite's end-of-run table (see ledger.py)."""

from __future__ import annotations

import os

from tests.faults import ledger

ledger.LEDGER.unlink(missing_ok=True)  # a fresh table for this run (the path is per process)


def pytest_terminal_summary(terminalreporter) -> None:
    rows = ledger.totals()
    if not rows:
        return
    terminalreporter.section("fault suite")
    for row in rows:
        terminalreporter.write_line(f"{row.suite}: {row.line()}")
    ledger.LEDGER.unlink(missing_ok=True)
