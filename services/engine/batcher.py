"""Commands in batches: whatever has arrived while the previous batch was being committed.

A batch is decided command by command in arrival order (so each game's commands stay in order, and
a command sees the state its predecessors in the batch left), then committed in one transaction (new
states, events and command ids), then handed to the publisher; its commands are acknowledged once
their events are published. A command id seen before is dropped.

If a batch cannot be committed (a command id another engine already took, a game another engine
moved, a broken command), its commands are retried one at a time, so one bad command never holds up
the others. While the database cannot be reached, the batch waits and is tried again; none fails.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from avalon.shared import ops
from avalon.shared.db import database_down
from avalon.shared.protocol import CommandEnvelope

from .cache import GameCache, RecentCommands
from .conflicts import Conflict, Duplicate
from .envelopes import Routed
from .outage import DatabaseDown, DatabaseWatch
from .people import People
from .publisher import Publisher, settle
from .store import Store

log = logging.getLogger(__name__)

#: Attempts at a command whose game keeps changing under it (another engine instance).
CONFLICT_ATTEMPTS = 3

_ERROR_BATCH = ops.ERRORS.labels(service="engine", where="batch")
_ERROR_COMMAND = ops.ERRORS.labels(service="engine", where="command")

#: A command as it waits in a batch: its envelope, and the future its delivery awaits.
Waiting = tuple[CommandEnvelope, asyncio.Future]


@dataclass
class StagedBatch:
    """What the commands of one batch staged: commit requests, and what to do once they are durable."""

    requests: list[dict] = field(default_factory=list)
    deadlines: dict[str, Callable[[], None]] = field(default_factory=dict)  # game -> (re)arm its deadline
    games: set[str] = field(default_factory=set)
    absent: set[str] = field(default_factory=set)  # games looked up for this batch and not found

    def accept(self, env: CommandEnvelope, events: list[Routed], **game) -> None:
        """``env`` is applied: its events, and for a command that changed the game its state,
        expected_version, new_game_seed (a new game), origin_channel and deadline_at (``KEEP``: the open
        phase's deadline stays)."""
        self.requests.append(dict(game_id=env.game_id, message_id=env.message_id, outcome="accepted",
                                  events=events, **game))

    def reject(self, env: CommandEnvelope, reply: Routed) -> None:
        self.requests.append(dict(game_id=env.game_id, message_id=env.message_id, outcome="rejected",
                                  events=[reply]))

    def ignore(self, env: CommandEnvelope) -> None:
        self.requests.append(dict(game_id=env.game_id, message_id=env.message_id, outcome="ignored", events=[]))

    def after_commit(self, game_id: str, then: Callable[[], None] | None) -> None:
        """Once committed, ``then`` for this game (its last command's in the batch is the one that counts)."""
        if then is not None:
            self.deadlines[game_id] = then


#: Decides one command of a batch, staging what it did.
Decide = Callable[[CommandEnvelope, StagedBatch], Awaitable[None]]


class Batcher:
    def __init__(self, store: Store, games: GameCache, people: People, decide: Decide, publisher: Publisher,
                 database: DatabaseWatch, *, max_batch: int) -> None:
        self.store = store
        self.games = games
        self.people = people
        self.decide = decide
        self.publisher = publisher
        self.database = database
        self.max_batch = max_batch
        self.recent = RecentCommands()
        #: one batch (or outbox recovery) at a time: each game's order is kept
        self.turn = asyncio.Lock()
        self._waiting: list[Waiting] = []  # arrived, not yet in a batch
        self._worker: asyncio.Task | None = None

    async def handle(self, envelope: CommandEnvelope) -> None:
        """Returns once the command is committed and its events are published; raises whatever made it
        fail (the bus delivers it again)."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((envelope, future))  # no await before this: arrival order is kept
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work())
        await future

    async def stop(self) -> None:
        if self._worker is not None:  # the bus waited for its handlers; a worker left has nothing to do
            await asyncio.gather(self._worker, return_exceptions=True)

    async def _work(self) -> None:
        await asyncio.sleep(0)  # let the other deliveries that are ready join the first batch
        while self._waiting:
            batch, self._waiting = self._waiting[: self.max_batch], self._waiting[self.max_batch:]
            try:
                async with self.turn:
                    if self.publisher.dirty:
                        await self.publisher.recover()
                    await self._run_until_stored(batch)
            except BaseException as error:  # a bug in the batch machinery: fail its commands, not the worker
                for _, future in batch:
                    settle(future, error=error if isinstance(error, Exception) else RuntimeError("stopped"))
                if not isinstance(error, Exception):
                    raise
                log.exception("a batch of %d commands failed", len(batch))
                _ERROR_BATCH.inc()

    async def _run_until_stored(self, batch: list[Waiting]) -> None:
        """Run a batch; while the database is unreachable, wait and run it again (what was committed
        before the connection died is recognised by its command ids). A command whose delivery was
        given up meanwhile (the service stopping) is dropped from the batch: the broker has it."""
        delay, check_seen = 0.2, False
        while batch:
            try:
                await self._run(batch, check_seen=check_seen)
            except DatabaseDown as down:
                self.database.lost(down.__cause__)
                # the commit may have reached the database with only its answer lost: those commands
                # come back as seen, and their events wait in the outbox, published from there (in
                # order, before anything newer of the same games) by the publisher's recovery
                self.publisher.hold(env.game_id for env, _ in batch)
                await asyncio.sleep(delay)
                delay, check_seen = min(delay * 2, 5.0), True
                batch = [item for item in batch if not item[1].done()]
            else:
                self.database.answered()
                return

    async def _run(self, batch: list[Waiting], attempt: int = 1, *, check_seen: bool = False) -> None:
        """Decide and commit a batch, then hand its events to the publisher.

        Command ids are checked against the ones this engine committed lately; the database's
        primary key catches the others (a redelivery after a restart): then the batch is checked
        against the database and tried again without them."""
        staged = StagedBatch()
        live: list[Waiting] = []
        try:
            seen = await self.store.seen_many([env.message_id for env, _ in batch]) if check_seen else set()
            staged.absent = await self.games.preload({env.game_id for env, _ in batch})
            await self.people.look_up(env for env, _ in batch)
            for env, future in batch:
                if env.message_id in seen or env.message_id in self.recent:
                    settle(future)  # a command id seen before: acknowledged, not applied again
                    ops.COMMANDS_DUPLICATE.inc()
                    continue
                seen.add(env.message_id)
                staged.games.add(env.game_id)
                await self.decide(env, staged)
                live.append((env, future))
            results = await self.store.commit_many(staged.requests) if staged.requests else []
        except Exception as error:
            self.games.forget(staged.games)  # states staged in the cache were never committed
            if database_down(error):
                raise DatabaseDown() from error
            await self._retry([item for item in batch if not item[1].done()], error, attempt, check_seen)
            return
        self.recent.add(request["message_id"] for request in staged.requests)
        _count_outcomes(staged.requests)
        for arm in staged.deadlines.values():  # a game's last phase in the batch is the one that counts
            arm()
        self.publisher.hand_over([item for outgoing in results for item in outgoing], live)

    async def _retry(self, rest: list[Waiting], error: Exception, attempt: int, check_seen: bool) -> None:
        """A batch that could not be committed: without the commands seen before, then one at a time to
        single out the culprit; a lone command's game moved by another engine is read again and retried."""
        if isinstance(error, Duplicate) and not check_seen:
            await self._run(rest, attempt, check_seen=True)
        elif len(rest) > 1:
            for item in rest:
                if not item[1].done():
                    await self._run([item], check_seen=True)
        elif not rest:
            return
        elif isinstance(error, Duplicate):
            settle(rest[0][1])
            ops.COMMANDS_DUPLICATE.inc()
        elif isinstance(error, Conflict) and attempt < CONFLICT_ATTEMPTS:
            await self._run(rest, attempt + 1, check_seen=True)  # another engine moved it: reload
        else:
            settle(rest[0][1], error=error)  # the bus delivers it again (and logs why)
            _ERROR_COMMAND.inc()


def _count_outcomes(requests: list[dict]) -> None:
    """A committed batch's commands in ``avalon_commands_total``: three increments per batch."""
    rejected = ignored = 0
    for request in requests:
        outcome = request["outcome"]
        if outcome == "rejected":
            rejected += 1
        elif outcome == "ignored":
            ignored += 1
    applied = len(requests) - rejected - ignored
    if applied:
        ops.COMMANDS_APPLIED.inc(applied)
    if rejected:
        ops.COMMANDS_REJECTED.inc(rejected)
    if ignored:
        ops.COMMANDS_IGNORED.inc(ignored)
