"""People: what the players table says of each player (name, language, time zone), for the events
that name every reader (``EventEnvelope.people``).

Looked up once per batch for the players of its games that may change who is at the table (one
query), and kept up to date by this engine's own ``update_profile``.
"""

from __future__ import annotations

from collections.abc import Iterable

from avalon.shared.protocol import CommandEnvelope, Person

from .cache import GameCache
from .store import Store

#: The commands that may change who is at the table: their readers are looked up before a batch.
SEATING_COMMANDS = frozenset({"create_game", "join", "leave", "start_game"})
#: Bounded: a long-running engine sees many players.
MAX_KNOWN = 100_000
NOBODY_KNOWN = Person()


def person_of(row) -> Person:
    """A players-table row as the protocol names it (no row: nothing known)."""
    if row is None:
        return NOBODY_KNOWN
    return Person(display_name=row.display_name, language=row.language, time_zone=row.time_zone)


class People:
    def __init__(self, store: Store, games: GameCache) -> None:
        self.store = store
        self.games = games
        self._known: dict[str, Person] = {}

    async def look_up(self, commands: Iterable[CommandEnvelope]) -> None:
        """One query for the people a batch's seating commands may name that are not known yet."""
        wanted: set[str] = set()
        for env in commands:
            if env.command.type in SEATING_COMMANDS:
                wanted.add(env.actor)
                loaded = self.games.peek(env.game_id)
                if loaded is not None:
                    wanted.update(loaded.state.players)
        if not wanted:
            return
        if len(self._known) > MAX_KNOWN:
            self._known.clear()
        missing = wanted - self._known.keys()
        if missing:
            await self._learn(missing)

    async def of(self, readers: tuple[str, ...]) -> dict[str, Person]:
        """What the engine knows of each reader (looked up for the batch already, but for the rare one
        that was not)."""
        known = self._known
        missing = [p for p in readers if p not in known]
        if missing:
            await self._learn(missing)
        return {p: known[p] for p in readers}

    def remember(self, player: str, person: Person) -> None:
        """What a profile update of this engine's said: named so in this and later batches' events."""
        self._known[player] = person

    async def _learn(self, players) -> None:
        rows = await self.store.players(list(players))
        for player in players:
            self._known[player] = person_of(rows.get(player))
