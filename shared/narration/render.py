"""Rendering events into sentences: one Jinja2 template per event, the words from each language's catalog.

- ``templates/events/<event>.html``: the event's narration, written once for every language; its
  sentences are ``_("...")`` calls whose English text is the msgid of the catalogs;
- ``templates/<channel>/``: a channel's own files, only where it really differs (email: the page
  around a message, its subject, and the invitation as the invited person reads it); a channel
  without its own file for an event (Telegram, or a new one) renders the shared template;
- ``templates/board.html``, ``help.html``, ``rules.html``, ``_options.html``: the other texts;
- ``templates/reasons.html``, ``telegram_ui.html``, ``email_ui.html``, ``pictures.html``: keyed sentences
  (books.py);
- ``locales/<locale>/LC_MESSAGES/messages.po``: the language's words (catalogs.py);
- ``locales/<locale>/glossary.toml``: the game's terms in that language's rule text (roles, teams,
  quest, leader, Lady of the Lake...), with plural forms; the templates take their terms from here.

Fallback chain: the player's language, then the group's, then English. How translators work and how
a language is added: README.md beside this file.
"""

from __future__ import annotations

import html
import re
import tomllib
from dataclasses import dataclass, field
from datetime import timezone
from functools import lru_cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel import Locale
from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template, TemplateNotFound
from markupsafe import Markup

from avalon.shared.languages import LOCALES
from avalon.shared.protocol import EventEnvelope

from .books import MissingTranslation, keys, render_key, say
from .catalogs import LOCALES_DIR, gettext_functions
from .filters import FILTERS, FSI, PDI

__all__ = [
    "CHANNELS", "FSI", "LOCALES", "PDI", "ROOT", "RTL", "TEMPLATES", "Context", "Markup", "MissingTranslation",
    "Narrator", "Recipient", "Rendered", "book_sources", "environment", "glossary", "html_to_text", "keyed_text",
    "pick_locale", "reasons", "sentence", "ui_text", "ui_words",
]

CHANNELS = ("telegram", "email")  # the channels of today; any other renders from the shared templates
RTL = frozenset(loc for loc in LOCALES if Locale.parse(loc).character_order == "right-to-left")
ROOT = LOCALES_DIR  # each language's catalog and glossary
TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class Recipient:
    """Who reads the message: a player (``player`` set) or a group (``player`` None)."""

    player: str | None = None
    languages: tuple[str, ...] = ("en",)  # preference order: the player's, then the group's
    time_zone: str | None = None


@dataclass(frozen=True)
class Rendered:
    locale: str
    html: str  # Telegram HTML, or the email's HTML fragment
    text: str  # plain text
    subject: str | None = None
    rtl: bool = False
    email_html: str | None = None  # the whole email page


@dataclass
class Context:
    """What a template may use besides the event: names, the recipient, the game's numbers."""

    names: dict[str, str] = field(default_factory=dict)
    game: dict[str, Any] = field(default_factory=dict)


def pick_locale(languages: tuple[str, ...] | list[str]) -> str:
    for lang in languages:
        if lang in LOCALES:
            return lang
    return "en"


