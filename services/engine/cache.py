"""What the engine keeps in memory between batches: the games it played lately, and the command ids
it committed lately. Both are bounded; what falls out is read from the database again."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from .store import LoadedGame, Store


class GameCache:
    """The games played lately, newest last (least recently used first out). A game's entry is its
    state as decided so far, committed or staged in the batch being decided."""

    def __init__(self, store: Store, size: int) -> None:
        self.store = store
        self.size = size
        self._games: OrderedDict[str, LoadedGame] = OrderedDict()

    def __contains__(self, game_id: str) -> bool:
        return game_id in self._games

    def peek(self, game_id: str) -> LoadedGame | None:
        """The cached game, if any, without touching its place in the order."""
        return self._games.get(game_id)

    async def preload(self, game_ids: set[str]) -> set[str]:
        """One query for the games among these not in memory; returns those that do not exist (so
        the batch does not look for them again)."""
        uncached = game_ids - self._games.keys()
        if not uncached:
            return set()
        for game_id, loaded in (await self.store.load_many(uncached)).items():
            self.remember(game_id, loaded)
        return uncached - self._games.keys()

    async def load(self, game_id: str, absent: set[str]) -> LoadedGame | None:
        """A game from memory, or else from the database (None if it does not exist: known ``absent``
        already, or not found)."""
        loaded = self._games.get(game_id)
        if loaded is not None:
            self._games.move_to_end(game_id)
            return loaded
        if game_id in absent:
            return None
        loaded = await self.store.load(game_id)
        if loaded is not None:
            self.remember(game_id, loaded)
        return loaded

    def remember(self, game_id: str, loaded: LoadedGame) -> None:
        self._games[game_id] = loaded
        self._games.move_to_end(game_id)
        while len(self._games) > self.size:
            self._games.popitem(last=False)

    def ids(self) -> list[str]:
        return list(self._games)

    def forget(self, game_ids: Iterable[str]) -> None:
        """Drop these games (their staged states were never committed): read again when next needed."""
        for game_id in game_ids:
            self._games.pop(game_id, None)


class RecentCommands:
    """The command ids committed lately, in two generations: a redelivery of one is dropped without
    asking the database. The older generation is dropped once the newer one is full."""

    def __init__(self, generation: int = 50_000) -> None:
        self.generation = generation
        self._recent: set[str] = set()
        self._old: set[str] = set()

    def __contains__(self, message_id: str) -> bool:
        return message_id in self._recent or message_id in self._old

    def add(self, message_ids: Iterable[str]) -> None:
        self._recent.update(message_ids)
        if len(self._recent) > self.generation:
            self._old, self._recent = self._recent, set()
