"""The golden pictures' game (tests/unit/test_pictures.py, and the installed package's check in
tests/e2e/test_installed_package.py): the seeded game of tests/unit/test_golden.py (Lady, Excalibur,
Lancelot, seven players), with names in Latin, Vietnamese, Persian and Cyrillic script. No pytest here:
the installed package's check imports it in a virtual environment without the test tools."""

from __future__ import annotations

from dataclasses import replace

from avalon.services.engine.rules import Lancelot, Options
from avalon.services.engine.simulate import random_game
from avalon.shared.game.events import PhaseOpened
from avalon.shared.game.model import Phase

OPTIONS = replace(Options(), lady=True, excalibur=True, lancelot=Lancelot.V1, last_word=True,
                  assassin_may_delegate=True)
SEED = 41
NAMES = {"p1": "Ann", "p2": "Nguyễn Thị Bảo", "p3": "فرشته", "p4": "Дмитрий", "p5": "Eva", "p6": "پگاه رضایی",
         "p7": "Chloé"}


def golden_game() -> list:
    return random_game(7, OPTIONS, SEED, timeout_rate=0.05, keep=True).events


def mid_game(events: list) -> list:
    """Up to the vote on quest 4's second team: three quests played, one rejection, the Lady passed on,
    Excalibur handed out."""
    for i, e in enumerate(events):
        if isinstance(e, PhaseOpened) and e.phase is Phase.VOTE and e.quest == 4 and e.vote_track == 1:
            return events[:i + 1]
    raise AssertionError("the golden game changed: no second vote on quest 4")
