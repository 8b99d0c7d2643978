"""The command partitions this engine serves, and what serving one means.

Commands are partitioned by game on the broker (``shared.bus.rabbit.topology``); every engine consumes
every partition and RabbitMQ gives each to one of them at a time. The bus tells this keeper
(a ``PartitionWatch``) when this engine starts serving a partition and when it stops:

- taking a partition over (``serving``): before its first command here is decided, the games of the
  partition whose events were committed and not yet published (the engine before us died in between)
  are held back, so that the outbox publishes them first, in order; and the partition's open
  deadlines are read from the database and armed here. Partitions taken over together are read in
  one query. A second reading a little later arms what a late commit of the engine that served the
  partition before moved (a deadline never goes missing; one armed twice is applied once, by its
  message id).
- losing it (``lost``): its games' deadlines are disarmed here and their cached states dropped (another
  engine moves them now; the store's version check catches a stale state anyway).

Deadlines are armed only for the games of a partition served here, so at most one engine arms a game's
deadline at a time. On the in-process bus the one engine serves the one partition from the start.

Operators' metrics: partitions served (``avalon_engine_partitions``), takeovers
(``avalon_engine_partition_takeovers_total``), commands by partition
(``avalon_engine_partition_commands_total``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from avalon.shared import ops
from avalon.shared.bus.base import COMMAND_PARTITION, partition_of

from .cache import GameCache
from .deadlines import Deadlines
from .publisher import Publisher
from .store import Store

log = logging.getLogger(__name__)

#: How long after a takeover the partition's deadlines are read a second time.
SECOND_READING = 2.0


class PartitionKeeper:
    def __init__(self, store: Store, games: GameCache, deadlines: Deadlines, publisher: Publisher,
                 partitions: int) -> None:
        self.store = store
        self.games = games
        self.deadlines = deadlines
        self.publisher = publisher
        self.partitions = partitions
        self.held: set[int] = set()
        self.takeovers = 0
        self._waiting: set[int] = set()  # taken over, not yet read
        self._round: asyncio.Task | None = None
        self._reading = 0  # takeover rounds still reading the database
        self._later: set[asyncio.Task] = set()
        self._commands: dict[int, object] = {}  # partition -> its avalon_engine_partition_commands child

    @property
    def settled(self) -> bool:
        """Every partition served here, and no takeover still reading."""
        return len(self.held) == self.partitions and self._round is None and not self._reading

    def of(self, game_id: str) -> int:
        return partition_of(game_id, self.partitions)

    def holds(self, game_id: str) -> bool:
        return self.of(game_id) in self.held

    def counted(self) -> None:
        """A command of the partition being handled (``COMMAND_PARTITION``) came in."""
        partition = COMMAND_PARTITION.get()
        child = self._commands.get(partition)
        if child is None:
            child = self._commands[partition] = ops.PARTITION_COMMANDS.labels(partition=str(partition))
        child.inc()

    # -- the bus's PartitionWatch --------------------------------------------------------------

    def serving(self, partition: int) -> asyncio.Future:
        self.held.add(partition)
        ops.PARTITIONS_HELD.set(len(self.held))
        self._waiting.add(partition)
        if self._round is None:
            self._round = asyncio.ensure_future(self._take_over())
        return self._round

    def lost(self, partitions: Iterable[int]) -> None:
        partitions = set(partitions)
        self.held -= partitions
        self._waiting -= partitions
        ops.PARTITIONS_HELD.set(len(self.held))
        scheduler = self.deadlines.scheduler
        if scheduler is not None:
            for game_id in scheduler.planned():
                if self.of(game_id) in partitions:
                    scheduler.disarm(game_id)
        self.games.forget([g for g in self.games.ids() if self.of(g) in partitions])
        log.info("command partition(s) %s no longer served here", ", ".join(map(str, sorted(partitions))))

    def serve_all(self) -> asyncio.Future:
        """Every partition (an engine started without consuming: tests, tools)."""
        for partition in range(self.partitions):
            self.serving(partition)
        assert self._round is not None
        return self._round

    # -- taking over ---------------------------------------------------------------------------

    async def _take_over(self) -> None:
        await asyncio.sleep(0)  # the partitions taken over at the same moment join this round
        partitions, self._waiting, self._round = self._waiting, set(), None
        if not partitions:
            return
        self._reading += 1
        try:
            await self._read(partitions)
        finally:
            self._reading -= 1

    async def _read(self, partitions: set[int]) -> None:
        pending = {g for g in await self.store.unpublished_games() if self.of(g) in partitions}
        if pending:
            self.publisher.hold(pending)
        armed = await self._arm(partitions)
        self.takeovers += len(partitions)
        ops.PARTITION_TAKEOVERS.inc(len(partitions))
        log.info("command partition(s) %s served here: %d deadline(s) armed, %d game(s) to publish first",
                 ", ".join(map(str, sorted(partitions))), armed, len(pending))
        if self.deadlines.scheduler is not None:
            task = asyncio.create_task(self._read_again(partitions))
            self._later.add(task)
            task.add_done_callback(self._later.discard)

    async def _arm(self, partitions: set[int]) -> int:
        scheduler = self.deadlines.scheduler
        if scheduler is None:
            return 0
        armed = 0
        for deadline in await self.store.open_deadlines():
            partition = self.of(deadline.game_id)
            if partition in partitions and partition in self.held:
                armed += scheduler.arm(deadline.game_id, deadline.phase_id, deadline.deadline_at,
                                       deadline.timeout_seconds, again=False)
        return armed

    async def _read_again(self, partitions: set[int]) -> None:
        await asyncio.sleep(SECOND_READING)
        try:
            await self._arm(partitions & self.held)
        except Exception:  # noqa: BLE001 - the database is away: the first reading stands
            log.warning("could not read the deadlines of partition(s) %s again", sorted(partitions), exc_info=True)

    async def stop(self) -> None:
        for task in [*self._later, *([self._round] if self._round else [])]:
            task.cancel()
        await asyncio.gather(*self._later, return_exceptions=True)
