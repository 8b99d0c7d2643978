"""What the narrator says by mail in its own words (``locales/<locale>/email_ui.toml``)."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from typing import Any

from shared.narration.render import ROOT, html_to_text, pick_locale, sentence


@lru_cache(maxsize=None)
def _words(locale: str) -> dict[str, str]:
    return tomllib.loads((ROOT / locale / "email_ui.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _template(locale: str, key: str):
    return sentence(locale, _words(locale)[key])


def email_words(locale: str, key: str, **params: Any) -> str:
    """One of the email gateway's sentences in ``locale`` (plain text); ``_text`` is ``params['text']``."""
    if key == "_text":
        return str(params.get("text", ""))
    template = _template(pick_locale((locale,)), key)
    params.setdefault("names", "")
    rendered = template.render(tz=None, tz_known=False, **params)
    return html_to_text(rendered)  # autoescaped: back to plain text (a name with < or & stays whole)


def problem_text(roster, locale: str, problem) -> str:
    """Why a mail could not be read as a command, in the reader's language."""
    display = roster.names()
    candidates = ", ".join(display.get(p, p.split(":", 1)[-1]) for p in problem.candidates)
    return email_words(locale, problem.reason, word=problem.word, names=candidates)
