"""Keyed sentences: the rejection reasons and each gateway's own words, asked for by name in code.

Each book is a template of ``templates/`` with one ``{% block <key> %}`` per sentence; the block
holds the sentence as a ``pgettext("<book>:<key>", ...)`` call (and any choice between sentences,
such as a reason said with or without a player's name), so its words are in the catalogs like every
other sentence and its key is the ``msgctxt`` a translator sees.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, pass_context
from jinja2.utils import concat
from markupsafe import Markup

BOOKS = {"reasons": "reasons.html", "telegram_ui": "telegram_ui.html", "email_ui": "email_ui.html",
         "pictures": "pictures.html"}


class MissingTranslation(LookupError):
    pass


def keys(env: Environment, book: str) -> list[str]:
    """The keys of a book, in the order the book lists them."""
    return list(env.get_template(BOOKS[book]).blocks)


def render_key(env: Environment, book: str, key: str, variables: dict[str, Any]) -> Markup:
    """One sentence of a book, rendered with ``variables`` (escaped HTML, as every template's output)."""
    template = env.get_template(BOOKS[book])
    block = template.blocks.get(key)
    if block is None:
        raise MissingTranslation(f"{book} has no sentence {key!r}")
    return Markup(concat(block(template.new_context(variables))))


@pass_context
def say(ctx, book: str, key: str, **extra: Any) -> Markup:
    """``{{ say("reasons", "wrong_phase") }}``: a keyed sentence, with the calling template's variables."""
    return render_key(ctx.environment, book, key, ctx.get_all() | extra)
