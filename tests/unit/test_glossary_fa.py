"""The Persian glossary speaks the words of the Persian rule text (shared/seeds/000_6fb80450e6026f6d.txt)."""

from __future__ import annotations

from functools import lru_cache

import pytest

from avalon.shared.narration.render import glossary

from .seed_texts import read_seed, repo_root


SEED = repo_root().parent / "shared" / "seeds" / "000_6fb80450e6026f6d.txt"

# The expected words, written out here, as the Persian rule text spells them.
ROLES = {
    "merlin": "مرلین",
    "percival": "پرسیوال",
    "loyal_servant": "خدمتگزار آرتور",
    "assassin": "آدمکش",
    "morgana": "مورگانا",
    "mordred": "موردرد",
    "oberon": "اوبرون",
    "minion": "سرسپردهٔ موردرد",
}
TERMS = {
    "quest": "ماموریت",
    "leader": "رهبر",
    "assassination": "ترور",
}


@lru_cache(maxsize=1)
def rule_text() -> str:
    return read_seed(SEED.name, "Persian")  # skipped when ../shared/seeds is absent


def test_the_persian_rule_text_is_found_beside_the_repository():
    assert "آوالون" in rule_text()


@pytest.mark.parametrize("role, word", ROLES.items(), ids=list(ROLES))
def test_each_persian_role_name_is_the_word_of_the_persian_rule_text(role, word):
    assert word in rule_text(), f"{word!r} does not occur in {SEED.name}"
    assert glossary("fa")["roles"][role] == word


@pytest.mark.parametrize("term, word", TERMS.items(), ids=list(TERMS))
def test_quest_leader_and_assassination_are_the_words_of_the_persian_rule_text(term, word):
    assert word in rule_text(), f"{word!r} does not occur in {SEED.name}"
    assert glossary("fa")[term] == word


def test_the_persian_teams_are_named_as_in_the_rule_text():
    teams = glossary("fa")["teams"]
    for word in ("خدمتگزاران وفادار آرتور", "سرسپردگان موردرد"):
        assert word in rule_text()
    assert "خدمتگزاران وفادار آرتور" in teams["good"]
    assert "سرسپردگان موردرد" in teams["evil"]


def test_the_persian_vote_words_are_those_of_the_rule_text():
    g = glossary("fa")
    for word in ("رأی", "موافق", "مخالف"):
        assert word in rule_text()
    assert (g["vote"], g["approve"], g["reject"]) == ("رأی", "موافق", "مخالف")


def test_the_persian_plural_tables_use_the_cldr_forms_one_and_other():
    g = glossary("fa")
    for table in ("fail_cards", "success_cards", "players_word", "rejections_word"):
        assert set(g[table]) == {"one", "other"}
