"""The Vietnamese glossary uses the words of the Vietnamese rule text (seed 002).

Each expected word is written here literally and checked twice: it is what the
glossary says, and it occurs in the rule text itself (case-insensitively).
"""

from __future__ import annotations


import pytest

from avalon.shared.narration.render import glossary

from .seed_texts import read_seed

SEED_FILE = "002_d008a72eeb34f2d8.txt"


def seed_text() -> str:
    return read_seed(SEED_FILE, "Vietnamese")  # skipped when ../shared/seeds is absent


def in_seed(word: str) -> bool:
    return word.casefold() in seed_text().casefold()


# glossary entry -> (the glossary's value, the words of the rule text it is made of)
TERMS = {
    ("roles", "merlin"): ("Merlin (Tiên Tri)", ["Merlin (Tiên Tri)"]),
    ("roles", "percival"): ("Percival (Cận Vệ)", ["Percival (Cận Vệ)"]),
    ("roles", "loyal_servant"): ("Thuộc hạ trung thành của vua Arthur", ["thuộc hạ trung thành của vua Arthur"]),
    ("roles", "assassin"): ("Assassin (Sát Thủ)", ["Assassin (Sát Thủ)"]),
    ("roles", "morgana"): ("Morgana (Giả Mạo)", ["Morgana (Giả Mạo)"]),
    ("roles", "mordred"): ("Mordred (Chúa Quỷ)", ["Mordred (Chúa Quỷ)"]),
    ("roles", "oberon"): ("Oberon (Quỷ Ngốc)", ["Oberon (Quỷ Ngốc)"]),
    # the text has no minion card, but calls Mordred's followers "tay sai"
    ("roles", "minion"): ("Tay sai của Mordred", ["tay sai", "Mordred"]),
    ("team_short", "good"): ("Phe Thiện", ["Phe Thiện"]),
    ("team_short", "evil"): ("Phe Ác", ["Phe Ác"]),
    ("quest",): ("nhiệm vụ", ["nhiệm vụ"]),
    ("leader",): ("Chỉ huy", ["Chỉ huy"]),
    ("lady",): ("Lady of the Lake", ["Lady of the Lake"]),
    ("excalibur",): ("Excalibur", ["Excalibur"]),
    ("lancelot",): ("Lancelot", ["Lancelot"]),
    ("approve",): ("Đồng ý", ["Đồng ý"]),
    ("reject",): ("Không đồng ý", ["Không đồng ý"]),
    ("cards", "success"): ("Thành công", ["Thành công"]),
    ("cards", "fail"): ("Thất bại", ["Thất bại"]),
    ("vote_track",): ("số đội bị từ chối", ["đội bị từ chối"]),
}


def lookup(path: tuple[str, ...]) -> str:
    value = glossary("vi")
    for key in path:
        value = value[key]
    return value


@pytest.mark.parametrize("path", list(TERMS), ids=".".join)
def test_the_vietnamese_glossary_says_the_expected_word(path):
    expected, _ = TERMS[path]
    assert lookup(path) == expected


@pytest.mark.parametrize("path", list(TERMS), ids=".".join)
def test_each_expected_vietnamese_word_occurs_in_the_rule_text(path):
    expected, words = TERMS[path]
    for word in words:
        assert word.casefold() in expected.casefold(), f"{word!r} is not part of {expected!r}"
        assert in_seed(word), f"{word!r} does not occur in {SEED_FILE}"


def test_the_vietnamese_teams_are_phe_thien_and_phe_ac():
    teams = glossary("vi")["teams"]
    assert teams["good"].startswith("Phe Thiện") and teams["evil"].startswith("Phe Ác")
    assert in_seed("Phe Thiện") and in_seed("Phe Ác")


def test_vietnamese_plural_tables_have_one_and_other_forms():
    g = glossary("vi")
    for table in ("fail_cards", "success_cards", "players_word", "rejections_word"):
        assert set(g[table]) == {"one", "other"}
    assert g["fail_cards"]["other"] == "lá Thất bại" and in_seed("Thất bại")
