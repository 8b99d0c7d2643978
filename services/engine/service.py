"""The engine service: consume commands, decide, persist, then publish.

It is the composition of a few collaborators, each owning one concern:

- ``SenderTrust`` (trust.py): which delivered bodies are commands the engine believes;
- ``Batcher`` (batcher.py): commands in batches, decided in arrival order, committed in one
  transaction, retried one at a time when a batch cannot be committed, waiting out the database;
- ``Handlers`` (handlers.py): the handler of each command type, ``GameMoves`` (moves.py) for the
  game's own commands and ``SideCommands`` (side_commands.py) for the board, reminders, profiles and
  invitations;
- ``Envelopes`` (envelopes.py) and ``Router`` (routing.py): every event the engine sends, with its
  readers and channels;
- ``GameCache`` (cache.py) and ``People`` (people.py): the games and people the engine keeps in memory;
- ``Publisher`` (publisher.py): the outbox, published while the next batch is decided;
- ``Deadlines`` (deadlines.py): each open phase's deadline, armed once committed.

The channels (which channel a player id's scheme names, where events may go, which channels are
gateways) are given by the composition root (``services/app.py``): the engine names none.

Operators' metrics (``shared.ops``): commands by result once committed (a duplicate when dropped),
events published per channel, the outbox's depth (committed, not yet published), dead-lettered
commands, and the errors logged here.
"""

from __future__ import annotations

import asyncio
import logging

from avalon.shared import ops
from avalon.shared.bus import Bus
from avalon.shared.bus.base import COMMAND_SENDER
from avalon.shared.channels import ChannelMap
from avalon.shared.db import database_down, to_the_end
from avalon.shared.protocol import utcnow

from .batcher import Batcher
from .cache import GameCache
from .deadlines import DeadlineScheduler, Deadlines
from .envelopes import Envelopes
from .handlers import Handlers
from .moves import GameMoves
from .outage import DatabaseWatch
from .partitions import PartitionKeeper
from .people import People
from .publisher import Publisher
from .routing import Router
from .side_commands import SideCommands
from .store import Store
from .trust import SenderTrust

log = logging.getLogger(__name__)

#: How often the outbox's published marks are written, and games held back are published again.
UPKEEP_SECONDS = 0.2

_ERROR_OUTBOX = ops.ERRORS.labels(service="engine", where="outbox")


class EngineService:
    def __init__(self, store: Store, bus: Bus, scheduler: DeadlineScheduler | None = None, *, channels: ChannelMap,
                 cache_size: int = 20_000, prefetch: int = 1024, max_batch: int = 512, clock=utcnow) -> None:
        self.store = store
        self.bus = bus
        self.clock = clock  # now, in UTC: deadlines are set and checked by it (a demo may run it fast)
        self.prefetch = prefetch  # commands in flight: what the next batch can take
        self.trust = SenderTrust(channels, bus.prefix)
        self.deadlines = Deadlines(scheduler)
        # a batch's games stay cached while it is decided
        self.games = GameCache(store, max(cache_size, 2 * max_batch))
        people = People(store, self.games)
        envelopes = Envelopes(Router(channels))
        handlers = Handlers(self.games, self.trust, GameMoves(self.games, people, envelopes, self.deadlines, clock),
                            SideCommands(store, self.games, people, envelopes), clock)
        self.database = DatabaseWatch()
        self.publisher = Publisher(store, bus, self.database)
        self.batcher = Batcher(store, self.games, people, handlers.decide, self.publisher, self.database,
                               max_batch=max_batch)
        self.partitions = PartitionKeeper(store, self.games, self.deadlines, self.publisher,
                                          getattr(bus, "partitions", 1))
        self.deadlines.serves = self.partitions.holds
        self._upkeep: asyncio.Task | None = None

    @property
    def scheduler(self) -> DeadlineScheduler | None:
        return self.deadlines.scheduler

    async def start(self, *, consume: bool = True) -> None:
        """Ready to serve the command partitions the bus gives it (their deadlines armed and what the
        outbox held of them published when each is taken over: partitions.py); ``consume`` False: it
        serves every partition, and takes commands only from ``handle_raw``'s callers."""
        await self.store.migrate()
        self.partitions.partitions = getattr(self.bus, "partitions", 1)  # a broker's count, read on start
        self.deadlines.start()
        self._upkeep = asyncio.create_task(self._keep_up())
        if consume:
            await self.bus.consume_commands(self.handle_raw, prefetch=self.prefetch, watch=self.partitions)
            await self._first_takeover()
        else:
            await self.partitions.serve_all()
            await self._first_recovery()

    async def _first_takeover(self, wait: float = 2.0) -> None:
        """Wait a little for the first partitions to come (a lone engine serves every one within
        moments: its probes reach it), so that start returns with their deadlines armed."""
        loop = asyncio.get_running_loop()
        until = loop.time() + wait
        while loop.time() < until and not self.partitions.settled:
            await asyncio.sleep(0.02)
        await self._first_recovery()

    async def _first_recovery(self) -> None:
        if self.publisher.dirty:
            async with self.batcher.turn:
                await self.publisher.recover()

    async def stop(self) -> None:
        await self.partitions.stop()
        self.deadlines.stop()
        if self._upkeep is not None:
            self._upkeep.cancel()
            await asyncio.gather(self._upkeep, return_exceptions=True)
        await self.batcher.stop()
        await self.publisher.stop()

    async def handle_raw(self, body: bytes) -> None:
        """Handle one delivered command; returns once it is committed and its events are published.

        Raises PoisonMessage for a body that is no command to believe (dead-letter it), and whatever made
        the command fail (deliver it again)."""
        self.partitions.counted()
        await self.batcher.handle(self.trust.admit(body, COMMAND_SENDER.get()))

    async def publish_pending(self, game_id: str | None = None) -> int:
        """Publish what the outbox holds, in order; returns how many were published."""
        return await self.publisher.publish_pending(game_id)

    async def flush_published(self) -> bool:
        """Mark published events in the outbox; whether it wrote to the database."""
        return await self.publisher.flush_published()

    async def _keep_up(self) -> None:
        """Every little while: mark what was published, and publish the games held back from the outbox
        (taking the batcher's turn, so each game's events stay in order)."""
        while True:
            await asyncio.sleep(UPKEEP_SECONDS)
            try:
                # stop() cancels this task: never in the middle of the marks' write (on SQLite a write cut
                # off there can keep the file locked; shared.db.to_the_end)
                if await to_the_end(self.publisher.flush_published()):  # the database answered
                    self.database.answered()
                if self.publisher.dirty:
                    async with self.batcher.turn:
                        await self.publisher.recover()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if database_down(error):
                    self.database.lost(error)
                else:
                    log.exception("outbox upkeep failed; retrying")
                _ERROR_OUTBOX.inc()
