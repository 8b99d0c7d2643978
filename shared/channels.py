"""The channels as the engine sees them: a value the composition root (``services/app.py``) builds
from its registry and hands to the engine, which names no channel itself.

A player's id carries the scheme of the channel that minted it (``tg:123``, ``mail:ann@example.org``);
events go to the channels their readers are reachable on; a gateway's channel speaks only for that
channel's players. A channel's name is short and lower-case: it is a routing key's first word, a
broker user's suffix and an entry of a comma-separated column, so it holds no dot, comma or space.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

#: What a channel's name (and a player id's scheme) may look like.
CHANNEL_NAME = r"^[a-z][a-z0-9_]{0,31}$"
_NAME = re.compile(CHANNEL_NAME)


@dataclass(frozen=True)
class ChannelMap:
    """Which channel a player id's scheme names, which channels events may be routed to, and which of
    those are gateways that speak only for their own players."""

    schemes: Mapping[str, str] = field(default_factory=dict)  # scheme -> channel: "tg" -> "telegram"
    routed: frozenset[str] = frozenset()  # every channel events may be routed to
    gateways: frozenset[str] = frozenset()  # channels whose commands come from a gateway of their own

    def __post_init__(self) -> None:
        names = set(self.schemes) | set(self.schemes.values()) | self.routed | self.gateways
        bad = sorted(name for name in names if not _NAME.fullmatch(name))
        if bad:
            raise ValueError(f"not a channel name or scheme: {bad}")
        unrouted = (set(self.schemes.values()) | self.gateways) - self.routed
        if unrouted:
            raise ValueError(f"channels named but not routed: {sorted(unrouted)}")

    def channel_of(self, player: str) -> str | None:
        """The channel a player id was minted by: its scheme's (``tg:123`` is Telegram's), if any."""
        return self.schemes.get(player.split(":", 1)[0])

    def knows(self, channel: str) -> bool:
        return channel in self.routed
