"""The templates' filters: names, terms of the glossary, plurals, times and durations, reasons."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import reduce

from babel import Locale
from babel.dates import format_date, format_time, format_timedelta
from jinja2 import pass_context
from markupsafe import Markup, escape

from avalon.shared.game.codes import game_code

from .books import MissingTranslation, say
from .catalogs import capitalized

FSI, PDI = "\u2068", "\u2069"  # first-strong isolate: a Latin name stays whole inside Persian text


@pass_context
def name(ctx, player: str | None) -> Markup:
    if player is None:
        return Markup("")
    shown = ctx["names"].get(player) or player.split(":", 1)[-1]
    text = escape(shown)
    if ctx["rtl"]:
        return Markup(f"{FSI}{text}{PDI}")
    return text


@pass_context
def free_text(ctx, text: str | None) -> Markup:
    """What a player typed: escaped, and isolated inside right-to-left text."""
    if text is None:
        return Markup("")
    escaped = escape(text)
    return Markup(f"{FSI}{escaped}{PDI}") if ctx["rtl"] else escaped


@pass_context
def names(ctx, players) -> Markup:
    sep = ctx["g"]["list_separator"]
    return Markup(escape(sep).join(name(ctx, p) for p in players))


def term(section: str):
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


def cap(text: str) -> str:
    """Upper-case the first letter only (Jinja's ``capitalize`` lowers the rest)."""
    return capitalized(str(text))


@pass_context
def plural(ctx, forms: dict[str, str], n: int) -> str:
    """``{{ g.fail_cards|plural(n) }}``: the form of the word for ``n`` by the locale's CLDR rules."""
    form = Locale.parse(ctx["locale"]).plural_form(n)
    return forms.get(form) or forms["other"]


@pass_context
def when(ctx, moment: datetime | None) -> str:
    if moment is None:
        return ""
    zone, locale = ctx["tz"], ctx["locale"]
    return _date_and_time(moment, zone, locale) + ("" if ctx["tz_known"] else " UTC")


def _date_and_time(moment: datetime, zone, locale: str) -> str:
    """The day with its month's name and the time of day, in the locale's order ("Dec 3, 2026, 2:34 PM",
    "3 déc. 2026, 14:34"): a short numeric date reads differently in each country (12/3 or 3/12)."""
    local = moment.astimezone(zone) if zone is not None else moment
    pattern = Locale.parse(locale).datetime_formats["medium"]
    return str(pattern).replace("{1}", format_date(local, "medium", locale=locale)).replace(
        "{0}", format_time(local, "short", tzinfo=zone, locale=locale))


@pass_context
def left(ctx, seconds: int | float | timedelta | None) -> str:
    if seconds is None:
        return ""
    delta = seconds if isinstance(seconds, timedelta) else timedelta(seconds=max(0, int(seconds)))
    return format_timedelta(delta, threshold=1.5, locale=ctx["locale"])


@pass_context
def reason(ctx, event) -> Markup:
    """A rejection's sentence, from the reasons book of the catalog."""
    key = getattr(event.reason, "value", event.reason)
    return say(ctx, "reasons", key, p=event.params)


@pass_context
def either(ctx, choices) -> Markup:
    """``A or B or C``: the choices joined by the catalog's "or"."""
    def pgettext(context: str, message: str, **values) -> Markup:
        return ctx.resolve("pgettext")(ctx.eval_ctx, context, message, **values)
    return reduce(lambda one, other: pgettext("choices", "%(one)s or %(other)s", one=one, other=other),
                  list(choices))


@pass_context
def code(ctx, game_id: str) -> str:
    """A game's code (``shared/game/codes.py``), as the history shows it and ``avalon export`` takes it;
    isolated inside right-to-left text (its dash and digits stay in their order)."""
    shown = game_code(game_id)
    return f"{FSI}{shown}{PDI}" if ctx["rtl"] else shown


FILTERS = dict(
    name=name, names=names, role=term("roles"), team=term("teams"), phase=term("phases"), cause=term("causes"),
    rule=term("missed_rules"), card=term("cards"), knowledge=term("knowledge"), plural=plural, when=when,
    left=left, reason=reason, cap=cap, text=free_text, either=either, code=code,
)
