"""Where events go: who reads each event, the channel a player id was minted by, and each actor's
choices."""

from __future__ import annotations

from shared.channels import ChannelMap
from shared.protocol import Choice, ChoicesOffered, Person
from services.engine.rules import AudienceKind, CommandKind, legal_commands
from shared.game import events as core_events

def choices_for(state, player: str) -> ChoicesOffered:
    legal = [c for c in legal_commands(state, player) if c.kind is not CommandKind.CANCEL_GAME]
    return ChoicesOffered(player=player, phase=state.phase, phase_id=state.phase_id, choices=tuple(
        Choice(kind=c.kind, targets=c.targets, count=c.count, cards=c.cards, excalibur=c.excalibur,
               optional=c.optional) for c in legal))


#: The events that change who is at the table: they name every reader (``EventEnvelope.people``).
SEATING_EVENTS = (core_events.LobbyOpened, core_events.PlayerJoined, core_events.PlayerLeft,
                  core_events.GameStarted)
#: The commands that may cause them: the engine looks their readers up before deciding a batch.
SEATING_COMMANDS = frozenset({"create_game", "join", "leave", "start_game"})
NOBODY_KNOWN = Person()


def readers_of(event: core_events.Event, players: tuple[str, ...]) -> tuple[str, ...]:
    """Who reads one of a game's events: a private event's audience; for a public one, ``players``
    (the game's players once the command is applied: a command changes who is at the table at
    most once, with its last event but lobby_opened), plus the one who left for player_left and
    the host alone for lobby_opened. Records (audience nobody) have no reader."""
    audience = event.audience
    if audience.kind is AudienceKind.PLAYERS:
        return audience.players
    if audience.kind is AudienceKind.NOBODY:
        return ()
    if isinstance(event, core_events.PlayerLeft) and event.player not in players:
        return players + (event.player,)
    if isinstance(event, core_events.LobbyOpened):
        return (event.host,)
    return players


def person_of(row) -> Person:
    """A players-table row as the protocol names it (no row: nothing known)."""
    if row is None:
        return NOBODY_KNOWN
    return Person(display_name=row.display_name, language=row.language, time_zone=row.time_zone)


def channels_of(channels: ChannelMap, player: str) -> set[str]:
    """The channel a player id was minted by (``tg:123`` is Telegram's, in production), as a set."""
    channel = channels.channel_of(player)
    return {channel} if channel else set()
