"""What the narrator says by mail in its own words (the ``email_ui`` sentences of each language's catalog)."""

from __future__ import annotations

from typing import Any

from avalon.shared.narration.render import html_to_text, keyed_text, pick_locale


#: the gateway's own refusals: nothing was done. They read as the engine's do by mail (its
#: ``command_rejected``): the warning sign, the reason, then what the reader can still do.
REFUSALS = frozenset({"unknown_command", "ambiguous_name", "unknown_name", "missing_name", "unknown_language",
                      "unknown_timezone", "no_address", "not_your_token", "not_verified", "no_game",
                      "too_many_mails"})
WARNING = "⚠️ "


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
    return WARNING + email_words(locale, problem.reason, word=problem.word, names=candidates)
