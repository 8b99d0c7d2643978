"""The five rule texts beside the repository (../shared/seeds), for the glossary tests.

The texts are not part of the repository (docs/rules.md is the project's own
account of them). When the folder is not beside the clone, every test that
reads a text is skipped, with ``NO_SEEDS`` as the reason; the glossary tests
that do not need a text still run. When the folder is there, a missing text is
a failure.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest


def repo_root() -> Path:
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").exists():
            return folder
    raise AssertionError("no pyproject.toml above the tests: cannot find the repository root")


def seeds_dir() -> Path:
    return repo_root().parent / "shared" / "seeds"


def seed_path(name: str) -> Path:
    return seeds_dir() / name


NO_SEEDS = ("the five rule texts are not beside the repository (expected ../shared/seeds): "
            "the glossary's terms are not checked against them")


def read_seed(name: str, language: str) -> str:
    """The rule text; a skip (``NO_SEEDS``) when the seeds folder is not beside the
    repository, a test failure saying where it was expected when the folder is there
    but this text is not."""
    if not seeds_dir().is_dir():
        pytest.skip(f"{NO_SEEDS} ({language} glossary)")
    path = seed_path(name)
    if not path.is_file():
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
