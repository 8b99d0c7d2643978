"""The host's /settings buttons turn into the options the engine will check. The roles ticked are the
ones the engine says it deals (the lobby's ``deals``), never a set the screen works out itself."""

from __future__ import annotations

from avalon.services.engine.rules import Lancelot, Options, Preset, Role, cast_for, check_options
from avalon.services.telegram_gateway.settings_screen import changed, roles_shown


def dealt(options: Options, players: int) -> tuple[Role, ...]:
    return cast_for(options, players).roles


def test_a_role_button_starts_from_the_roles_the_engine_deals_and_toggles_that_role():
    seven = changed(Options(), "r_oberon", dealt(Options(), 7))
    assert seven.roles == (Role.PERCIVAL, Role.MORGANA, Role.MORDRED, Role.OBERON)
    assert changed(seven, "r_percival", dealt(seven, 7)).roles == (Role.MORGANA, Role.MORDRED, Role.OBERON)


def test_with_lancelot_at_five_the_screen_ticks_what_is_dealt_and_unticking_percival_keeps_the_assassin():
    # docs/rules.md section 2 and 6: five players with Lancelot are dealt Merlin, Percival, the good
    # Lancelot, the Assassin and the evil Lancelot; Morgana has no seat
    options = Options(lancelot=Lancelot.V1)
    deals = dealt(options, 5)
    assert sorted(deals) == sorted((Role.MERLIN, Role.PERCIVAL, Role.GOOD_LANCELOT, Role.ASSASSIN,
                                    Role.EVIL_LANCELOT))
    assert roles_shown(options, deals) == (Role.PERCIVAL,), "Morgana is not ticked: she would not be dealt"
    without_percival = changed(options, "r_percival", deals)
    assert without_percival.roles == ()
    cast = cast_for(without_percival, 5)
    assert Role.ASSASSIN in cast.roles and Role.MORGANA not in cast.roles
    assert cast.shooter_role is Role.ASSASSIN


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
