"""What every event is: its audience (public, some players, nobody) and the base class. ``events`` and
``table_events`` define the events themselves on it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class AudienceKind(str, Enum):
    PUBLIC = "public"
    PLAYERS = "players"
    NOBODY = "nobody"


@dataclass(frozen=True, slots=True)
class Audience:
    kind: AudienceKind
    players: tuple[str, ...] = ()

    @staticmethod
    def to(*players: str) -> "Audience":
        if len(players) == 1:
            found = _ONE.get(players[0])
            if found is None:
                found = _ONE[players[0]] = Audience(AudienceKind.PLAYERS, players)
                if len(_ONE) > 100_000:  # bounded: a long-running engine sees many players
                    _ONE.clear()
            return found
        return Audience(AudienceKind.PLAYERS, tuple(players))

    def includes(self, player: str | None) -> bool:
        if self.kind is AudienceKind.PUBLIC:
            return True
        return player is not None and player in self.players


_ONE: dict[str, Audience] = {}
PUBLIC = Audience(AudienceKind.PUBLIC)
NOBODY = Audience(AudienceKind.NOBODY)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    audience: Audience = PUBLIC
