"""Where events go: the channel a player id was minted by, and each actor's choices."""

from __future__ import annotations

from shared.protocol import Choice, ChoicesOffered
from services.engine.rules import CommandKind, legal_commands

CHANNEL_PREFIXES = {"tg": "telegram", "mail": "email", "test": "test"}


def choices_for(state, player: str) -> ChoicesOffered:
    legal = [c for c in legal_commands(state, player) if c.kind is not CommandKind.CANCEL_GAME]
    return ChoicesOffered(player=player, phase=state.phase, phase_id=state.phase_id, choices=tuple(
        Choice(kind=c.kind, targets=c.targets, count=c.count, cards=c.cards, excalibur=c.excalibur,
               optional=c.optional) for c in legal))


def channels_of(player: str) -> set[str]:
    """The channel a player id was minted by: ``tg:123`` is Telegram, ``mail:a@b`` email."""
    prefix = player.split(":", 1)[0]
    channel = CHANNEL_PREFIXES.get(prefix)
    return {channel} if channel else set()


#: Channels a gateway may subscribe to (the test channel for test subscribers).
ROUTED = {"telegram", "email", "test", "cli"}
