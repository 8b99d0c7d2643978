"""What a channel is to the delivery core: the small interface a channel implements (Telegram,
email, the demo's console; a Discord or Matrix channel would be one more), and what it inherits.

A channel says four things: its **address scheme** (its players' ids are ``<scheme>:<address>``:
``tg:123``, ``mail:ann@example.org``); how it **reads** a person's message into a command (its
own inbound side: an aiogram router, an IMAP watcher; commands go out through ``Commands``); how
it **renders** an event for each of its readers (``draw``: the messages it asks to send, each in
its reader's language); and how it **sends** (``deliver``: one message over its wire) and what a failure means
(raise ``Undeliverable`` for a message that can never go, ``Unavailable`` while its server is down).

Everything else comes from the core (``pipeline.Pipeline``): an event handled once, the
``prev_seq`` chain, the table's state (``table.Table``, folded for every channel alike), who
reads each event (``roster.Roster``), the durable outbox, retries and dead letters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from avalon.shared.protocol import EventEnvelope

from .outbox import Outgoing, Row, Unavailable, Undeliverable  # noqa: F401 - part of the interface
from .roster import Reader
from .table import Table


#: Events a table follows as a tally (a vote, a card played), not as a message of their own: a group
#: channel edits its tally in place, mail and the console say nothing of them.
TALLIES = frozenset({"player_voted", "player_played_card"})
#: The choices a group makes with its group's buttons (the leader's picker, the vote), not in private.
GROUP_CHOICES = frozenset({"propose_team", "cast_vote"})


@dataclass
class Game:
    """One game as a channel keeps it: the table every channel folds alike, and the channel's own part
    (the messages it edits in place, the receipts it owes...), kept and committed together."""

    table: Table
    own: Any = None


class Channel(Protocol):
    #: the channel's name on the bus (events are routed to ``<name>.#``) and in the outbox
    name: str
    #: its players' ids start with ``<scheme>:``
    scheme: str
    #: public events go to the game's group (one message for everyone there), not to each player
    has_group: bool

    def own_part(self, game_id: str) -> Any:
        """The channel's own part of a game it has not seen before; ``None`` when the game is not one
        this channel serves (its events are then left alone)."""

    def group_languages(self, game: Game) -> tuple[str, ...]:
        """The languages a reader falls back to in this game (a group's language, the host's)."""

    def draw(self, game: Game, envelope: EventEnvelope, readers: list[Reader]) -> list[Outgoing]:
        """The messages one event brings its readers on this channel (none: nothing to say), each
        rendered in its reader's language. No I/O: it may change the game's own part, never the
        table (the core folded the event in already)."""

    async def deliver(self, row: Row, slot_ref: str | None) -> str | None:
        """Send one message over the wire; returns the sent message's reference for a slot (or None)."""

    async def on_dead(self, row: Row, error: str) -> None:
        """A message given up on: tell whoever should know (the group, the host)."""

    async def on_lost(self, game: Game, envelope: EventEnvelope, error: Exception) -> None:
        """An event that could not be rendered at all (recorded dead): tell the table its story has a gap."""
