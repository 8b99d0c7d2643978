"""The five rule texts beside the repository (../shared/seeds), for the glossary tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


def repo_root() -> Path:
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").exists():
            return folder
    raise AssertionError("no pyproject.toml above the tests: cannot find the repository root")


def seed_path(name: str) -> Path:
    return repo_root().parent / "shared" / "seeds" / name


def read_seed(name: str, language: str) -> str:
    """The rule text, or a test failure saying where it was expected (never a skip)."""
    path = seed_path(name)
    if not path.exists():
        pytest.fail(f"the {language} rule text is missing: expected it at {path} "
                    "(the shared folder sits beside the repository clone)")
    return path.read_text(encoding="utf-8")


def occurs(stems: str, text: str) -> bool:
    """Whether these words follow one another in the text; ``stem*`` stands for any word beginning with stem."""
    parts = [re.escape(w[:-1]) + r"\w*" if w.endswith("*") else re.escape(w) + r"\b" for w in stems.split()]
    return re.search(r"\b" + r"\s+".join(parts), text, re.IGNORECASE) is not None


def assert_term(actual: str, expected: str, stems: str, text: str, seed: str) -> None:
    """The glossary says ``expected``, spelled by ``stems``, which occur in the rule text."""
    assert actual == expected
    words, parts = expected.split(), stems.split()
    assert len(words) == len(parts) and all(
        w.lower().startswith(p[:-1].lower()) if p.endswith("*") else w.lower() == p.lower()
        for w, p in zip(words, parts)), f"{stems!r} does not spell {expected!r}"
    assert occurs(stems, text), f"{expected!r} (as {stems!r}) does not occur in the rule text {seed}"
