"""The French glossary uses the words of the French rule text (seed 004).

Each expected word is written here literally and checked twice: it is what the
glossary says, and it occurs in the rule text itself (case-insensitively; the
text mixes typographic and straight apostrophes, so both count as one).
"""

from __future__ import annotations


import pytest

from avalon.shared.narration.render import glossary

from .seed_texts import read_seed

SEED_FILE = "004_52a89d69d99118ea.txt"


def fold(text: str) -> str:
    return text.replace("\u2019", "'").casefold()


def seed_text() -> str:
    return read_seed(SEED_FILE, "French")  # skipped when ../shared/seeds is absent


def in_seed(word: str) -> bool:
    return fold(word) in fold(seed_text())


# glossary entry -> (the glossary's value, the words of the rule text it is made of)
TERMS = {
    ("roles", "merlin"): ("Merlin", ["Merlin"]),
    ("roles", "percival"): ("Perceval", ["Perceval"]),
    # the text only has the plural, "serviteurs Loyaux d'Arthur"; one player is its singular
    ("roles", "loyal_servant"): ("Serviteur Loyal d'Arthur", ["serviteur", "d'Arthur"]),
    ("roles", "assassin"): ("l'Assassin", ["l'Assassin"]),
    ("roles", "morgana"): ("Morgane", ["Morgane"]),
    ("roles", "mordred"): ("Mordred", ["Mordred"]),
    ("roles", "oberon"): ("Oberon", ["Oberon"]),
    ("roles", "minion"): ("Laquais de Mordred", ["laquais de Mordred"]),
    ("roles", "good_lancelot"): ("Lancelot gentil", ["Lancelot gentil"]),
    ("roles", "evil_lancelot"): ("Lancelot méchant", ["Lancelot méchant"]),
    ("teams", "good"): ("le Bien (les serviteurs Loyaux d'Arthur)", ["le Bien", "serviteurs Loyaux d'Arthur"]),
    ("teams", "evil"): ("le Mal (les laquais de Mordred)", ["le Mal", "laquais de Mordred"]),
    ("team_short", "good"): ("le Bien", ["le Bien"]),
    ("team_short", "evil"): ("le Mal", ["le Mal"]),
    ("quest",): ("quête", ["quête"]),
    ("leader",): ("leader", ["leader"]),
    ("team",): ("équipe", ["équipe"]),
    ("lady",): ("la Dame du Lac", ["la Dame du Lac"]),
    ("excalibur",): ("Excalibur", ["Excalibur"]),
    ("lancelot",): ("Lancelot", ["Lancelot"]),
    ("approve",): ("Pour", ["pour"]),
    ("reject",): ("Contre", ["contre"]),
    ("vote_track",): ("refus consécutifs", ["refus consécutifs"]),
    ("fail_cards", "other"): ("échecs", ["échecs"]),
    ("success_cards", "other"): ("succès", ["succès"]),
}


def lookup(path: tuple[str, ...]) -> str:
    value = glossary("fr")
    for key in path:
        value = value[key]
    return value


@pytest.mark.parametrize("path", list(TERMS), ids=".".join)
def test_the_french_glossary_says_the_expected_word(path):
    expected, _ = TERMS[path]
    assert lookup(path) == expected


@pytest.mark.parametrize("path", list(TERMS), ids=".".join)
def test_each_expected_french_word_occurs_in_the_rule_text(path):
    expected, words = TERMS[path]
    for word in words:
        assert fold(word) in fold(expected), f"{word!r} is not part of {expected!r}"
        assert in_seed(word), f"{word!r} does not occur in {SEED_FILE}"


def test_french_quests_are_also_called_missions_in_the_rule_text():
    g = glossary("fr")
    assert "mission" in g["missed_rules"]["proposal_cancelled"] and in_seed("la mission est annulée")


def test_french_plural_tables_have_one_and_other_forms():
    g = glossary("fr")
    for table in ("fail_cards", "success_cards", "players_word", "rejections_word"):
        assert set(g[table]) == {"one", "other"}
    assert g["fail_cards"]["one"] == "échec" and in_seed("1 échec")
