"""The host's /settings screen: the options shown with a button each, and what a press asks the
engine for. The roles ticked are the ones the engine says it will deal (the lobby's ``deals``,
Lancelot and the Assassin included): the screen never works out a role set of its own."""

from __future__ import annotations

from dataclasses import replace

from aiogram.filters.callback_data import CallbackData
from aiogram.utils.keyboard import InlineKeyboardBuilder

from avalon.shared.delivery.channel import Game
from avalon.shared.game import OPTIONAL_ROLES, FORUM_TIMERS, Lancelot, Options, Preset, Role, Timers
from avalon.shared.game import numbers
from avalon.shared.narration.render import glossary, sentence

from .speech import Speech

PRESETS = [Preset.CLASSIC, Preset.ONLINE, Preset.FORUM]
LANCELOTS = [Lancelot.NONE, Lancelot.V1, Lancelot.V2, Lancelot.V3]
#: Timer sets: a quick live game, the default, the forum's days.
SPEEDS = {
    "fast": Timers(proposal=120, vote=60, quest=60, excalibur=60, lady=60, assassination=180, last_word=60),
    "normal": Timers(),
    "forum": FORUM_TIMERS,
}
#: Steps each phase's timer cycles through (seconds): the engine's whole range, 30 s to 14 days.
STEPS = [numbers.MIN_TIMER, 60, 120, 300, 600, 1800, 3600, 6 * 3600, 24 * 3600, 48 * 3600, 7 * 86400,
         numbers.MAX_TIMER]
PHASE_TIMERS = ("proposal", "vote", "quest", "excalibur", "lady", "assassination", "last_word")
TOGGLES = {"lady": "lady", "excalibur": "excalibur", "anon": "anonymous_votes", "gmf": "good_may_fail",
           "lw": "last_word", "del": "assassin_may_delegate", "obk": "oberon_known_to_evil"}


class SetCb(CallbackData, prefix="s"):
    game: str
    key: str


def shown_options(game: Game) -> Options:
    return game.table.options or Options()


def roles_shown(options: Options, deals: tuple[Role, ...]) -> tuple[Role, ...]:
    """The optional roles ticked: those the engine says it will deal; where it can deal none at this
    count (too many roles chosen), the host's own choice as it stands."""
    if deals:
        return tuple(r for r in OPTIONAL_ROLES if r in deals)
    return tuple(options.roles or ())


def settings_text(speech: Speech, game: Game) -> str:
    return speech.template("_options.html", game, None, options=shown_options(game))


def settings_keyboard(speech: Speech, game: Game):
    g = glossary(speech.locale(None, game))
    words = g["options"]
    o = shown_options(game)
    key = game.table.game_id
    kb = InlineKeyboardBuilder()

    def flag(on: bool) -> str:
        return "✅" if on else "▫️"
    kb.button(text=f"⚙️ {words['preset']}: {g['presets'][o.preset.value]}", callback_data=SetCb(game=key, key="preset"))
    labels = {"lady": words["lady"], "excalibur": words["excalibur"], "anon": words["votes_anonymous"],
              "gmf": words["good_may_fail"], "lw": words["last_word"], "del": words["delegate"],
              "obk": words["oberon_known"]}
    for name, field in TOGGLES.items():
        kb.button(text=f"{flag(getattr(o, field))} {labels[name]}", callback_data=SetCb(game=key, key=name))
    lancelot = words["lancelot_none"] if o.lancelot is Lancelot.NONE else f"{words['lancelot_variant']} {o.lancelot.value}"
    kb.button(text=f"{words['lancelot']}: {lancelot}", callback_data=SetCb(game=key, key="lancelot"))
    ticked = roles_shown(o, game.table.deals)
    for role in OPTIONAL_ROLES:
        kb.button(text=f"{flag(role in ticked)} {g['roles'][role.value]}", callback_data=SetCb(game=key, key=f"r_{role.value}"))
    kb.button(text=f"⏳ {words['timers']}", callback_data=SetCb(game=key, key="speed"))
    for phase in PHASE_TIMERS:
        left = sentence(speech.locale(None, game), "{{ s|left }}").render(s=getattr(o.timers, phase))
        kb.button(text=f"⏳ {g['phases'][phase]}: {left}", callback_data=SetCb(game=key, key=f"t_{phase}"))
    kb.button(text=f"🌐 {g['language_name']}", callback_data=SetCb(game=key, key="lang"))
    kb.adjust(1)
    return kb.as_markup()


def _next(items: list, current):
    return items[(items.index(current) + 1) % len(items)] if current in items else items[0]


def changed(options: Options, key: str, deals: tuple[Role, ...] = ()) -> Options:
    """The options a press on button ``key`` asks for; ``deals``: what the engine says it deals now."""
    if key == "preset":
        preset = _next(PRESETS, options.preset)
        return replace(Options.preset_defaults(preset), lady=options.lady, excalibur=options.excalibur,
                       lancelot=options.lancelot, roles=options.roles)
    if key in TOGGLES:
        field = TOGGLES[key]
        return replace(options, **{field: not getattr(options, field)})
    if key == "lancelot":
        return replace(options, lancelot=_next(LANCELOTS, options.lancelot))
    if key.startswith("r_"):
        current = set(roles_shown(options, deals)) ^ {Role(key[2:])}
        return replace(options, roles=tuple(r for r in OPTIONAL_ROLES if r in current))
    if key.startswith("t_") and key[2:] in PHASE_TIMERS:
        phase = key[2:]
        now = getattr(options.timers, phase)
        step = next((s for s in STEPS if s > now), STEPS[0])
        return replace(options, timers=replace(options.timers, **{phase: step}))
    if key == "speed":
        current = next((name for name, t in SPEEDS.items() if t == options.timers), "normal")
        return replace(options, timers=SPEEDS[_next(list(SPEEDS), current)])
    return options
