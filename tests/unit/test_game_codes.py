"""A game's code: short, stable for a game, and read back as people type it."""

from __future__ import annotations

import re

from avalon.shared.game.codes import game_code, read_code


def test_a_code_is_eight_unambiguous_characters_and_the_same_for_the_same_game():
    code = game_code("tg-1001234567_42")
    assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}", code)
    assert code == game_code("tg-1001234567_42") and code != game_code("tg-1001234567_43")
    assert len({game_code(f"g{n}") for n in range(20_000)}) == 20_000


def test_a_code_is_read_back_in_any_case_with_or_without_its_dash_and_with_letters_for_digits():
    assert read_code("7kq2-m9xd") == "7KQ2-M9XD"
    assert read_code(" 7KQ2M9XD ") == "7KQ2-M9XD"
    assert read_code("7KQ2-M9XO") == "7KQ2-M9X0" and read_code("IL00-0000") == "1100-0000"
    for wrong in ("", "7KQ2-M9X", "7KQ2-M9XD1", "7KQ2-M9XU", "tg-100_3"):
        assert read_code(wrong) is None, wrong
