"""Rendering events into sentences: one Jinja2 template per event kind, channel and locale.

``locales/<locale>/`` holds, per language:

- ``glossary.toml``: the game's terms in that language's rule text (roles,
  teams, quest, leader, Lady of the Lake...), with plural forms; every
  template takes its terms from here, so a term changes in one place;
- ``reasons.toml``: a sentence per rejection reason of the rules engine;
- ``telegram/<event>.html``: Telegram HTML (``<b>``, ``<i>``, ``<code>``);
- ``email/<event>.html``: the same HTML subset; the email's plain text is
  derived from it and its HTML part is wrapped in a page (``dir="rtl"`` for
  Persian).

Fallback chain: the player's language, then the group's, then English. A
template missing in a locale is an error the completeness test catches, not a
silent English sentence.
"""

from __future__ import annotations

import html
import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel import Locale
from babel.dates import format_datetime, format_timedelta
from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template, TemplateNotFound, pass_context
from markupsafe import Markup, escape

from shared.protocol import EventEnvelope

LOCALES = ("en", "fa", "ru", "vi", "nl", "fr")
CHANNELS = ("telegram", "email")
RTL = frozenset({"fa"})
ROOT = Path(__file__).parent / "locales"
FSI, PDI = "\u2068", "\u2069"  # first-strong isolate: a Latin name stays whole inside Persian text


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


class MissingTranslation(LookupError):
    pass


def pick_locale(languages: tuple[str, ...] | list[str]) -> str:
    for lang in languages:
        if lang in LOCALES:
            return lang
    return "en"


@lru_cache(maxsize=None)
def glossary(locale: str) -> dict[str, Any]:
    return tomllib.loads((ROOT / locale / "glossary.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def reasons(locale: str) -> dict[str, str]:
    return tomllib.loads((ROOT / locale / "reasons.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def ui_words(locale: str) -> dict[str, str]:
    """The Telegram gateway's own words (buttons, notices) in ``locale``."""
    return tomllib.loads((ROOT / locale / "telegram_ui.toml").read_text(encoding="utf-8"))


def ui_text(locale: str, key: str, **params: Any) -> str:
    """One of the gateway's sentences, rendered (names escaped, isolated in RTL)."""
    params.setdefault("names", {})
    return sentence(locale, ui_words(locale)[key]).render(tz=timezone.utc, tz_known=False, **params)


@lru_cache(maxsize=8192)
def sentence(locale: str, source: str) -> Template:
    """A sentence of the word files as a template of ``locale``'s environment, compiled once (compiling
    took more of the Telegram gateway's time under load than rendering)."""
    return environment(locale).from_string(source)


@lru_cache(maxsize=None)
def environment(locale: str) -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(ROOT / locale)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.globals.update(g=glossary(locale), locale=locale, rtl=locale in RTL)
    env.filters.update(
        name=_name, names=_names, role=_term("roles"), team=_term("teams"), phase=_term("phases"),
        cause=_term("causes"), rule=_term("missed_rules"), card=_term("cards"), knowledge=_term("knowledge"),
        plural=_plural, when=_when, left=_left, reason=_reason, cap=_cap, text=_free_text,
    )
    return env


# -- filters -------------------------------------------------------------------

@pass_context
def _name(ctx, player: str | None) -> Markup:
    if player is None:
        return Markup("")
    shown = ctx["names"].get(player) or player.split(":", 1)[-1]
    text = escape(shown)
    if ctx["rtl"]:
        return Markup(f"{FSI}{text}{PDI}")
    return text


@pass_context
def _free_text(ctx, text: str | None) -> Markup:
    """What a player typed: escaped, and isolated inside right-to-left text."""
    if text is None:
        return Markup("")
    escaped = escape(text)
    return Markup(f"{FSI}{escaped}{PDI}") if ctx["rtl"] else escaped


@pass_context
def _names(ctx, players) -> Markup:
    sep = ctx["g"]["list_separator"]
    return Markup(escape(sep).join(_name(ctx, p) for p in players))


def _term(section: str):
    @pass_context
    def lookup(ctx, value) -> str:
        key = getattr(value, "value", value)
        if isinstance(key, bool):
            key = str(key).lower()
        try:
            return ctx["g"][section][key]
        except KeyError as error:
            raise MissingTranslation(f"{ctx['locale']}: glossary [{section}] has no {key!r}") from error
    return lookup


def _cap(text: str) -> str:
    """Upper-case the first letter only (Jinja's ``capitalize`` lowers the rest)."""
    text = str(text)
    return text[:1].upper() + text[1:]


@pass_context
def _plural(ctx, forms: dict[str, str], n: int) -> str:
    """``{{ g.fail_cards|plural(n) }}``: the form of the word for ``n`` by the locale's CLDR rules."""
    form = Locale.parse(ctx["locale"]).plural_form(n)
    return forms.get(form) or forms["other"]


@pass_context
def _when(ctx, moment: datetime | None) -> str:
    if moment is None:
        return ""
    zone = ctx["tz"]
    return format_datetime(moment, "short", tzinfo=zone, locale=ctx["locale"]) + (
        "" if ctx["tz_known"] else " UTC")


@pass_context
def _left(ctx, seconds: int | float | timedelta | None) -> str:
    if seconds is None:
        return ""
    delta = seconds if isinstance(seconds, timedelta) else timedelta(seconds=max(0, int(seconds)))
    return format_timedelta(delta, threshold=1.5, locale=ctx["locale"])


@pass_context
def _reason(ctx, event) -> Markup:
    sentences = reasons(ctx["locale"])
    key = getattr(event.reason, "value", event.reason)
    if key not in sentences:
        raise MissingTranslation(f"{ctx['locale']}: reasons.toml has no {key!r}")
    return Markup(sentence(ctx["locale"], sentences[key]).render(**ctx.get_all(), p=event.params))


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
        if channel not in CHANNELS:
            raise ValueError(f"unknown channel {channel}")
        env = environment(locale)
        kind = envelope.event.type
        try:
            template = env.get_template(f"{channel}/{kind}.html")
        except TemplateNotFound as error:
            raise MissingTranslation(f"{locale}: no {channel} template for {kind}") from error
        zone, known = _zone(recipient.time_zone)
        variables = dict(e=envelope.event, envelope=envelope, me=recipient.player, names=context.names,
                         game=context.game, tz=zone, tz_known=known)
        fragment = template.render(**variables).strip()
        subject = None
        if channel == "email":
            subject = html_to_text(env.get_template("email/_subject.html").render(**variables)).strip()
        rtl = locale in RTL
        page = None
        if channel == "email":
            page = env.get_template("email/_page.html").render(body=Markup(fragment), subject=subject, **variables)
        return Rendered(locale, fragment, html_to_text(fragment), subject, rtl, page)

    def render_template(self, locale: str, name: str, recipient: Recipient | None = None,
                        context: Context | None = None, **variables) -> Rendered:
        """Render a non-event template (``help``, ``rules``, ``board``...)."""
        env = environment(locale)
        context = context or Context()
        zone, known = _zone(recipient.time_zone if recipient else None)
        fragment = env.get_template(name).render(me=recipient.player if recipient else None, names=context.names,
                                                 game=context.game, tz=zone, tz_known=known, **variables).strip()
        return Rendered(locale, fragment, html_to_text(fragment), None, locale in RTL)


def _zone(name: str | None) -> tuple[timezone | ZoneInfo, bool]:
    if name:
        try:
            return ZoneInfo(name), True
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return timezone.utc, False
