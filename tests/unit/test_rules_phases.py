"""The phase table: every phase has one entry, and a game never waits without a deadline (docs/rules.md §7)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from avalon.services.engine.rules import MissedRule, Phase, Timers, new_game
from avalon.services.engine.rules.phases import PHASES

#: The phases a started game waits in: each has a deadline the host sets (docs/rules.md §7).
TIMED = (Phase.PROPOSAL, Phase.VOTE, Phase.QUEST, Phase.EXCALIBUR, Phase.LADY, Phase.ASSASSINATION,
         Phase.LAST_WORD)


def test_every_phase_has_exactly_one_entry_in_the_table():
    assert set(PHASES) == set(Phase)


@pytest.mark.parametrize("phase", TIMED, ids=lambda p: p.value)
def test_every_phase_a_game_waits_in_has_a_timer_the_host_sets_and_says_what_missing_it_does(phase):
    rules = PHASES[phase]
    assert rules.timer in {f.name for f in fields(Timers)}
    assert rules.on_timeout is not None


@pytest.mark.parametrize("phase", (Phase.LOBBY, Phase.ENDED, Phase.CANCELLED), ids=lambda p: p.value)
def test_the_lobby_and_a_finished_game_have_no_deadline(phase):
    rules = PHASES[phase]
    assert rules.timer is None and rules.on_timeout is None
    assert rules.missed_rule(new_game()) is MissedRule.NONE


def test_every_phase_of_a_started_game_lets_the_host_cancel_and_the_scheduler_time_it_out():
    for phase in TIMED:
        assert {"cancel_game", "phase_timed_out"} <= set(PHASES[phase].accepts), phase
    assert not PHASES[Phase.ENDED].accepts and not PHASES[Phase.CANCELLED].accepts
