"""The registry of channels: one line per channel, the only place that names them all.

A channel is its own package (``services/<channel>_gateway``) on the delivery core's interface
(``shared/delivery/channel.py``), plus one line here: its name (the bus's routing key and its broker
user's suffix), its players' id scheme, the setting that turns it on and how a host sets it, and
the runner that starts it (imported only when the channel runs: aiogram takes seconds to load).
From this list the composition root (``services/app.py``) starts the configured channels and tells
the engine the map of schemes, ``avalon`` gets a command per channel, and ``avalon broker-users`` a
user per gateway. The demo's console channel is not here: only ``avalon demo`` runs it."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from avalon.shared.channels import ChannelMap


@dataclass(frozen=True)
class ChannelSpec:
    name: str
    scheme: str  # the channel's player ids start with it and a colon: ``tg:123``
    title: str  # how a host calls it
    configured_by: str  # the setting that turns it on
    how: str  # one line: how a host adds it
    runner: str  # "module:Class" of its runner: Class(settings, bus, on_fatal=...) with start() and stop()
    #: the beginnings of the names of the settings it reads (`avalon <name> --help` lists them; compose
    #: passes them to its service)
    settings: tuple[str, ...] = ()
    #: "module:function" giving what is wrong with its settings (a list of lines) before anything starts
    check: str | None = None

    def load_runner(self):
        return _load(self.runner)

    def problems(self, settings) -> list[str]:
        return [] if self.check is None else list(_load(self.check)(settings))

    def check_settings(self, settings) -> None:
        """A ``BadSetting`` naming every problem of its settings, if any."""
        from avalon.shared.runtime import BadSetting

        if problems := self.problems(settings):
            raise BadSetting(problems)


CHANNELS = (
    ChannelSpec("telegram", "tg", "Telegram", "telegram_bot_token",
                "set TELEGRAM_BOT_TOKEN (a bot made with @BotFather) to play in Telegram groups",
                "avalon.services.telegram_gateway.main:TelegramRunner", settings=("telegram_", "throttle_"),
                check="avalon.services.telegram_gateway.checks:problems"),
    ChannelSpec("email", "mail", "email", "email_address",
                "set EMAIL_ADDRESS, EMAIL_SECRET and the SMTP_* and IMAP_* settings to play by email",
                "avalon.services.email_gateway.main:EmailRunner", settings=("email_", "smtp_", "imap_", "throttle_"),
                check="avalon.services.email_gateway.main:problems"),
)

#: Channels without a gateway here that the engine routes events to all the same (channel -> its
#: players' scheme): ``test``, whose scripted players (``test:...``) the benchmarks, the fault suite and
#: a stack's smoke test play, and ``cli``, which mints no player ids.
UNGATED_CHANNELS: dict[str, str | None] = {"test": "test", "cli": None}


def spec(name: str) -> ChannelSpec:
    return next(c for c in CHANNELS if c.name == name)


def channel_map() -> ChannelMap:
    """The channels as the engine knows them, from this registry: each one's scheme, where events may
    go, and which are gateways that speak only for their own players."""
    gateways = {c.name: c.scheme for c in CHANNELS}
    schemes = {scheme: name for name, scheme in {**gateways, **UNGATED_CHANNELS}.items() if scheme}
    return ChannelMap(schemes=schemes, routed=frozenset(gateways) | frozenset(UNGATED_CHANNELS),
                      gateways=frozenset(gateways))


def configured_channels(settings) -> list[str]:
    return [c.name for c in CHANNELS if getattr(settings, c.configured_by)]


def _load(path: str):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)
