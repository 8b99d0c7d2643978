"""/settings: the host changes the game's options with buttons, in the lobby."""

from __future__ import annotations

from dataclasses import replace

from aiogram import F, Router
from aiogram.filters import Command
from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from shared.game import Lancelot, Options, Preset, Role, Timers
from shared.game import numbers as tables
from shared.game.options import FORUM_TIMERS
from shared.narration.render import LOCALES, glossary, pick_locale

GROUPS = F.chat.type.in_({"group", "supergroup"})
PRESETS = [Preset.CLASSIC, Preset.ONLINE, Preset.FORUM]
LANCELOTS = [Lancelot.NONE, Lancelot.V1, Lancelot.V2, Lancelot.V3]
#: Timer sets: a quick live game, the default, the forum's days.
SPEEDS = {
    "fast": Timers(proposal=120, vote=60, quest=60, excalibur=60, lady=60, assassination=180, last_word=60),
    "normal": Timers(),
    "forum": FORUM_TIMERS,
}
#: Steps each phase's timer cycles through (seconds): the engine's whole range, 30 s to 14 days.
STEPS = [tables.MIN_TIMER, 60, 120, 300, 600, 1800, 3600, 6 * 3600, 24 * 3600, 48 * 3600, 7 * 86400,
         tables.MAX_TIMER]
PHASE_TIMERS = ("proposal", "vote", "quest", "excalibur", "lady", "assassination", "last_word")
OPTIONAL = [Role.PERCIVAL, Role.MORGANA, Role.MORDRED, Role.OBERON]
TOGGLES = {"lady": "lady", "excalibur": "excalibur", "anon": "anonymous_votes", "gmf": "good_may_fail",
           "lw": "last_word", "del": "assassin_may_delegate", "obk": "oberon_known_to_evil"}


class SetCb(CallbackData, prefix="s"):
    game: str
    key: str


def settings_text(gw, memo) -> str:
    return gw.template("_options.html", memo, None, options=memo.options or Options())


def settings_keyboard(gw, memo):
    words = glossary(pick_locale((memo.language,)))["options"]
    o = memo.options or Options()
    kb = InlineKeyboardBuilder()

    def flag(on: bool) -> str:
        return "✅" if on else "▫️"
    kb.button(text=f"⚙️ {words['preset']}: {glossary(pick_locale((memo.language,)))['presets'][o.preset.value]}",
              callback_data=SetCb(game=memo.game_id, key="preset"))
    labels = {"lady": words["lady"], "excalibur": words["excalibur"], "anon": words["votes_anonymous"],
              "gmf": words["good_may_fail"], "lw": words["last_word"], "del": words["delegate"],
              "obk": words["oberon_known"]}
    for key, field in TOGGLES.items():
        kb.button(text=f"{flag(getattr(o, field))} {labels[key]}", callback_data=SetCb(game=memo.game_id, key=key))
    lancelot = words["lancelot_none"] if o.lancelot is Lancelot.NONE else f"{words['lancelot_variant']} {o.lancelot.value}"
    kb.button(text=f"{words['lancelot']}: {lancelot}", callback_data=SetCb(game=memo.game_id, key="lancelot"))
    roles = o.roles if o.roles is not None else standard_roles(len(memo.players))
    role_names = glossary(pick_locale((memo.language,)))["roles"]
    for role in OPTIONAL:
        kb.button(text=f"{flag(role in roles)} {role_names[role.value]}",
                  callback_data=SetCb(game=memo.game_id, key=f"r_{role.value}"))
    kb.button(text=f"⏳ {words['timers']}", callback_data=SetCb(game=memo.game_id, key="speed"))
    phase_names = glossary(pick_locale((memo.language,)))["phases"]
    for phase in PHASE_TIMERS:
        kb.button(text=f"⏳ {phase_names[phase]}: {gw_left(gw, memo, getattr(o.timers, phase))}",
                  callback_data=SetCb(game=memo.game_id, key=f"t_{phase}"))
    kb.button(text=f"🌐 {glossary(pick_locale((memo.language,)))['language_name']}",
              callback_data=SetCb(game=memo.game_id, key="lang"))
    kb.adjust(1)
    return kb.as_markup()


def standard_roles(players: int) -> tuple[Role, ...]:
    """The standard set the engine deals when the host chose none (docs/rules.md section 2)."""
    n = min(max(players, 5), 12)
    return tuple(tables.STANDARD_GOOD) + tuple(tables.STANDARD_EVIL[n])


def gw_left(gw, memo, seconds: int) -> str:
    from shared.narration.render import sentence

    locale = pick_locale((memo.language,))
    return sentence(locale, "{{ s|left }}").render(s=seconds)


def _next(items: list, current):
    return items[(items.index(current) + 1) % len(items)] if current in items else items[0]


def changed(options: Options, key: str, players: int = 5) -> Options:
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
        role = Role(key[2:])
        current = set(options.roles if options.roles is not None else standard_roles(players))
        current ^= {role}
        return replace(options, roles=tuple(r for r in OPTIONAL if r in current))
    if key.startswith("t_") and key[2:] in PHASE_TIMERS:
        phase = key[2:]
        now = getattr(options.timers, phase)
        step = next((s for s in STEPS if s > now), STEPS[0])
        return replace(options, timers=replace(options.timers, **{phase: step}))
    if key == "speed":
        current = next((name for name, t in SPEEDS.items() if t == options.timers), "normal")
        return replace(options, timers=SPEEDS[_next(list(SPEEDS), current)])
    return options


async def show(message: Message, gw) -> None:
    player = gw.remember_user(message.from_user)
    memo = gw.memory.game_of_chat(message.chat.id)
    if memo is None or memo.phase != "lobby":
        await gw.answer(message, gw.ui(memo, player, "no_game"), reply=True)
        return
    sent = await gw.sender.send(memo.chat_id, settings_text(gw, memo), settings_keyboard(gw, memo))
    if sent is not None:
        gw.memory.settings_messages[memo.game_id] = sent.message_id


async def press(query: CallbackQuery, callback_data: SetCb, gw) -> None:
    player = gw.remember_user(query.from_user)
    memo = gw.memory.games.get(callback_data.game)
    if memo is None or memo.over or memo.phase != "lobby":
        await query.answer(gw.reason(player, memo, "stale_phase"), show_alert=True)
        return
    if player != memo.host:
        await query.answer(gw.reason(player, memo, "not_host"), show_alert=True)
        return
    if callback_data.key == "lang":
        memo.language = _next(list(LOCALES), memo.language)
        gw.memory.chat_languages[memo.chat_id] = memo.language
        await query.answer()
        await gw.sender.edit(memo.chat_id, query.message.message_id, settings_text(gw, memo),
                             settings_keyboard(gw, memo))
        return
    # built on the host's previous press before the engine confirms it, so two quick presses do not
    # undo each other; set before the command goes (presses run side by side), taken back if it fails
    before = memo.options_wanted
    options = memo.options_wanted = changed(before or memo.options or Options(), callback_data.key,
                                            len(memo.players))
    try:
        await gw.command(memo.game_id, player, {"type": "change_options", "options": options})
    except BaseException:
        if memo.options_wanted is options:
            memo.options_wanted = before
        raise
    await query.answer(gw.ui(memo, player, "sent"))


def build() -> Router:
    """A fresh router (a router belongs to one dispatcher)."""
    router = Router(name="settings")
    router.message.register(show, Command("settings"), GROUPS)
    router.callback_query.register(press, SetCb.filter())
    return router
