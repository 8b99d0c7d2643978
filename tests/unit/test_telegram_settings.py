"""The host's /settings buttons turn into the options the engine will check."""

from __future__ import annotations

from services.engine.rules import Lancelot, Options, Preset, Role, check_options
from services.telegram_gateway.routers.settings import changed


def test_a_role_button_starts_from_the_standard_set_for_the_lobby_and_toggles_that_role():
    seven = changed(Options(), "r_oberon", players=7)
    assert seven.roles == (Role.PERCIVAL, Role.MORGANA, Role.MORDRED, Role.OBERON)
    assert changed(seven, "r_percival").roles == (Role.MORGANA, Role.MORDRED, Role.OBERON)


def test_each_phase_timer_cycles_through_its_steps_and_stays_valid():
    options = Options()
    seen = set()
    for _ in range(13):
        options = changed(options, "t_vote")
        seen.add(options.timers.vote)
        assert check_options(options) is None
    assert {30, 60, 600, 48 * 3600, 14 * 86400} <= seen, "the README's range, 30 s to 14 days"
    assert options.timers.proposal == Options().timers.proposal, "only that phase changed"


def test_the_preset_button_cycles_presets_and_keeps_the_chosen_extras():
    options = changed(Options(lady=True, lancelot=Lancelot.V2), "preset")
    assert options.preset is Preset.ONLINE and options.lady and options.lancelot is Lancelot.V2
    assert changed(options, "preset").preset is Preset.FORUM
    assert changed(changed(options, "preset"), "preset").preset is Preset.CLASSIC


def test_toggles_flip_one_option_each():
    assert changed(Options(), "lady").lady is True
    assert changed(Options(), "anon").anonymous_votes is True
    assert changed(Options(), "lancelot").lancelot is Lancelot.V1
