"""The game as a picture (shared/pictures): golden PNGs per language, the same bytes for the same game,
and nothing private on a picture that a whole group receives.

The golden game (picture_game.py) is the one of tests/unit/test_golden.py (Lady, Excalibur, Lancelot,
seven players), with names in Latin, Vietnamese, Persian and Cyrillic script. Look at the pictures after a change
(they are PNG files under tests/golden/pictures/), then regenerate:
``UPDATE_GOLDEN=1 python -m pytest tests/unit/test_pictures.py``. The bytes depend on the FreeType and
HarfBuzz that Pillow's wheel bundles: after a Pillow upgrade, look and regenerate.
"""

from __future__ import annotations

import os
from dataclasses import replace
from io import BytesIO
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageFont

from avalon.services.engine.simulate import random_game
from avalon.shared.game.events import (
    Audience, AudienceKind, CardPlayed, LadyResult, RoleAssigned, TeamProposed, VoteCast,
)
from avalon.shared.game.model import Card, Role, Team
from avalon.shared.game.options import Options, Preset
from avalon.shared.languages import LOCALES
from avalon.shared.pictures import draw_board, draw_end, picture_of
from avalon.shared.pictures.canvas import FONTS, PAPER, REGULAR, SHAPING, font

from .picture_game import NAMES, golden_game, mid_game
from .shaping import needs_shaping

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "pictures"


def check(path: Path, data: bytes) -> None:
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert path.exists(), f"missing {path}; run with UPDATE_GOLDEN=1 once"
    assert data == path.read_bytes(), f"{path.name} differs: look at both, then UPDATE_GOLDEN=1 if intended"


def test_the_mid_game_board_shows_what_the_group_was_told():
    game = picture_of(mid_game(golden_game()))
    assert [r.failed for r in game.results] == [True, False, False]
    assert game.quest == 4 and game.vote_track == 1 and game.fails_needed[3] == 2
    assert game.leader == "p6" and game.lady_holder == "p5" and game.excalibur_holder == "p3"
    assert game.ending is None


@needs_shaping
@pytest.mark.parametrize("locale", LOCALES)
def test_the_board_is_drawn_as_checked_in(locale):
    check(GOLDEN / f"board.{locale}.png", draw_board(picture_of(mid_game(golden_game())), NAMES, locale))


@needs_shaping
@pytest.mark.parametrize("locale", LOCALES)
def test_the_end_of_the_game_is_drawn_as_checked_in(locale):
    check(GOLDEN / f"end.{locale}.png", draw_end(picture_of(golden_game()), NAMES, locale))


def test_the_same_game_gives_the_same_bytes_every_time():
    events = golden_game()
    for locale in ("fa", "vi"):
        first = draw_end(picture_of(events), NAMES, locale), draw_board(picture_of(mid_game(events)), NAMES, locale)
        again = draw_end(picture_of(list(events)), dict(NAMES), locale), draw_board(
            picture_of(mid_game(golden_game())), dict(NAMES), locale)
        assert first == again


def test_each_language_draws_its_own_words():
    events = golden_game()
    assert len({draw_end(picture_of(events), NAMES, locale) for locale in LOCALES}) == len(LOCALES)


def test_a_language_the_narrator_does_not_speak_is_drawn_in_english():
    game = picture_of(golden_game())
    assert draw_end(game, NAMES, "de") == draw_end(game, NAMES, "en")
    assert draw_board(game, NAMES, "../fa") == draw_board(game, NAMES, "en")


def test_a_png_has_no_chunk_that_could_vary():
    data = draw_board(picture_of(mid_game(golden_game())), NAMES, "en")
    chunks, at = [], 8
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        chunks.append(data[at + 4:at + 8].decode())
        at += 12 + length
    assert set(chunks) <= {"IHDR", "PLTE", "IDAT", "IEND"}, chunks


@pytest.mark.parametrize("preset, players, anonymous", [
    (Preset.CLASSIC, 5, False), (Preset.ONLINE, 8, True), (Preset.FORUM, 12, False), (Preset.FORUM, 10, True)])
