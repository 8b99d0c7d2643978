"""Publishing from the outbox: committed events go to the bus, and are then marked published.

What a batch committed is published while the next batch is decided; its commands are acknowledged
once that is done. Events the bus would not take stay in the outbox: their games are held back, and
their events (and anything newer of those games) are published from the outbox, in order, by
``recover``. Events committed but not published by a previous run (a crash between commit and
publish) are published by ``publish_pending`` on start. Published events are marked in the outbox in
one statement for many commands (``flush_published``).

The outbox gauge (``avalon_outbox_depth``) counts what is committed and not yet published.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from avalon.shared import ops
from avalon.shared.bus import Bus, Unroutable
from avalon.shared.db import database_down

from .outage import DatabaseWatch
from .store import Outgoing, Store

log = logging.getLogger(__name__)

#: Published ids are marked in the outbox at least this often (and every 0.2 s by the engine's upkeep).
MARK_EVERY = 500

_ERROR_PUBLISH = ops.ERRORS.labels(service="engine", where="publish")


def settle(future: asyncio.Future, error: BaseException | None = None) -> None:
    """A command's delivery is done: acknowledged, or (``error``) to be delivered again."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(None)


class OutboxGauge:
    """This engine's share of the outbox gauge: committed, not yet published."""

    def __init__(self) -> None:
        self.depth = 0

    def change(self, by: int) -> None:
        self.depth += by
        ops.ENGINE_OUTBOX.inc(by)

    def leave(self) -> None:
        """What is left is published by the next start, and counted there."""
        self.change(-self.depth)


class Publisher:
    def __init__(self, store: Store, bus: Bus, database: DatabaseWatch) -> None:
        self.store = store
        self.bus = bus
        self.database = database
        self.gauge = OutboxGauge()
        self.dirty: set[str] = set()  # games with events the bus did not take
        self._unpublished: list[tuple[list[Outgoing], list]] = []  # committed batches waiting to be published
        self._publishing: asyncio.Task | None = None  # the publishing loop, while there is something to publish
        self._published: list[int] = []  # published, not yet marked in the outbox
        self._marking = asyncio.Lock()  # a flush returns only once every id published before it is marked

    def hand_over(self, committed: list[Outgoing], live: list) -> None:
        """A committed batch's events (``live``: its commands, acknowledged once they are published)."""
        if committed:
            self.gauge.change(len(committed))
        self._unpublished.append((committed, live))
        if self._publishing is None or self._publishing.done():
            self._publishing = asyncio.create_task(self._publish_loop())

    def hold(self, game_ids: Iterable[str]) -> None:
        """These games' events are published from the outbox, in order, before anything newer of theirs."""
        self.dirty.update(game_ids)

    async def stop(self) -> None:
        if self._publishing is not None:
            await asyncio.gather(self._publishing, return_exceptions=True)
        self.gauge.leave()
        await self.flush_published()

    async def _publish_loop(self) -> None:
        """Publish committed batches' events, oldest first: everything committed since the last
        publish goes out together (while the next batch is decided and committed), then those
        commands may be acknowledged."""
        while self._unpublished:
            done, self._unpublished = self._unpublished, []
            outgoing = [item for items, _ in done for item in items]
            live = [item for _, items in done for item in items]
            if self.dirty:  # earlier events wait in the outbox: these go after them, from there (recover);
                # committed, so acknowledged now: a redelivery would only be dropped as a duplicate
                self.hold(item.envelope.game_id for item in outgoing)
                for _, future in live:
                    settle(future)
                continue
            try:
                await self._publish(outgoing)
            except Exception as error:
                for _, future in live:  # committed: a redelivery is acknowledged as a duplicate
                    settle(future, error=error)
                continue
            for _, future in live:
                settle(future)

    async def _publish(self, outgoing: list[Outgoing]) -> None:
        """Publish what a batch committed; per channel, each game's events in order (the bus carries a
        game's consecutive events with one routing key in one message). The outbox keeps what fails."""
        by_channel: dict[str, list[Outgoing]] = {}
        for item in outgoing:
            for channel in item.channels:
                by_channel.setdefault(channel, []).append(item)

        async def one(channel: str, items: list[Outgoing]) -> None:
            try:
                await self.bus.publish_events([i.envelope for i in items], channel, bodies=[i.body for i in items])
            except Unroutable as e:
                log.warning("no %s subscriber: %s", channel, e)
            else:
                ops.events_published(channel).inc(len(items))

        results = await asyncio.gather(*(one(c, items) for c, items in by_channel.items()), return_exceptions=True)
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is not None:
            self.hold(item.envelope.game_id for item in outgoing)
            raise failed
        if outgoing:
            self.gauge.change(-len(outgoing))
        self._published.extend(item.id for item in outgoing)
        if len(self._published) >= MARK_EVERY:
            await self._mark_quietly()

    async def _mark_quietly(self) -> None:
        """Mark what was published, as upkeep: the commands are committed and their events out, so a
        database that is away now costs nothing but the marks, which wait for the next flush (an event
        left unmarked is at worst published again at a restart, and dropped there as a duplicate)."""
        try:
            await self.flush_published()
        except Exception as error:  # noqa: BLE001 - the ids are kept for the next flush
            # the outage itself is the batcher's to tell (one line per outage): a commit meets it next
            log.warning("published events could not be marked yet (%s); they are at the next flush",
                        type(error).__name__, exc_info=not database_down(error))
            _ERROR_PUBLISH.inc()

    async def recover(self) -> None:
        """Publish what the outbox holds for games whose events the bus did not take, in order."""
        if self._publishing is not None:
            await asyncio.wait([self._publishing])
        try:
            for game_id in sorted(self.dirty):
                await self.publish_pending(game_id)
        except Exception as error:
            if database_down(error):
                self.database.lost(error)
            else:
                log.warning("the outbox could not be published yet; retrying", exc_info=True)
            _ERROR_PUBLISH.inc()

    async def publish_pending(self, game_id: str | None = None) -> int:
        """Publish what the outbox holds, in order; returns how many were published."""
        await self.flush_published()
        published = 0
        while True:
            batch = await self.store.unpublished(game_id=game_id)
            if not batch:
                if game_id is not None:
                    self.dirty.discard(game_id)
                return published
            if game_id is None:  # the outbox gauge: the events of games the bus did not take were counted
                # when committed; the others (a previous run's) are counted now
                fresh = sum(1 for item in batch if item.envelope.game_id not in self.dirty)
                if fresh:
                    self.gauge.change(fresh)
            done = []
            for item in batch:
                for channel in item.channels:
                    try:
                        await self.bus.publish_event(item.envelope, channel)
                    except Unroutable:
                        log.warning("no %s subscriber for %s", channel, item.envelope.message_id)
                    else:
                        ops.events_published(channel).inc()
                done.append(item.id)
            await self.store.mark_published(done)
            self.gauge.change(-len(done))
            published += len(done)

    async def flush_published(self) -> bool:
        """Mark published events in the outbox, in one statement for many commands. Waits for a flush
        already under way (its ids were taken from the list but are not marked yet); ids that could not
        be marked stay for the next flush. Whether it wrote to the database."""
        async with self._marking:
            ids, self._published = self._published, []
            if not ids:
                return False
            try:
                await self.store.mark_published(ids)
            except BaseException:
                self._published[:0] = ids
                raise
            return True
