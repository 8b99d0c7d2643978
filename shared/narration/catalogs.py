"""The words of each language: one gettext catalog per language, read with Babel at run time.

``locales/<locale>/LC_MESSAGES/messages.po`` holds every sentence the narrator says in that language:
the events (the English text of the templates is the msgid), the rejection reasons and the gateways'
own words (keyed by ``msgctxt``, since code asks for them by name). English is the source language,
so it needs no catalog. A catalog is compiled in memory when a locale is first used; fuzzy and empty
entries are left out, so such a sentence is said in English (the completeness test forbids them).

Placeholders are Python's ``%(name)s``, filled and HTML-escaped by the templates' ``_()``/``pgettext``
(Jinja's newstyle gettext). A translation may write a placeholder with a capital first letter,
``%(Lady)s``, to get the value with a capital first letter (a term at the start of a sentence).
"""

from __future__ import annotations

from functools import lru_cache
from gettext import GNUTranslations, NullTranslations
from io import BytesIO
from pathlib import Path
from typing import Any

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from jinja2 import pass_eval_context
from markupsafe import Markup, escape

from avalon.shared.languages import SOURCE

LOCALES_DIR = Path(__file__).parent / "locales"
DOMAIN = "messages"


def catalog_path(locale: str) -> Path:
    return LOCALES_DIR / locale / "LC_MESSAGES" / f"{DOMAIN}.po"


@lru_cache(maxsize=None)
def translations(locale: str) -> NullTranslations:
    """The locale's catalog as a gettext translations object, compiled in memory from its ``.po`` (Babel
    reads and compiles; the standard library's lookups are the fast ones)."""
    path = catalog_path(locale)
    if locale == SOURCE or not path.exists():
        return NullTranslations()
    with path.open("rb") as handle:
        catalog = read_po(handle, locale=locale, domain=DOMAIN)
    compiled = BytesIO()
    write_mo(compiled, catalog)  # fuzzy entries are left out
    compiled.seek(0)
    return GNUTranslations(compiled)


def capitalized(value: Any) -> Any:
    """Upper-case the first letter only (Jinja's ``capitalize`` lowers the rest); Markup stays Markup."""
    text = str(value)
    first = text[:1].upper() + text[1:]
    return Markup(first) if isinstance(value, Markup) else first


class Placeholders(dict):
    """A sentence's values; ``%(Name)s`` gives the value of ``name`` with a capital first letter."""

    def __missing__(self, key: str) -> Any:
        lower = key[:1].lower() + key[1:]
        if key[:1].isupper() and lower in self:
            return capitalized(self[lower])
        raise KeyError(key)


def _fill(autoescape: bool, translated: str, variables: dict[str, Any]) -> str:
    """The translated sentence with its values in; in HTML every value that is not Markup is escaped
    (what ``Markup(translated) % variables`` does, without a wrapper object per value)."""
    if not autoescape:
        return translated % Placeholders(variables)
    return Markup(translated % Placeholders({key: escape(value) for key, value in variables.items()}))


def gettext_functions(locale: str) -> dict[str, Any]:
    """``gettext``, ``ngettext``, ``pgettext`` and ``npgettext`` for a template environment of ``locale``
    (Jinja's newstyle calling convention: the values come as keyword arguments)."""
    books = translations(locale)
    # The evaluation context, not the template context: Jinja derives a new template context for every
    # call that takes one inside a loop, which cost more than the sentence itself.

    @pass_eval_context
    def gettext(eval_ctx, message: str, **variables: Any) -> str:
        return _fill(eval_ctx.autoescape, books.gettext(message), variables)

    @pass_eval_context
    def pgettext(eval_ctx, context: str, message: str, **variables: Any) -> str:
        return _fill(eval_ctx.autoescape, books.pgettext(context, message), variables)

    @pass_eval_context
    def ngettext(eval_ctx, singular: str, plural: str, n: int, **variables: Any) -> str:
        variables.setdefault("num", n)
        return _fill(eval_ctx.autoescape, books.ngettext(singular, plural, n), variables)

    @pass_eval_context
    def npgettext(eval_ctx, context: str, singular: str, plural: str, n: int, **variables: Any) -> str:
        variables.setdefault("num", n)
        return _fill(eval_ctx.autoescape, books.npgettext(context, singular, plural, n), variables)

    # "_" is gettext itself, not Jinja's alias that looks gettext up on every call
    return dict(gettext=gettext, _=gettext, pgettext=pgettext, ngettext=ngettext, npgettext=npgettext)
