"""The catalogs: every sentence of the templates and of the narration's code is in every language's
catalog, translated, with its placeholders; the keyed sentences are all there; the list of languages
agrees with the catalogs and glossaries present."""

from __future__ import annotations

import re
from functools import lru_cache

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from avalon.shared.game.errors import Reason
from avalon.shared.languages import LOCALES, SOURCE
from avalon.shared.protocol_records import RECORD_REASONS
from avalon.shared.narration.books import BOOKS, keys
from avalon.shared.narration.catalogs import LOCALES_DIR, catalog_path
from avalon.shared.narration.render import RTL, TEMPLATES, environment, glossary

NARRATION = TEMPLATES.parent
TRANSLATED = [loc for loc in LOCALES if loc != SOURCE]
PLACEHOLDER = re.compile(r"%\((\w+)\)s")
#: Placeholders that stand for a word of the glossary: a translation may write the word itself instead
#: (in the form its grammar needs: Russian "проголосуйте за команду", not the glossary's "команда").
TERMS = {"team", "excalibur", "approve", "reject", "conference", "leader", "host", "lady", "quest", "vote_track",
         "game", "players", "fail_cards", "success_cards", "language"}
#: Sentences a language may leave as in English: names of the game, and words it borrows.
SAME_AS_ENGLISH = {"fa": set(), "ru": set(), "fr": set(), "nl": {"Excalibur: %(name)s"}, "vi": {"Excalibur: %(name)s"}}


def source_messages() -> set[tuple[str | None, str]]:
    """Every (msgctxt, msgid) of the templates and code, extracted as ``pybabel extract`` does."""
    with (NARRATION / "babel.cfg").open() as handle:
        method_map, options_map = parse_mapping_cfg(handle)
    return {(context, message) for _, _, message, _, context in
            extract_from_dir(str(NARRATION), method_map=method_map, options_map=options_map)}


@lru_cache(maxsize=None)
def catalog(locale: str):
    with catalog_path(locale).open("rb") as handle:
        return read_po(handle, locale=locale)


def entries(locale: str):
    return [m for m in catalog(locale) if m.id]


def test_the_template_catalog_holds_exactly_the_sentences_of_the_templates_and_code():
    with (NARRATION / "messages.pot").open("rb") as handle:
        pot = {(m.context, m.id) for m in read_po(handle) if m.id}
    assert pot == source_messages(), "run pybabel extract (shared/narration/README.md)"


def test_the_languages_are_those_with_a_catalog_and_a_glossary():
    with_catalog = {p.parents[1].name for p in LOCALES_DIR.glob("*/LC_MESSAGES/messages.po")}
    with_glossary = {p.parent.name for p in LOCALES_DIR.glob("*/glossary.toml")}
    assert with_catalog == set(TRANSLATED)
    assert with_glossary == set(LOCALES)
    assert RTL == {"fa"}


@pytest.mark.parametrize("locale", TRANSLATED)
def test_every_sentence_is_translated_in_every_catalog(locale):
    found = {(m.context, m.id) for m in entries(locale)}
    assert found == source_messages(), "run pybabel update (shared/narration/README.md)"
    assert [m.id for m in entries(locale) if not m.string] == [], "empty"
    assert [m.id for m in entries(locale) if m.fuzzy] == [], "fuzzy"
    assert not catalog(locale).obsolete
    assert catalog(locale).locale_identifier == locale and not catalog(locale).fuzzy


@pytest.mark.parametrize("locale", TRANSLATED)
def test_a_translation_keeps_the_placeholders_of_its_sentence(locale):
    """Every placeholder of the translation is one of the English sentence's (a capital first letter
    asks for the value capitalized), and each of the English one is used, except a glossary term
    that the translation writes out."""
    wrong = []
    for m in entries(locale):
        given = set(PLACEHOLDER.findall(m.id))
        used = {name[:1].lower() + name[1:] for name in PLACEHOLDER.findall(m.string)}
        lowered = {name[:1].lower() + name[1:] for name in given}
        if not used <= lowered or not (lowered - TERMS) <= used:
            wrong.append((m.context, m.id, m.string))
        if re.search(r"%(?!\(\w+\)s|%)", m.string.replace("%%", "")):
            wrong.append((m.context, m.id, m.string))
    assert wrong == []


@pytest.mark.parametrize("locale", TRANSLATED)
def test_no_sentence_is_left_in_english(locale):
    """A sentence with words besides its placeholders and markup reads differently in every language."""
    def words(text):
        return re.sub(r"%\(\w+\)s|<[^>]+>|[^\w]|\d", " ", text).split()
    same = [m.id for m in entries(locale)
            if m.string == m.id and words(m.id) and m.id not in SAME_AS_ENGLISH[locale]]
    assert same == []


@pytest.mark.parametrize("book", BOOKS)
def test_every_keyed_sentence_is_in_every_catalog(book):
    env = environment("en")
    contexts = {f"{book}:{key}" for key in keys(env, book)}
    if book == "reasons":
        assert set(keys(env, book)) == {r.value for r in Reason} | {"malformed", "unknown_game"} | set(RECORD_REASONS)
    for locale in TRANSLATED:
        assert contexts <= {m.context for m in entries(locale)}, locale


@pytest.mark.parametrize("locale", LOCALES)
def test_every_glossary_has_the_same_terms_as_the_english_one(locale):
    def flat(d, prefix=""):
        out = set()
        for k, v in d.items():
            out |= flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k}
        return out
    # plural tables may have the locale's own forms (ru: one/few/many); everything else must match
    strip = lambda ks: {k for k in ks if not re.search(r"\.(one|few|many|two|zero)$", k)}  # noqa: E731
    assert strip(flat(glossary(locale))) == strip(flat(glossary("en")))
