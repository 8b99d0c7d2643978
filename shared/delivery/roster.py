"""Who reads an event on a channel, in which language and time zone, and how every player is
named: the roster a channel keeps from the envelopes themselves (``readers`` and ``people``,
docs/protocol.md), whatever channel each player sits on."""

from __future__ import annotations

from dataclasses import dataclass, field

from avalon.shared.protocol import EventEnvelope, Person


@dataclass(frozen=True)
class Reader:
    """One recipient of an event on a channel: a player (``player``), or the channel's group for
    the game (``player`` None, on a channel that has one)."""

    player: str | None
    languages: tuple[str, ...] = ("en",)
    time_zone: str | None = None


@dataclass
class Roster:
    """People of every game this channel has seen; ``mine(player)`` says which sit on it."""

    prefix: str  # the channel's player ids start with it: "tg:", "mail:", "test:"
    has_group: bool = False
    people: dict[str, Person] = field(default_factory=dict)

    def learn(self, envelope: EventEnvelope) -> None:
        for player, person in envelope.people.items():
            known = self.people.get(player)
            if known is None:
                self.people[player] = person
            else:  # a field the engine does not know (None) keeps what we knew
                self.people[player] = Person(
                    display_name=person.display_name or known.display_name,
                    language=person.language or known.language,
                    time_zone=person.time_zone or known.time_zone)

    def mine(self, player: str) -> bool:
        return player.startswith(self.prefix)

    def names(self) -> dict[str, str]:
        """Every player's display name, for the narration; a player never named stays their id."""
        return {player: p.display_name for player, p in self.people.items() if p.display_name}

    def reader(self, player: str, fallback: tuple[str, ...] = ("en",)) -> Reader:
        person = self.people.get(player)
        languages = ((person.language,) if person and person.language else ()) + fallback
        return Reader(player, languages, person.time_zone if person else None)

    def recipients(self, envelope: EventEnvelope, group_languages: tuple[str, ...] = ("en",)) -> list[Reader]:
        """Who on this channel reads ``envelope``: a public event, every reader of it who sits on this
        channel, and the group where the channel has one; a private one, its players on this channel."""
        self.learn(envelope)
        public = envelope.audience.kind.value == "public"
        readers = envelope.readers or envelope.audience.players
        out = [Reader(None, group_languages)] if public and self.has_group else []
        if public and self.has_group:
            return out  # the group is where this channel's players read public events
        return out + [self.reader(p, group_languages) for p in readers if self.mine(p)]