@lru_cache(maxsize=None)
def glossary(locale: str) -> dict[str, Any]:
    return tomllib.loads((ROOT / locale / "glossary.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def environment(locale: str) -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        extensions=["jinja2.ext.i18n"],
        auto_reload=False,  # the templates do not change while the program runs: no stat per render
    )
    env.newstyle_gettext = True  # type: ignore[attr-defined]  # values are escaped, as everywhere else
    env.globals.update(gettext_functions(locale))
    env.globals.update(g=glossary(locale), locale=locale, rtl=locale in RTL, say=say)
    env.filters.update(FILTERS)
    return env


@lru_cache(maxsize=8192)
def sentence(locale: str, source: str) -> Template:
    """A template source compiled once in ``locale``'s environment (compiling took more of the Telegram
    gateway's time under load than rendering)."""
    return environment(locale).from_string(source)


def keyed_text(locale: str, book: str, key: str, **params: Any) -> Markup:
    """One keyed sentence (``book``: ``reasons``, ``telegram_ui``, ``email_ui`` or ``pictures``) in ``locale``,
    rendered with ``params`` (escaped HTML)."""
    return render_key(environment(locale), book, key, params)


@lru_cache(maxsize=None)
def book_sources(locale: str, book: str) -> dict[str, str]:
    """Every sentence of a book as a template source for ``sentence()``, by key (what the word files
    held before the catalogs: callers that compile a sentence themselves keep working)."""
    return {key: f'{{{{ say("{book}", "{key}") }}}}' for key in keys(environment(locale), book)}


def reasons(locale: str) -> dict[str, str]:
    """A sentence per rejection reason, as a template source for ``sentence()`` (rendered with ``p``,
    the reason's parameters)."""
    return book_sources(locale, "reasons")


def ui_words(locale: str) -> dict[str, str]:
    """The Telegram gateway's own words (buttons, notices) in ``locale``, as template sources."""
    return book_sources(locale, "telegram_ui")


def ui_text(locale: str, key: str, **params: Any) -> str:
    """One of the Telegram gateway's sentences, rendered (names escaped, isolated in RTL)."""
    params.setdefault("names", {})
    return str(keyed_text(locale, "telegram_ui", key, tz=timezone.utc, tz_known=False, **params))


# -- rendering -------------------------------------------------------------------

_TAGS = re.compile(r"<[^>]+>")


def html_to_text(fragment: str) -> str:
    text = re.sub(r"<br\s*/?>", "\n", fragment)
    text = re.sub(r'<a href="([^"]+)">([^<]*)</a>', r"\2 (\1)", text)
    return html.unescape(_TAGS.sub("", text)).strip()


class Narrator:
    def render(self, envelope: EventEnvelope, recipient: Recipient, channel: str,
               context: Context | None = None) -> Rendered:
        locale = pick_locale(recipient.languages)
        return self.render_in(locale, envelope, recipient, channel, context or Context())

    def render_in(self, locale: str, envelope: EventEnvelope, recipient: Recipient, channel: str,
                  context: Context) -> Rendered:
        """The event for one reader: the channel's own template for it if there is one, else the shared
        one; a channel with a page and subject of its own (email) gets them too."""
        if not channel.isidentifier():
            raise ValueError(f"unknown channel {channel}")
        env = environment(locale)
        kind = envelope.event.type
        try:
            template = env.get_template(_event_template(channel, kind))
        except TemplateNotFound as error:
            raise MissingTranslation(f"{locale}: no template for {kind}") from error
        zone, known = _zone(recipient.time_zone)
        variables = dict(e=envelope.event, envelope=envelope, me=recipient.player, names=context.names,
                         game=context.game, tz=zone, tz_known=known)
        fragment = template.render(**variables).strip()
        subject = page = None
        if _own(channel, "_subject.html"):
            subject = html_to_text(env.get_template(f"{channel}/_subject.html").render(**variables)).strip()
        if _own(channel, "_page.html"):
            page = env.get_template(f"{channel}/_page.html").render(body=Markup(fragment), subject=subject,
                                                                    **variables)
        return Rendered(locale, fragment, html_to_text(fragment), subject, locale in RTL, page)

    def render_template(self, locale: str, name: str, recipient: Recipient | None = None,
                        context: Context | None = None, **variables) -> Rendered:
        """Render a non-event template (``help``, ``rules``, ``board``...)."""
        env = environment(locale)
        context = context or Context()
        zone, known = _zone(recipient.time_zone if recipient else None)
        fragment = env.get_template(name).render(me=recipient.player if recipient else None, names=context.names,
                                                 game=context.game, tz=zone, tz_known=known, **variables).strip()
        return Rendered(locale, fragment, html_to_text(fragment), None, locale in RTL)


@lru_cache(maxsize=None)
def _own(channel: str, name: str) -> bool:
    return (TEMPLATES / channel / name).is_file()


@lru_cache(maxsize=None)
def _event_template(channel: str, kind: str) -> str:
    """The channel's own template for an event if it has one, else the shared one."""
    return f"{channel}/{kind}.html" if _own(channel, f"{kind}.html") else f"events/{kind}.html"


def _zone(name: str | None) -> tuple[timezone | ZoneInfo, bool]:
    if name:
        try:
            return ZoneInfo(name), True
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return timezone.utc, False

