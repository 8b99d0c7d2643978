"""Which handler decides a command: one table keyed by the command's type.

The game's own commands go to ``GameMoves.play``; the others (board, reminder, profile, invitation) to
their ``SideCommands`` handler. A handler gets the command, its game as decided so far (None for a game
the engine does not have) and the batch to stage what it did in. A deadline or a reminder that the
scheduler may not have sent is ignored before any handler sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from avalon.shared.protocol import COMMAND_MODELS, CommandEnvelope
from avalon.shared.protocol_records import RECORD_COMMANDS

from .batcher import StagedBatch
from .cache import GameCache
from .moves import GameMoves
from .side_commands import SideCommands
from .store import LoadedGame
from .trust import SCHEDULER_COMMANDS, SenderTrust

log = logging.getLogger(__name__)

Handler = Callable[[CommandEnvelope, "LoadedGame | None", StagedBatch], Awaitable[None]]

#: Commands about no game: their game id only names them (``profile:<player>``), nothing is loaded.
WITHOUT_GAME = frozenset({"update_profile"}) | frozenset(RECORD_COMMANDS)


class Handlers:
    def __init__(self, games: GameCache, trust: SenderTrust, moves: GameMoves, side: SideCommands,
                 clock: Callable[[], datetime]) -> None:
        self.games = games
        self.trust = trust
        self.clock = clock  # the engine's now: the scheduler's commands are checked by it
        self.by_type: dict[str, Handler] = {**{kind: moves.play for kind in COMMAND_MODELS}, **side.handlers}

    async def decide(self, env: CommandEnvelope, batch: StagedBatch) -> None:
        """Decide one command of ``batch``, staging what it did there."""
        kind = env.command.type
        loaded = None if kind in WITHOUT_GAME else await self.games.load(env.game_id, batch.absent)
        if kind in SCHEDULER_COMMANDS and not self.trust.scheduler_may(env, loaded, self.clock()):
            log.warning("%s %s for %s refused: not the scheduler's, or the deadline says otherwise (actor %s, "
                        "channel %s)", kind, env.message_id, env.game_id, env.actor, env.channel)
            batch.ignore(env)
            return
        await self.by_type[kind](env, loaded, batch)
