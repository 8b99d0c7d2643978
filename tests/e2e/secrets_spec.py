"""What one random game of the security tests is: its players (name, channel, language), who hosts
it, and the options the host sets with the channel's own means (``/newgame PRESET`` and the
``/settings`` buttons on Telegram; ``new game PRESET`` and the words ``lady``/``excalibur`` by
mail). Drawn from a seed; every option set is one the engine accepts for that many players
(``cast_for``), computed with the gateway's own ``settings.changed`` so the test knows what the
buttons will make of it."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from avalon.services.engine.rules import Options, Preset, Rejection, cast_for
from avalon.services.telegram_gateway.settings_screen import changed
from avalon.shared.game import OPTIONAL_ROLES
from avalon.shared.narration.render import LOCALES

from .secrets_stack import DOMAIN

def dealt(options: Options, players: int) -> tuple:
    """What the engine says it will deal at this count (the lobby's ``deals``), as the screen ticks it."""
    cast = cast_for(options, players)
    return () if isinstance(cast, Rejection) else cast.roles


BASES = ["Ann", "Bors", "Cleo", "Dag", "Edda", "Finn", "Gus", "Hild", "Iwan", "Jora"]
PRESETS = [Preset.CLASSIC, Preset.ONLINE, Preset.FORUM]
FLAGS = ["lady", "excalibur", "anon", "gmf", "lw", "del", "obk"]


def suffix(index: int) -> str:
    """Two letters per game (aa, ab, ...): every name of the test is unique, and has no digit a
    mail reader could take for a seat number."""
    return "abcdefghijklmnopqrstuvwxyz"[index // 26 % 26] + "abcdefghijklmnopqrstuvwxyz"[index % 26]


@dataclass
class Seat:
    name: str
    channel: str  # telegram | email
    language: str
    tg_id: int = 0

    @property
    def address(self) -> str:
        return f"{self.name.lower()}@{DOMAIN}"

    @property
    def player(self) -> str:
        return f"tg:{self.tg_id}" if self.channel == "telegram" else f"mail:{self.address}"


@dataclass
class GameSpec:
    index: int
    seed: int
    preset: Preset
    seats: list[Seat]  # the host first
    keys: list[str] = field(default_factory=list)  # /settings buttons the host presses, in order
    mail_words: list[str] = field(default_factory=list)  # a mail host's option words
    options: Options = field(default_factory=Options)  # what the engine will hold at the start

    @property
    def host(self) -> Seat:
        return self.seats[0]

    @property
    def mail_only(self) -> bool:
        return self.host.channel == "email"

    @property
    def group_id(self) -> int:
        return -(200_000 + self.index)

    def describe(self) -> str:
        o = self.options
        roles = "standard" if o.roles is None else "+".join(r.value for r in o.roles) or "none"
        flags = [k for k, on in (("lady", o.lady), ("excalibur", o.excalibur), ("anonymous", o.anonymous_votes),
                                 ("good_may_fail", o.good_may_fail), ("last_word", o.last_word),
                                 ("delegate", o.assassin_may_delegate), ("oberon_known", o.oberon_known_to_evil))
                 if on]
        channels = "".join("T" if s.channel == "telegram" else "M" for s in self.seats)
        return (f"game {self.index} seed {self.seed}: {len(self.seats)} players {channels}, {o.preset.value}, "
                f"roles {roles}, lancelot {o.lancelot.value}, {' '.join(flags) or 'no extras'}")


def draw(index: int, seed: int) -> GameSpec:
    """Game ``index``: the preset (``index % 3``) and the Lancelot variant (``index % 4``) go round, so
    any eight games in a row see every preset and every variant; the rest is drawn from ``seed``.
    Every fifth game is played by mail alone (no Lancelot: a mail host sets only Lady and Excalibur)."""
    rng = random.Random(seed)
    n = rng.randint(5, 10)
    mail_only = index % 5 == 4
    names = [base + suffix(index) for base in rng.sample(BASES, n)]
    seats = []
    for i, name in enumerate(names):
        channel = "email" if mail_only or (i > 0 and rng.random() < 0.4) else "telegram"
        seats.append(Seat(name, channel, rng.choice(LOCALES), tg_id=100_000 + index * 100 + i))
    if not mail_only and all(s.channel == "telegram" for s in seats):
        seats[-1].channel = "email"  # both channels at the table
    preset = PRESETS[index % 3]
    spec = GameSpec(index, seed, preset, seats)
    if mail_only:
        spec.mail_words = [w for w in ("lady", "excalibur") if rng.random() < 0.5]
        spec.options = Options.preset_defaults(preset, **{w: True for w in spec.mail_words})
        return spec
    while True:
        keys = ["lancelot"] * (index % 4)
        keys += [k for k in FLAGS if rng.random() < 0.4]
        if rng.random() < 0.5:
            keys += [f"r_{r.value}" for r in rng.sample(OPTIONAL_ROLES, rng.randint(1, 2))]
        keys += ["lang"] * rng.choice([0, 0, 1, 2, 3, 4, 5])
        rng.shuffle(keys)
        options = Options.preset_defaults(preset)
        for key in keys:
            if key != "lang":
                options = changed(options, key, dealt(options, n))
        if not isinstance(cast_for(options, n), Rejection):
            spec.keys, spec.options = keys, options
            return spec
