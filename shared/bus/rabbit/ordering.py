"""The order a subscription's events are handed to its handler in: one at a time in arrival order
(``OneLock``), or, for a ``by_game`` subscription, each game's one at a time in arrival order and
different games' side by side (``GameLocks``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque


class OneLock:
    """Every event of a subscription one at a time, in arrival order (asyncio's locks are fair)."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def held(self, games):
        async with self._lock:
            yield


class GameLocks(OneLock):
    """Each game's events one at a time, in arrival order; different games' side by side. A message
    carrying several games' events takes its turn in each of their lines at once (when it arrives), and
    runs when it is first in all of them: lines joined in one order (delivery's) never wait in a circle."""

    def __init__(self) -> None:
        self._lines: dict[str, deque[Turn]] = {}

    @contextlib.asynccontextmanager
    async def held(self, games):
        turn = Turn(games)
        for game in games:
            self._lines.setdefault(game, deque()).append(turn)
        try:
            if not self._first(turn):
                await turn.ready
            yield
        finally:
            self._leave(turn)

    def _first(self, turn: "Turn") -> bool:
        return all(self._lines[game][0] is turn for game in turn.games)

    def _leave(self, turn: "Turn") -> None:
        following: list[Turn] = []
        for game in turn.games:
            line = self._lines[game]
            was_first = line[0] is turn
            line.remove(turn)
            if not line:
                del self._lines[game]
            elif was_first:
                following.append(line[0])
        for other in following:
            if self._first(other) and not other.ready.done():
                other.ready.set_result(None)


class Turn:
    """One message's place in the lines of the games it carries; ``ready`` once it is first in all."""

    __slots__ = ("games", "ready")

    def __init__(self, games) -> None:
        self.games = tuple(games)
        self.ready: asyncio.Future = asyncio.get_running_loop().create_future()
