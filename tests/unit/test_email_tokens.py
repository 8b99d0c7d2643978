"""Reply tokens: a reply is tied to its game only when the token was minted for that game and the
address the reply comes from."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avalon.services.email_gateway.tokens import Tokens

SECRET = "correct horse battery staple, twice"
GAMES = ["tg-1001234567_42", "mail-k3x9q2", "tg:-100.5_7", "G" * 60]
GAME_IDS = st.text(alphabet="ABCXYZabcxyz0189_:-.", min_size=1, max_size=60)
ADDRESSES = st.emails().map(str)


@pytest.fixture
def tokens() -> Tokens:
    return Tokens(SECRET)


@pytest.mark.parametrize("game_id", GAMES)
def test_a_token_names_its_game_and_checks_for_its_player(tokens: Tokens, game_id: str) -> None:
    token = tokens.make(game_id, "maryam@example.org")
    assert tokens.game_of(token) == game_id
    assert tokens.check(token, "maryam@example.org") == game_id


@given(game_id=GAME_IDS, address=ADDRESSES)
@settings(max_examples=200, deadline=None)
def test_every_game_id_round_trips_through_a_lower_case_token(game_id: str, address: str) -> None:
    tokens = Tokens(SECRET)
    token = tokens.make(game_id, address)
    assert re.fullmatch(r"[a-z0-9-]+", token)
    assert len(token) <= 113
    assert tokens.game_of(token) == game_id
    assert tokens.check(token, address) == game_id


def test_a_token_stays_short_enough_for_a_local_part_with_a_usual_game_id(tokens: Tokens) -> None:
    local_part = "narrator+" + tokens.make("tg-1001234567_42", "maryam@example.org")
    assert len(local_part) <= 64  # RFC 5321's limit on a local part


def test_the_token_of_one_player_does_not_check_for_another(tokens: Tokens) -> None:
    token = tokens.make("tg-1001234567_42", "maryam@example.org")
    assert tokens.check(token, "mordred@example.org") is None
    assert tokens.check(token, "maryam@example.com") is None


def test_the_address_is_compared_without_case_or_surrounding_space(tokens: Tokens) -> None:
    token = tokens.make("mail-k3x9q2", "Maryam@Example.ORG")
    assert tokens.check(token, "  maryam@example.org ") == "mail-k3x9q2"


def test_a_token_for_another_game_does_not_pass_for_this_one(tokens: Tokens) -> None:
    mine = tokens.make("tg-1001234567_42", "maryam@example.org")
    other = tokens.make("tg-1001234567_43", "maryam@example.org")
    forged = other.split("-")[0] + "-" + mine.rsplit("-", 1)[1]  # their game, my MAC
    assert tokens.game_of(forged) == "tg-1001234567_43"
    assert tokens.check(forged, "maryam@example.org") is None


def test_a_token_from_another_secret_does_not_check(tokens: Tokens) -> None:
    token = Tokens("another secret of enough length").make("mail-k3x9q2", "maryam@example.org")
    assert tokens.game_of(token) == "mail-k3x9q2"
    assert tokens.check(token, "maryam@example.org") is None


def test_every_single_flipped_character_makes_the_token_fail(tokens: Tokens) -> None:
    token = tokens.make("tg-1001234567_42", "maryam@example.org")
    for i, char in enumerate(token):
        for other in "abz27-":
            if other != char:
                flipped = token[:i] + other + token[i + 1:]
                assert tokens.check(flipped, "maryam@example.org") is None, (i, other)


def test_an_upper_cased_token_still_works(tokens: Tokens) -> None:
    token = tokens.make("mail-k3x9q2", "maryam@example.org")
    assert tokens.game_of(token.upper()) == "mail-k3x9q2"
    assert tokens.check(token.upper(), "MARYAM@EXAMPLE.ORG") == "mail-k3x9q2"


@pytest.mark.parametrize("garbage", [
    "", "-", "--", "abc", "a-b", "narrator", "x" * 500, "🙂-🙂", "\x00\n-\r", "======-aaaaaaaaaaaaaaaa",
    "mfrgg-aaaaaaaaaaaaaaa", "mfrgg-aaaaaaaaaaaaaaa1", "1-aaaaaaaaaaaaaaaa", "8888-aaaaaaaaaaaaaaaa", "ORSXG5A-",
])
def test_garbage_names_no_game_and_checks_for_nobody(tokens: Tokens, garbage: str) -> None:
    assert tokens.game_of(garbage) is None
    assert tokens.check(garbage, "maryam@example.org") is None


@given(garbage=st.text(max_size=150))
@settings(max_examples=300, deadline=None)
def test_no_text_makes_reading_a_token_raise(garbage: str) -> None:
    tokens = Tokens(SECRET)
    tokens.game_of(garbage)
    assert tokens.check(garbage, "maryam@example.org") is None


def test_a_token_can_name_a_game_only_by_its_canonical_spelling(tokens: Tokens) -> None:
    token = tokens.make("ab", "maryam@example.org")  # base32 "mfra": the last char has unused bits
    game_part, mac = token.split("-")
    other_spelling = game_part[:-1] + "b"  # decodes to the same bytes
    assert tokens.game_of(f"{other_spelling}-{mac}") is None


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(ValueError):
        Tokens("too short")
    with pytest.raises(ValueError):
        Tokens(b"\x00" * 15)
    Tokens(b"\x00" * 16)


def test_a_game_id_a_token_cannot_carry_is_refused(tokens: Tokens) -> None:
    for bad in ["", "spaces here", "ümlaut", "g" * 65]:
        with pytest.raises(ValueError):
            tokens.make(bad, "maryam@example.org")