def test_any_table_is_drawn_whole_in_every_language(preset, players, anonymous):
    """Tables of 5 to 12, missed proposals, fifth proposals without a vote, anonymous votes: every row
    and every seat fits in the picture (the grid's right edge is inside it, nothing is cut off)."""
    options = Options.preset_defaults(preset, anonymous_votes=anonymous, lady=True, excalibur=True)
    for seed in range(2):
        events = random_game(players, options, seed, timeout_rate=0.2, keep=True).events
        game = picture_of(events)
        assert len(game.seats) == players and game.ending is not None
        for locale in LOCALES:
            image = Image.open(BytesIO(draw_end(game, {}, locale)))
            assert image.format == "PNG" and image.width >= 720
            ink = ImageChops.difference(image.convert("RGB"), Image.new("RGB", image.size, PAPER)).getbbox()
            assert ink[0] >= 20 and ink[2] <= image.width - 20, (locale, ink, image.size)
            Image.open(BytesIO(draw_board(picture_of(events[:len(events) // 2]), {}, locale))).verify()


# -- secrets ------------------------------------------------------------------------------------------

def _private_noise(events):
    """The same game with every private event changed and more of them slipped in: other roles, other
    votes before the reveal, other cards, other Lady results, and even a public-looking kind of event
    addressed to one player."""
    out = []
    for e in events:
        if e.audience.kind is AudienceKind.PUBLIC:
            out.append(e)
        if isinstance(e, TeamProposed):  # a team only p1 was told of: never on a group's picture
            out.append(TeamProposed(audience=Audience.to("p1"), quest=e.quest, leader="p2", team=("p2", "p3"),
                                    excalibur="p2", auto_approved=False))
        if isinstance(e, VoteCast):
            out.append(replace(e, approve=not e.approve))
        elif isinstance(e, CardPlayed):
            out.append(replace(e, card=Card.FAIL if e.card is Card.SUCCESS else Card.SUCCESS))
        elif isinstance(e, LadyResult):
            out.append(replace(e, loyalty=Team.EVIL if e.loyalty is Team.GOOD else Team.GOOD))
        elif isinstance(e, RoleAssigned):
            out.append(replace(e, role=Role.MORDRED, team=Team.EVIL))
    return out


def test_private_events_change_nothing_in_the_pictures():
    events = golden_game()
    assert any(e.audience.kind is not AudienceKind.PUBLIC for e in events)
    public = [e for e in events if e.audience.kind is AudienceKind.PUBLIC]
    noisy = _private_noise(events)
    assert picture_of(noisy) == picture_of(events) == picture_of(public)
    for locale in ("en", "fa"):
        assert draw_end(picture_of(noisy), NAMES, locale) == draw_end(picture_of(public), NAMES, locale)
        board = mid_game(events)
        assert draw_board(picture_of(_private_noise(board)), NAMES, locale) == draw_board(
            picture_of([e for e in board if e.audience.kind is AudienceKind.PUBLIC]), NAMES, locale)


# -- scripts ------------------------------------------------------------------------------------------

def _ink(text: str, face, direction: str | None = None) -> Image.Image:
    image = Image.new("L", (240, 60), 255)
    ImageDraw.Draw(image).text((120, 30), text, font=face, fill=0, anchor="mm", direction=direction)
    return image


@needs_shaping
def test_persian_letters_are_joined_and_read_right_to_left():
    assert SHAPING, "Pillow has no Raqm here (libfribidi missing?): Persian would be drawn unjoined"
    unshaped = ImageFont.truetype(str(FONTS / REGULAR), 28, layout_engine=ImageFont.Layout.BASIC)
    for word in ("پگاه", "فرشته"):  # Raqm: joined forms, right to left; the basic layout: neither
        assert ImageChops.difference(_ink(word, font(28), "rtl"), _ink(word, unshaped)).getbbox() is not None
    # a Latin name inside right-to-left text stays whole and in its own order
    isolated = _ink("\u2068Ann\u2069:", font(28), "rtl")
    assert ImageChops.difference(isolated, _ink(":Ann", font(28), "ltr")).getbbox() is None
