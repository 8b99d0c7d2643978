"""Where events go: who reads each event, the channels it is sent to, and each actor's choices.

An event goes to the channels its readers are reachable on: the channel that minted a reader's id
(its scheme, from the composition root's ``ChannelMap``) and those a profile gave an address for; a
public event also goes to the channel its game was created from. A game's event names, for each
channel, the previous event of the game sent there (``EventEnvelope.prev_seq``).
"""

from __future__ import annotations

from avalon.shared.channels import ChannelMap
from avalon.shared.protocol import INTERNAL_EVENTS, Choice, ChoicesOffered
from avalon.services.engine.rules import AudienceKind, CommandKind, legal_commands
from avalon.shared.game import events as core_events

#: The events that change who is at the table: they name every reader (``EventEnvelope.people``).
SEATING_EVENTS = (core_events.LobbyOpened, core_events.PlayerJoined, core_events.PlayerLeft,
                  core_events.GameStarted, core_events.SeatTaken, core_events.SpectatorJoined,
                  core_events.SpectatorLeft, core_events.HostChanged)
#: Bounded: a route per origin and set of readers.
MAX_ROUTES = 100_000


def choices_for(state, player: str) -> ChoicesOffered:
    legal = [c for c in legal_commands(state, player) if c.kind is not CommandKind.CANCEL_GAME]
    return ChoicesOffered(player=player, phase=state.phase, phase_id=state.phase_id, choices=tuple(
        Choice(kind=c.kind, targets=c.targets, count=c.count, cards=c.cards, excalibur=c.excalibur,
               optional=c.optional) for c in legal))


def readers_of(event: core_events.Event, players: tuple[str, ...]) -> tuple[str, ...]:
    """Who reads one of a game's events: a private event's audience; for a public one, ``players``
    (the game's players and spectators once the command is applied: a command changes who is at the
    table at most once, with its last event but lobby_opened), plus the one who left for player_left,
    the one replaced for seat_taken, the one who stopped watching for spectator_left, and the host
    alone for lobby_opened. Records (audience nobody) have no reader."""
    audience = event.audience
    if audience.kind is AudienceKind.PLAYERS:
        return audience.players
    if audience.kind is AudienceKind.NOBODY:
        return ()
    kind = type(event)
    if kind is core_events.PlayerLeft and event.player not in players:
        return players + (event.player,)
    if kind is core_events.SeatTaken and event.previous not in players:
        return players + (event.previous,)
    if kind is core_events.SpectatorLeft and event.spectator not in players:
        return players + (event.spectator,)
    if kind is core_events.LobbyOpened:
        return (event.host,)
    return players


class Router:
    """The channels of each event, from the channel map and the addresses people gave."""

    def __init__(self, channels: ChannelMap) -> None:
        self.channels = channels
        self._reachable: dict[str, frozenset[str]] = {}  # player -> channels a profile gave an address for
        self._routes: dict[tuple, tuple[str, ...]] = {}  # (origin, readers) -> channels; cleared by a profile

    def of_event(self, event_type: str, audience: AudienceKind, readers: tuple[str, ...],
                 origin: str) -> tuple[str, ...]:
        """The channels of a game's event: those of its readers (and a public event's game's origin)."""
        if event_type in INTERNAL_EVENTS or audience is AudienceKind.NOBODY:
            return ()
        key = (origin if audience is AudienceKind.PUBLIC else None, readers)
        channels = self._routes.get(key)
        if channels is None:
            found = {key[0]} if key[0] else set()
            for person in readers:
                found |= self._of_player(person) | self._reachable.get(person, frozenset())
            channels = tuple(sorted(found & self.channels.routed))
            if len(self._routes) > MAX_ROUTES:
                self._routes.clear()
            self._routes[key] = channels
        return channels

    def to(self, *players: str, via: str | None = None) -> tuple[str, ...]:
        """The channels of a reply outside a game's stream: the channels that minted ``players``' ids,
        and the channel the command came on (``via``)."""
        found = {via} if via else set()
        for player in players:
            found |= self._of_player(player)
        return tuple(sorted(found & self.channels.routed))

    def reach(self, player: str, channels) -> tuple[str, ...]:
        """``player`` can be reached on these channels too (their profile gives an address there), from
        now on; returns the channels of an event to them alone."""
        self._reachable[player] = frozenset(channels)
        self._routes.clear()
        return tuple(sorted((self._of_player(player) | self._reachable[player]) & self.channels.routed))

    @staticmethod
    def chain(seq: int, channels: tuple[str, ...], sent: dict[str, int]) -> dict[str, int]:
        """An event's ``prev_seq``: for each of its channels the seq of the game's previous event sent
        there (``sent``: channel -> last seq, which now says this one)."""
        prev = {channel: sent.get(channel, 0) for channel in channels}
        for channel in channels:
            sent[channel] = seq
        return prev

    def _of_player(self, player: str) -> set[str]:
        channel = self.channels.channel_of(player)
        return {channel} if channel else set()
