"""Each game as a channel keeps it (``channel.Game``: the table and the channel's own part), in
memory and in the project's database: committed with the messages an event asks for (``stage``,
in the outbox's transaction) or on its own after a person's message changed it (``save``).
What could not be drawn, or was drawn before, goes back to what was last committed (``restore``),
so a failed or repeated event leaves no trace."""

from __future__ import annotations

import asyncio
import logging
import pickle
from typing import Callable

from avalon.shared import snapshots

from .channel import Game
from .outbox import Outbox, Outgoing
from .table import Table

log = logging.getLogger(__name__)


class GameBook:
    def __init__(self, outbox: Outbox, own_part: Callable[[str], object], *,
                 upgrade: Callable[[bytes], Game | None] | None = None) -> None:
        self.outbox = outbox
        self.own_part = own_part  # the channel's: its part of a new game, None for a game not its own
        self.upgrade = upgrade  # the channel's: a row kept by an earlier version, read into a Game
        self.games: dict[str, Game] = {}
        self._committed: dict[str, bytes] = {}  # each game as last committed: what restore() goes back to
        self._writing: dict[str, asyncio.Lock] = {}  # a game is written by one task at a time

    async def load(self) -> None:
        """Every game as last committed (the least recently changed first)."""
        for game_id, (blob, _at) in (await self.outbox.games()).items():
            try:
                game = self._read(blob)
            except Exception:  # noqa: BLE001 - an unreadable row: the game is rebuilt from its next events
                log.exception("%s: the saved memory of game %s could not be read", self.outbox.channel, game_id)
                continue
            self.games[game_id] = game
            self._committed[game_id] = self.blob(game)

    def _read(self, blob: bytes) -> Game:
        try:
            table, own = snapshots.loads(blob)
        except Exception:  # noqa: BLE001 - perhaps a row of an earlier version
            game = self.upgrade(blob) if self.upgrade is not None else None
            if game is None:
                raise
            return game
        if not isinstance(table, Table):
            raise TypeError(f"not a table: {type(table).__name__}")
        return Game(table, own)

    def get(self, game_id: str) -> Game | None:
        return self.games.get(game_id)

    def get_or_new(self, game_id: str) -> Game | None:
        """The game, met for the first time or not; None when the channel does not serve it."""
        game = self.games.get(game_id)
        if game is None:
            own = self.own_part(game_id)
            if own is None:
                return None
            game = self.games[game_id] = Game(Table(game_id), own)
        return game

    def values(self):
        return self.games.values()

    @staticmethod
    def blob(game: Game) -> bytes:
        return pickle.dumps((game.table, game.own), protocol=pickle.HIGHEST_PROTOCOL)

    async def stage(self, event_id: str, game: Game, messages: list[Outgoing]) -> bool:
        """The event's messages, the mark that it is handled and the game, committed together. False
        (and the game as it was) when the event was handled before: a redelivery."""
        game_id = game.table.game_id
        async with self._writing.setdefault(game_id, asyncio.Lock()):
            blob = self.blob(game)
            if await self.outbox.stage(event_id, game_id, messages, blob):
                self._committed[game_id] = blob
                return True
        self.restore(game_id)
        return False

    async def save(self, game: Game) -> None:
        """The game changed by a person's message (a pick), not by an event: committed if it changed."""
        game_id = game.table.game_id
        async with self._writing.setdefault(game_id, asyncio.Lock()):
            blob = self.blob(game)
            if blob != self._committed.get(game_id):
                await self.outbox.save_game(game_id, blob)
                self._committed[game_id] = blob

    def restore(self, game_id: str) -> None:
        """The game as last committed (never committed: forgotten, rebuilt from its events)."""
        blob = self._committed.get(game_id)
        if blob is None:
            self.games.pop(game_id, None)
        else:
            self.games[game_id] = Game(*snapshots.loads(blob))
