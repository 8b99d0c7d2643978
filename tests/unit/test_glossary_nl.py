"""The Dutch glossary speaks the words of the Dutch rule text (seed 003).

Each expected term is written out here literally and is also looked up in the
rule text itself (case-insensitively). Where the text only has another form of
a word (it writes "Trouwe Dienaren van Arthur", the glossary names one
"Trouwe Dienaar van Arthur"), the term is found by the stems of those words, written
``stem*`` ("Trouwe Diena* van Arthur"); each stem is checked to begin the
glossary's word, and a word without ``*`` must occur whole.
"""

from __future__ import annotations


import pytest

from avalon.shared.narration.render import glossary

from .seed_texts import assert_term as check_term
from .seed_texts import occurs, read_seed

SEED = "003_5d7329a9d427ad14.txt"


@pytest.fixture(scope="module")
def rule_text() -> str:
    return read_seed(SEED, "Dutch")


def assert_term(actual: str, expected: str, stems: str, text: str) -> None:
    check_term(actual, expected, stems, text, SEED)


# glossary key -> (the word the rule text uses, how to find it there: stem* for an inflected word)
ROLES = {
    "merlin": ("Merlin", "Merlin"),
    "percival": ("Percival", "Percival"),
    "loyal_servant": ("Trouwe Dienaar van Arthur", "Trouwe Diena* van Arthur"),
    "assassin": ("Assassin", "Assassin"),
    "morgana": ("Morgana", "Morgana"),
    "mordred": ("Mordred", "Mordred"),
    "oberon": ("Oberon", "Oberon"),
    "minion": ("Volgeling van Mordred", "Volgeling* van Mordred"),
}

TERMS = {
    "quest": ("queeste", "queeste"),
    "quests": ("queesten", "queesten"),
    "leader": ("Leader", "Leader"),
    "team": ("team", "team"),
    "vote_track": ("stemspoor", "stemspoor"),
    "approve": ("Goedkeuren", "Goedkeuren"),
    "reject": ("Afkeuren", "Afkeuren"),
    "assassination": ("de moord op Merlin", "de moord op Merlin"),
    "excalibur": ("Excalibur", "Excalibur"),
    "lancelot": ("Lancelot", "Lancelot"),
}


@pytest.mark.parametrize("key", ROLES)
def test_each_role_is_named_as_in_the_dutch_rule_text(key, rule_text):
    expected, stems = ROLES[key]
    assert_term(glossary("nl")["roles"][key], expected, stems, rule_text)


@pytest.mark.parametrize("key", TERMS)
def test_each_key_term_is_the_word_of_the_dutch_rule_text(key, rule_text):
    expected, stems = TERMS[key]
    assert_term(glossary("nl")[key], expected, stems, rule_text)


def test_the_quest_and_the_leader_are_queeste_and_leader(rule_text):
    g = glossary("nl")
    assert_term(g["quest"], "queeste", "queeste", rule_text)
    assert_term(g["leader"], "Leader", "Leader", rule_text)
    assert_term(g["phases"]["quest"], "de queeste", "de queeste", rule_text)


def test_the_cards_are_the_rule_texts_sukces_and_faal_cards(rule_text):
    g = glossary("nl")
    assert_term(g["fail_cards"]["one"], "Faalkaart", "Faalkaart", rule_text)
    assert_term(g["fail_cards"]["other"], "Faalkaarten", "Faalkaarten", rule_text)
    assert_term(g["success_cards"]["one"], "Sukceskaart", "Sukceskaart", rule_text)
    assert_term(g["cards"]["fail"], "Faalkaart", "Faalkaart", rule_text)
    assert_term(g["cards"]["success"], "Sukceskaart", "Sukceskaart", rule_text)


def test_the_teams_are_the_rule_texts_good_and_evil(rule_text):
    g = glossary("nl")
    assert_term(g["team_short"]["good"], "goed", "goed", rule_text)
    assert_term(g["team_short"]["evil"], "kwaad", "kwaad", rule_text)
    assert g["teams"]["good"] == "Goed (de Trouwe Dienaren van Arthur)" and occurs("Trouwe Dienaren van Arthur", rule_text)
    assert g["teams"]["evil"] == "Kwaad (de Volgelingen van Mordred)" and occurs("Volgelingen van Mordred", rule_text)


def test_the_lady_of_the_lake_absent_from_the_rule_text_has_her_established_dutch_name():
    g = glossary("nl")
    assert g["lady"] == "de Vrouwe van het Meer"
    assert g["options"]["lady"] == "Vrouwe van het Meer"
    assert g["phases"]["lady"] == "de Vrouwe van het Meer"


def test_every_counted_noun_has_the_dutch_plural_forms():
    g = glossary("nl")
    for table in ("fail_cards", "success_cards", "players_word", "rejections_word"):
        assert {"one", "other"} <= set(g[table]), table
    assert (g["players_word"]["one"], g["players_word"]["other"]) == ("speler", "spelers")
