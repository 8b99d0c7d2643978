"""The one delivery pipeline every channel stands on. For each event the bus brings a channel:

1. not a game this channel serves (``Channel.own_part`` says None): left alone;
2. handled before (the bus says it may be a redelivery, and the outbox has its mark): dropped;
3. the ``prev_seq`` chain checked: a lost event is said in the log;
4. the table folds it in (``table.fold``: one fold for every channel), the roster learns the people
   it names, and the channel draws its messages for the event's readers on it (``Channel.draw``);
5. the messages, the mark that the event is handled and the game are committed together
   (``GameBook.stage``); only then does the bus get its acknowledgement, and the outbox sends.

An event that cannot be drawn goes back to the bus to be tried again (the game as it was before),
and after ``RENDER_ATTEMPTS`` it is recorded dead (logged, counted) and the channel tells the table
(``Channel.on_lost``); the game goes on."""

from __future__ import annotations

import logging

from avalon.shared.bus.base import EVENT_REDELIVERED
from avalon.shared.protocol import EventEnvelope

from .chain import check_chain
from .channel import Channel, Game
from .games import GameBook
from .roster import Reader, Roster
from .table import fold

log = logging.getLogger(__name__)

#: Tries at drawing one event before it is given up as dead (the bus would try a few more).
RENDER_ATTEMPTS = 3


class Pipeline:
    def __init__(self, channel: Channel, book: GameBook, roster: Roster) -> None:
        self.channel = channel
        self.book = book
        self.roster = roster
        self._failures: dict[str, int] = {}  # event id -> tries at drawing it so far

    @property
    def outbox(self):
        return self.book.outbox

    async def on_event(self, envelope: EventEnvelope) -> None:
        game = self.book.get_or_new(envelope.game_id)
        if game is None:
            return
        self.roster.learn(envelope)
        if EVENT_REDELIVERED.get() and await self.outbox.handled(envelope.message_id):
            return  # delivered again: its messages are in the outbox already
        check_chain(envelope, self.channel.name, game.table.seen_seq)
        try:
            fold(game.table, envelope)
            out = self.channel.draw(game, envelope, self.readers(game, envelope))
        except Exception as error:  # noqa: BLE001 - tried again by the bus, then given up visibly
            self.book.restore(envelope.game_id)  # as if this event had not come
            if not self._give_up(envelope, error):
                raise
            await self._dead(envelope, error)
            return
        await self.book.stage(envelope.message_id, game, out)
        self._failures.pop(envelope.message_id, None)

    def readers(self, game: Game, envelope: EventEnvelope) -> list[Reader]:
        """Who on this channel reads the event: its group, or each of its readers sitting on it."""
        return self.roster.recipients(envelope, self.channel.group_languages(game))

    def _give_up(self, envelope: EventEnvelope, error: Exception) -> bool:
        tries = self._failures[envelope.message_id] = self._failures.get(envelope.message_id, 0) + 1
        log.warning("%s: could not draw %s (%s, attempt %d of %d): %s", self.channel.name, envelope.message_id,
                    envelope.event.type, tries, RENDER_ATTEMPTS, error)
        if tries < RENDER_ATTEMPTS:
            return False
        del self._failures[envelope.message_id]
        return True

    async def _dead(self, envelope: EventEnvelope, error: Exception) -> None:
        """An event that cannot be drawn: recorded dead (logged, counted) in place of its messages."""
        readers = envelope.readers or envelope.audience.players
        mine = ",".join(r for r in readers if self.roster.mine(r))
        where = "group" if envelope.audience.kind.value == "public" and self.channel.has_group else mine or "-"
        await self.outbox.record_dead(envelope.message_id, envelope.game_id, where,
                                      f"could not render {envelope.event.type}: {type(error).__name__}: {error}")
        game = self.book.get_or_new(envelope.game_id)
        if game is not None:
            await self.channel.on_lost(game, envelope, error)
