"""What the narrator says by mail in its own words (the ``email_ui`` sentences of each language's catalog)."""

from __future__ import annotations

from typing import Any

from shared.narration.render import html_to_text, keyed_text, pick_locale


def email_words(locale: str, key: str, **params: Any) -> str:
    """One of the email gateway's sentences in ``locale`` (plain text); ``_text`` is ``params['text']``."""
    if key == "_text":
        return str(params.get("text", ""))
    params.setdefault("names", "")
    rendered = keyed_text(pick_locale((locale,)), "email_ui", key, tz=None, tz_known=False, **params)
    return html_to_text(rendered)  # autoescaped: back to plain text (a name with < or & stays whole)


def problem_text(roster, locale: str, problem) -> str:
    """Why a mail could not be read as a command, in the reader's language."""
    display = roster.names()
    candidates = ", ".join(display.get(p, p.split(":", 1)[-1]) for p in problem.candidates)
    return email_words(locale, problem.reason, word=problem.word, names=candidates)
