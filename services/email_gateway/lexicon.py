"""The words a player may type in a mail, in the six languages, and how text is folded to compare them.

The words are in each language's glossary, ``[typed]`` (``shared/narration/locales/<locale>/glossary.toml``),
so a language brings its own. Each locale lists, per command kind, its phrases; the first one is the main
word (the one in help texts and in our ``mailto:`` links). A phrase starting with ``=`` only matches when
typed with its accents (Vietnamese ``mời``, "invite", would otherwise read as French ``moi``; ``hủy``,
"cancel", as the name Huy). The words come from each language's rule text where it has them.

Collisions, decided: a phrase read the same in two languages must mean the same command (tested);
argument-less commands (votes, cards, join, leave...) must stand alone on their line (politeness words
allowed), so "No idea who Merlin is" or "Leave it to me" is no command at all.
"""

from __future__ import annotations

import unicodedata

from avalon.shared.languages import LOCALES
from avalon.shared.narration.render import glossary


def _typed(locale: str) -> dict:
    return glossary(locale)["typed"]


WORDS: dict[str, dict[str, tuple[str, ...]]] = {
    locale: {kind: tuple(phrases) for kind, phrases in _typed(locale)["commands"].items()} for locale in LOCALES}

# Commands that take no argument: the rest of their line may only hold politeness words.
BARE = frozenset({"join", "leave", "start", "cancel", "approve", "reject", "success", "fail", "sheathe",
                  "status", "role", "rules", "help", "stats", "top", "history", "hide_stats", "show_stats",
                  "forget_me", "pause", "resume", "void", "away", "unwatch"})
ONE_TARGET = frozenset({"pick", "lady", "excalibur", "shoot", "accuse", "hand", "open_seat", "pass_host", "remove"})
TEXT_KINDS = frozenset({"say", "last_word"})

FILLERS = frozenset(word for locale in LOCALES for word in _typed(locale)["fillers"])
AND_WORDS = frozenset(word for locale in LOCALES for word in _typed(locale)["and_words"])  # fa "را": object marker
NONE_WORDS = frozenset(word for locale in LOCALES for word in _typed(locale)["none_words"])
#: "invite ADDRESS seat NAME": the words before the holder of the seat offered, in every language
SEAT_WORDS = tuple(sorted({word for locale in LOCALES for word in _typed(locale)["seat_words"]},
                          key=lambda phrase: -len(phrase.split())))

PRESETS: dict[str, tuple[str, ...]] = {  # a preset's names in every language
    preset: tuple(name for locale in LOCALES for name in _typed(locale)["presets"][preset])
    for preset in _typed("en")["presets"]}
PRESET_WORD = {locale: dict(_typed(locale)["preset_words"]) for locale in LOCALES}  # what our links write

LANGUAGE_NAMES: dict[str, tuple[str, ...]] = {  # a language's code, and its names in every language
    code: (code, *(name for locale in LOCALES for name in _typed(locale)["language_names"][code]))
    for code in LOCALES}

# -- folding -------------------------------------------------------------------------

_EXACT = str.maketrans({"ي": "ی", "ى": "ی", "ك": "ک", "ۀ": "ه", "ە": "ه", "ة": "ه", "ـ": None,
                        "\u200c": None, "\u200d": None, "’": "'", "‘": "'", "ё": "е", "Ё": "е"})
_LOOSE = str.maketrans({"đ": "d", "ð": "d", "ø": "o", "ł": "l", "æ": "ae", "œ": "oe", "ı": "i"})
_JOINERS = "'’‘-."


def fold(text: str) -> str:
    """Case, compatibility forms, Persian letter variants, ZWNJ and ё folded; accents kept."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_EXACT)


def loosen(folded: str) -> str:
    """``fold``'s result without accents or other combining marks (Vietnamese tones, Arabic harakat)."""
    decomposed = unicodedata.normalize("NFKD", folded.translate(_LOOSE))
    return "".join(c for c in decomposed if not unicodedata.category(c).startswith("M")).translate(_EXACT)


def _is_core(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNM" or char in "_\u200c\u200d"


def token_spans(text: str) -> list[tuple[int, int]]:
    """Words of ``text`` as (start, end): letters, digits and marks, with inner apostrophes, hyphens, dots."""
    spans, start, n = [], None, len(text)
    for i in range(n + 1):
        char = text[i] if i < n else " "
        if start is None:
            if _is_core(char):
                start = i
        elif not (_is_core(char) or char in _JOINERS):
            end = i
            while text[end - 1] in _JOINERS:
                end -= 1
            spans.append((start, end))
            start = None
    return spans


def words(text: str) -> list[str]:
    """The loose-folded words of ``text``."""
    return [loosen(fold(text[a:b])) for a, b in token_spans(text)]


def phrase_keys(phrase: str) -> tuple[str, str, str]:
    """(exact key, loose key, loose key without spaces) of a phrase."""
    parts = [fold(phrase[a:b]) for a, b in token_spans(phrase)]
    loose = [loosen(p) for p in parts]
    return " ".join(parts), " ".join(loose), "".join(loose)


def main_word(locale: str, kind: str) -> str:
    return WORDS[locale][kind][0].lstrip("=")
