"""The Russian glossary speaks the words of the Russian rule text (seed 001).

Each expected term is written out here literally and is also looked up in the
rule text itself (case-insensitively). Russian inflects nouns, so a term is
found in the text by the stems of its inflected words, written ``stem*``
("Верн* слуг* Артура" finds "Верные слуги Артура"); each stem is checked to
begin the glossary's word, and a word without ``*`` must occur whole.
"""

from __future__ import annotations


import pytest

from avalon.shared.narration.render import glossary

from .seed_texts import assert_term as check_term
from .seed_texts import occurs, read_seed

SEED = "001_3dec1d396e439beb.txt"


@pytest.fixture(scope="module")
def rule_text() -> str:
    return read_seed(SEED, "Russian")


def assert_term(actual: str, expected: str, stems: str, text: str) -> None:
    check_term(actual, expected, stems, text, SEED)


# glossary key -> (the word the rule text uses, how to find it there: stem* for an inflected word)
ROLES = {
    "merlin": ("Мерлин", "Мерлин"),
    "percival": ("Персиваль", "Персиваль"),
    "loyal_servant": ("Верный слуга Артура", "Верн* слуг* Артура"),
    "assassin": ("Убийца", "Убийца"),
    "morgana": ("Моргана", "Моргана"),
    "mordred": ("Мордред", "Мордред"),
    "oberon": ("Оберон", "Оберон"),
    "minion": ("прислужник Мордреда", "прислужник* Мордреда"),
}

TERMS = {
    "quest": ("задание", "задание"),
    "leader": ("лидер", "лидер"),
    "team": ("команда", "команда"),
    "vote_track": ("шкала голосования", "шкала голосования"),
    "approve": ("За", "За"),
    "reject": ("Против", "Против"),
    "assassination": ("убийство Мерлина", "убийство Мерлина"),
    "excalibur": ("Экскалибур", "Экскалибур"),
    "lancelot": ("Ланселот", "Ланселот"),
}


@pytest.mark.parametrize("key", ROLES)
def test_each_role_is_named_as_in_the_russian_rule_text(key, rule_text):
    expected, stems = ROLES[key]
    assert_term(glossary("ru")["roles"][key], expected, stems, rule_text)


@pytest.mark.parametrize("key", TERMS)
def test_each_key_term_is_the_word_of_the_russian_rule_text(key, rule_text):
    expected, stems = TERMS[key]
    assert_term(glossary("ru")[key], expected, stems, rule_text)


def test_the_quest_and_the_leader_are_zadanie_and_lider(rule_text):
    g = glossary("ru")
    assert_term(g["quest"], "задание", "задание", rule_text)
    assert_term(g["leader"], "лидер", "лидер", rule_text)
    assert_term(g["phases"]["quest"], "задание", "задание", rule_text)


def test_the_cards_are_the_rule_texts_success_and_fail_cards(rule_text):
    g = glossary("ru")
    assert_term(g["fail_cards"]["one"], "карта провала", "карт* провала", rule_text)
    assert_term(g["success_cards"]["one"], "карта успеха", "карт* успеха", rule_text)


def test_the_teams_are_the_rule_texts_good_and_evil(rule_text):
    g = glossary("ru")
    assert_term(g["team_short"]["good"], "добро", "добро", rule_text)
    assert_term(g["team_short"]["evil"], "зло", "зло", rule_text)
    assert g["teams"]["good"] == "Добро (Верные слуги Артура)" and occurs("Верные слуги Артура", rule_text)
    assert g["teams"]["evil"] == "Зло (прислужники Мордреда)" and occurs("прислужники Мордреда", rule_text)


def test_the_lady_of_the_lake_absent_from_the_rule_text_has_her_established_russian_name():
    g = glossary("ru")
    assert g["lady"] == "Владычица Озера"
    assert g["options"]["lady"] == "Владычица Озера"
    assert g["phases"]["lady"] == "Владычица Озера"


def test_every_counted_noun_has_all_four_russian_plural_forms():
    g = glossary("ru")
    for table in ("fail_cards", "success_cards", "players_word", "rejections_word"):
        assert {"one", "few", "many", "other"} <= set(g[table]), table
    assert [g["players_word"][f] for f in ("one", "few", "many")] == ["игрок", "игрока", "игроков"]
    assert [g["fail_cards"][f] for f in ("one", "few", "many")] == ["карта провала", "карты провала", "карт провала"]
