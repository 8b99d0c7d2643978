"""The engine service: consume commands, decide, persist, then publish.

Commands are handled in batches: whatever has arrived while the previous batch
was being committed. A batch is decided command by command in arrival order
(so each game's commands stay in order, and a command sees the state its
predecessors in the batch left), then committed in one transaction (new
states, events and command ids), then its events are published from the
outbox (while the next batch is decided), and only then are its commands
acknowledged. A command id seen before is dropped. Events committed but not
yet published (a crash between commit and publish) are published on the next
start. A rejection goes back to the
actor alone, as an event with its reason.

If a batch cannot be committed (a command id another engine already took, a
game another engine moved, a broken command), its commands are retried one
at a time, so one bad command never holds up the others.

Operators' metrics (``shared.ops``): commands by result once committed (a duplicate when dropped),
events published per channel, the outbox's depth (committed, not yet published), dead-lettered
commands, and the errors logged here.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import ValidationError

from shared import ops
from shared.channels import ChannelMap
from shared.db import database_down
from shared.bus import Bus, PoisonMessage, Unroutable
from shared.bus.base import COMMAND_SENDER
from shared.protocol import (
    CommandEnvelope,
    CommandRejected,
    EventEnvelope,
    INTERNAL_EVENTS,
    Person,
    audience_model,
    event_body,
    to_core_command,
    utcnow,
)
from services.engine.rules import (
    Accepted,
    Audience,
    AudienceKind,
    apply,
    new_game,
    pending_players,
)
from shared.game import events as core_events
from shared.game.commands import SCHEDULER
from shared.game.errors import Rejection

from .deadlines import DeadlineScheduler
from .routing import SEATING_COMMANDS, SEATING_EVENTS, channels_of, choices_for, person_of, readers_of
from .side_commands import SideCommands
from .conflicts import Conflict, Duplicate
from .store import KEEP, LoadedGame, Outgoing, Store

log = logging.getLogger(__name__)

#: Attempts at a command whose game keeps changing under it (another engine instance).
_CONFLICT_ATTEMPTS = 3


@dataclass
class _Batch:
    """What the commands of one batch staged: commit requests, and what to do once they are durable."""

    requests: list[dict] = field(default_factory=list)
    deadlines: dict = field(default_factory=dict)  # game -> how to (re)arm its deadline once committed
    games: set[str] = field(default_factory=set)
    absent: set[str] = field(default_factory=set)  # games looked up for this batch and not found


class DatabaseDown(Exception):
    """The database could not be reached while a batch was decided or committed: it is tried again
    once the database answers; its commands wait (unacknowledged), none fails."""


class EngineService(SideCommands):
    def __init__(self, store: Store, bus: Bus, scheduler: DeadlineScheduler | None = None, *, channels: ChannelMap,
                 cache_size: int = 20_000, prefetch: int = 1024, max_batch: int = 512, clock=utcnow) -> None:
        self.store = store
        self.channels = channels  # the composition root's: player ids' schemes, routed channels, gateways
        self.clock = clock  # now, in UTC: deadlines are set and checked by it (a demo may run it fast)
        self.bus = bus
        self.scheduler = scheduler
        self._cache: OrderedDict[str, LoadedGame] = OrderedDict()
        self._cache_size = max(cache_size, 2 * max_batch)  # a batch's games stay cached while it is decided
        self.prefetch = prefetch  # commands in flight: what the next batch can take
        self.max_batch = max_batch
        self._extra_channels: dict[str, set[str]] = {}
        self._routes: dict[tuple, tuple[str, ...]] = {}  # (origin, readers) -> channels; cleared by a profile
        #: player -> what the players table says of them, for the events that change who is at the table:
        #: looked up once per batch for the players of its games that may change (one query), kept up to
        #: date by this engine's update_profile
        self._persons: dict[str, Person] = {}
        self._published: list[int] = []  # published, not yet marked in the outbox
        self._marking = asyncio.Lock()  # a flush returns only once every id published before it is marked
        self._dirty: set[str] = set()  # games with events the bus did not take
        self._flusher: asyncio.Task | None = None
        self._waiting: list[tuple[CommandEnvelope, asyncio.Future]] = []  # arrived, not yet in a batch
        self._worker: asyncio.Task | None = None
        self._turn = asyncio.Lock()  # one batch (or outbox retry) at a time: each game's order is kept
        self._batch: _Batch | None = None  # the batch being decided
        self._unpublished: list[tuple[list[Outgoing], list]] = []  # committed batches waiting to be published
        self._publishing: asyncio.Task | None = None  # the publishing loop, while there is something to publish
        self._recent: set[str] = set()  # command ids committed lately (two generations)
        self._recent_old: set[str] = set()
        self._outbox_depth = 0  # this engine's share of the outbox gauge: committed, not yet published
        self._database_lost: float | None = None  # since when (monotonic) the database has not answered

    # -- life cycle ----------------------------------------------------------------

    async def start(self, *, consume: bool = True) -> None:
        await self.store.migrate()
        await self.publish_pending()
        if self.scheduler is not None:
            self.scheduler.start()
            for deadline in await self.store.open_deadlines():
                self.scheduler.arm(deadline.game_id, deadline.phase_id, deadline.deadline_at,
                                   deadline.timeout_seconds)
        self._flusher = asyncio.create_task(self._flush_loop())
        if consume:
            await self.bus.consume_commands(self.handle_raw, prefetch=self.prefetch)

    async def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.shutdown()
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.gather(self._flusher, return_exceptions=True)
        if self._worker is not None:  # the bus waited for its handlers; a worker left has nothing to do
            await asyncio.gather(self._worker, return_exceptions=True)
        if self._publishing is not None:
            await asyncio.gather(self._publishing, return_exceptions=True)
        self._outbox(-self._outbox_depth)  # what is left is published by the next start, and counted there
        await self.flush_published()

    # -- commands, in batches ----------------------------------------------------------

    async def handle_raw(self, body: bytes) -> None:
        """Handle one delivered command; returns once it is committed and its events are published.

        Raises PoisonMessage for a body that is no command (dead-letter it), and whatever made the
        command fail (deliver it again)."""
        try:
            envelope = CommandEnvelope.model_validate_json(body)
        except ValidationError as error:
            # without the input: a 10 MB field would be a 10 MB log line
            log.warning("malformed command dead-lettered: %s",
                        error.errors(include_input=False, include_url=False)[:3])
            _DEAD_COMMANDS.inc()
            raise PoisonMessage(str(error)) from error
        if b"\\u0000" in body and _holds_nul(envelope.model_dump()):
            log.warning("command %s dead-lettered: a NUL character, which no database column takes",
                        envelope.message_id.replace("\x00", "\\0"))
            _DEAD_COMMANDS.inc()
            raise PoisonMessage("a NUL character in the command")
        forged = _not_from(self.channels, envelope, COMMAND_SENDER.get(), getattr(self.bus, "prefix", None))
        if forged:
            log.warning("command %s dead-lettered: %s", envelope.message_id, forged)
            _DEAD_COMMANDS.inc()
            raise PoisonMessage(forged)
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((envelope, future))  # no await before this: arrival order is kept
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work())
        await future

    async def _work(self) -> None:
        await asyncio.sleep(0)  # let the other deliveries that are ready join the first batch
        while self._waiting:
            batch, self._waiting = self._waiting[: self.max_batch], self._waiting[self.max_batch:]
            try:
                async with self._turn:
                    if self._dirty:
                        await self._recover()
                    await self._run_until_stored(batch)
            except BaseException as error:  # a bug in the batch machinery: fail its commands, not the worker
                for _, future in batch:
                    _settle(future, error=error if isinstance(error, Exception) else RuntimeError("stopped"))
                if not isinstance(error, Exception):
                    raise
                log.exception("a batch of %d commands failed", len(batch))
                _ERROR_BATCH.inc()

    async def _run_until_stored(self, batch: list[tuple[CommandEnvelope, asyncio.Future]]) -> None:
        """Run a batch; while the database is unreachable, wait and run it again (what was committed
        before the connection died is recognised by its command ids). A command whose delivery was
        given up meanwhile (the service stopping) is dropped from the batch: the broker has it."""
        delay, check_seen = 0.2, False
        while batch:
            try:
                await self._run_batch(batch, check_seen=check_seen)
            except DatabaseDown as down:
                self._database_trouble(down.__cause__)
                # the commit may have reached the database with only its answer lost: those commands
                # come back as seen, and their events wait in the outbox, published from there (in
                # order, before anything newer of the same games) by _recover
                self._dirty.update(env.game_id for env, _ in batch)
                await asyncio.sleep(delay)
                delay, check_seen = min(delay * 2, 5.0), True
                batch = [item for item in batch if not item[1].done()]
            else:
                self._database_fine()
                return

    def _database_trouble(self, error: BaseException | None) -> None:
        """One line when the database stops answering (not one per command or retry)."""
        if self._database_lost is None:
            self._database_lost = time.monotonic()
            why = " ".join(str(error).split())[:200] if error is not None else ""
            log.warning("database unreachable (%s: %s): commands wait until it answers", type(error).__name__, why)

    def _database_fine(self) -> None:
        if self._database_lost is not None:
            log.info("database back after %.1f s", time.monotonic() - self._database_lost)
            self._database_lost = None

    async def _run_batch(self, batch: list[tuple[CommandEnvelope, asyncio.Future]], attempt: int = 1, *,
                         check_seen: bool = False) -> None:
        """Decide and commit a batch, then hand its events to the publishing loop.

        Command ids are checked against the ones this engine committed lately; the database's
        primary key catches the others (a redelivery after a restart): then the batch is checked
        against the database and tried again without them."""
        staged = _Batch()
        live: list[tuple[CommandEnvelope, asyncio.Future]] = []
        try:
            seen = await self.store.seen_many([env.message_id for env, _ in batch]) if check_seen else set()
            uncached = {env.game_id for env, _ in batch} - self._cache.keys()
            if uncached:  # one query for the batch's games not in memory (and to know the new ones are new)
                for game_id, loaded in (await self.store.load_many(uncached)).items():
                    self._remember(game_id, loaded)
                staged.absent = uncached - self._cache.keys()
            await self._look_up_people(batch)
            for env, future in batch:
                if env.message_id in seen or self._recently_committed(env.message_id):
                    _settle(future)  # a command id seen before: acknowledged, not applied again
                    ops.COMMANDS_DUPLICATE.inc()
                    continue
                seen.add(env.message_id)
                staged.games.add(env.game_id)
                self._batch = staged
                try:
                    await self._decide(env)
                finally:
                    self._batch = None
                live.append((env, future))
            results = await self.store.commit_many(staged.requests) if staged.requests else []
        except Exception as error:
            for game_id in staged.games:  # states staged in the cache were never committed
                self._cache.pop(game_id, None)
            if database_down(error):
                raise DatabaseDown() from error
            rest = [item for item in batch if not item[1].done()]
            if isinstance(error, Duplicate) and not check_seen:
                await self._run_batch(rest, attempt, check_seen=True)
            elif len(rest) > 1:  # one at a time, to single out the culprit
                for item in rest:
                    if not item[1].done():
                        await self._run_batch([item], check_seen=True)
            elif not rest:
                return
            elif isinstance(error, Duplicate):
                _settle(rest[0][1])
                ops.COMMANDS_DUPLICATE.inc()
            elif isinstance(error, Conflict) and attempt < _CONFLICT_ATTEMPTS:
                await self._run_batch(rest, attempt + 1, check_seen=True)  # another engine moved it: reload
            else:
                _settle(rest[0][1], error=error)  # the bus delivers it again (and logs why)
                _ERROR_COMMAND.inc()
            return
        self._remember_committed(request["message_id"] for request in staged.requests)
        _count_outcomes(staged.requests)
        for arm in staged.deadlines.values():  # a game's last phase in the batch is the one that counts
            arm()
        committed = [item for outgoing in results for item in outgoing]
        if committed:
            self._outbox(len(committed))
        self._unpublished.append((committed, live))
        if self._publishing is None or self._publishing.done():
            self._publishing = asyncio.create_task(self._publish_loop())

    async def _publish_loop(self) -> None:
        """Publish committed batches' events, oldest first: everything committed since the last
        publish goes out together (while the worker decides and commits the next batch), then
        those commands may be acknowledged."""
        while self._unpublished:
            done, self._unpublished = self._unpublished, []
            outgoing = [item for items, _ in done for item in items]
            live = [item for _, items in done for item in items]
            if self._dirty:  # earlier events wait in the outbox: these go after them, from there (_recover);
                # committed, so acknowledged now: a redelivery would only be dropped as a duplicate
                self._dirty.update(item.envelope.game_id for item in outgoing)
                for _, future in live:
                    _settle(future)
                continue
            try:
                await self._publish(outgoing)
            except Exception as error:
                for _, future in live:  # committed: a redelivery is acknowledged as a duplicate
                    _settle(future, error=error)
                continue
            for _, future in live:
                _settle(future)

    async def _recover(self) -> None:
        """Publish what the outbox holds for games whose events the bus did not take, in order."""
        if self._publishing is not None:
            await asyncio.wait([self._publishing])
        try:
            for game_id in sorted(self._dirty):
                await self.publish_pending(game_id)
        except Exception as error:
            if database_down(error):
                self._database_trouble(error)
            else:
                log.warning("the outbox could not be published yet; retrying", exc_info=True)
            _ERROR_PUBLISH.inc()

    def _recently_committed(self, message_id: str) -> bool:
        return message_id in self._recent or message_id in self._recent_old

    def _remember_committed(self, message_ids) -> None:
        self._recent.update(message_ids)
        if len(self._recent) > 50_000:
            self._recent_old, self._recent = self._recent, set()

    async def _commit(self, **request) -> None:
        """Stage what a command did for its batch's transaction."""
        assert self._batch is not None, "commands are decided inside a batch"
        self._batch.requests.append(request)

    def _after_commit(self, game_id: str, arm) -> None:
        assert self._batch is not None
        self._batch.deadlines[game_id] = arm

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
            self._dirty.update(item.envelope.game_id for item in outgoing)
            raise failed
        if outgoing:
            self._outbox(-len(outgoing))
        self._published.extend(item.id for item in outgoing)
        if len(self._published) >= 500:
            await self.flush_published()

    def _outbox(self, change: int) -> None:
        self._outbox_depth += change
        _OUTBOX.inc(change)

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

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            try:
                if await self.flush_published():  # the database answered
                    self._database_fine()
                if self._dirty:
                    async with self._turn:
                        await self._recover()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if database_down(error):
                    self._database_trouble(error)
                else:
                    log.exception("outbox upkeep failed; retrying")
                _ERROR_OUTBOX.inc()

    async def _decide(self, env: CommandEnvelope) -> None:
        kind = env.command.type
        if kind == "update_profile":
            await self._update_profile(env)
            return
        loaded = await self._load(env.game_id)
        if kind in ("phase_timed_out", "remind_phase") and not _scheduler_may(env, loaded, self.clock()):
            log.warning("%s %s for %s refused: not the scheduler's, or the deadline says otherwise (actor %s, "
                        "channel %s)", kind, env.message_id, env.game_id, env.actor, env.channel)
            await self._commit(game_id=env.game_id, message_id=env.message_id, outcome="ignored", events=[])
            return
        if kind == "remind_phase":
            await self._remind(env, loaded)
            return
        if kind == "show_board":
            await self._show_board(env, loaded)
            return
        if kind == "invite":
            await self._invite(env, loaded)
            return
        seed = None
        if kind == "create_game":
            if loaded is None:
                seed = secrets.randbits(63)
                loaded = LoadedGame(new_game(), 0, seed, env.channel)
        elif loaded is None:
            await self._reply_rejected(env, None, "unknown_game", {}, "There is no such game.")
            return
        result = apply(loaded.state, to_core_command(env, seed or loaded.seed))
        if isinstance(result, Rejection):
            await self._reply_rejected(env, loaded, result.reason, result.params, result.message)
            return
        if not result.events:  # e.g. a stale deadline: nothing happens
            await self._commit(game_id=env.game_id, message_id=env.message_id, outcome="ignored", events=[])
            return
        await self._commit_accepted(env, loaded, result, seed)

    async def _commit_accepted(self, env: CommandEnvelope, loaded: LoadedGame, result: Accepted,
                               seed: int | None) -> None:
        now = self.clock()
        state = result.state
        deadline_at = KEEP
        envelopes = []
        sent = dict(loaded.sent)
        seq = loaded.version
        for event in result.events:
            seq += 1
            deadline = None
            if isinstance(event, core_events.PhaseOpened):
                deadline = now + timedelta(seconds=event.timeout_seconds) if event.timeout_seconds else None
                deadline_at = deadline
            readers = readers_of(event, state.players)
            envelope = EventEnvelope(
                message_id=f"{env.game_id}:{seq}", game_id=env.game_id, seq=seq, occurred_at=now,
                audience=audience_model(event.audience), caused_by=env.message_id, deadline_at=deadline,
                readers=readers, people=await self._people(readers) if isinstance(event, SEATING_EVENTS) else {},
                event=event_body(event))
            envelopes.append(self._routed(envelope, loaded.origin_channel, sent))
        if any(isinstance(e, (core_events.PhaseOpened, core_events.ShotHanded)) for e in result.events):
            for player in pending_players(state):  # each actor's buttons, privately
                seq += 1
                audience = audience_model(Audience.to(player))
                envelope = EventEnvelope(
                    message_id=f"{env.game_id}:{seq}", game_id=env.game_id, seq=seq, occurred_at=now,
                    audience=audience, caused_by=env.message_id, readers=audience.players,
                    event=choices_for(state, player))
                envelopes.append(self._routed(envelope, loaded.origin_channel, sent))
        if state.over:
            deadline_at = None
        await self._commit(
            game_id=env.game_id, message_id=env.message_id, outcome="accepted", events=envelopes, state=state,
            expected_version=loaded.version, new_game_seed=seed, origin_channel=loaded.origin_channel,
            deadline_at=deadline_at)
        self._remember(env.game_id, LoadedGame(state, seq, loaded.seed, loaded.origin_channel,
                                               loaded.deadline_at if deadline_at is KEEP else deadline_at, sent))
        scheduler = self.scheduler
        if scheduler is not None:
            if state.over or deadline_at is None:
                self._after_commit(env.game_id, lambda: scheduler.disarm(env.game_id))
            elif deadline_at is not KEEP:
                self._after_commit(env.game_id, lambda: scheduler.arm(env.game_id, state.phase_id, deadline_at,
                                                         state.timeout_seconds))

    async def _reply_rejected(self, env: CommandEnvelope, loaded: LoadedGame | None, reason, params,
                              message: str) -> None:
        body = CommandRejected(command_type=env.command.type, reason=reason,
                               params={k: getattr(v, "value", v) for k, v in params.items()}, message=message)
        envelope = EventEnvelope(
            message_id=f"rejected:{env.message_id}", game_id=env.game_id, seq=0, occurred_at=utcnow(),
            audience=audience_model(Audience.to(env.actor)), caused_by=env.message_id, event=body)
        channels = channels_of(self.channels, env.actor) | {env.channel}
        if env.actor.startswith("@"):  # the scheduler's own stale messages need no reply
            channels = set()
        await self._commit(game_id=env.game_id, message_id=env.message_id, outcome="rejected",
                                events=[(envelope, tuple(sorted(c for c in channels if c in self.channels.routed)))])

    # -- loading, routing, publishing --------------------------------------------------

    async def _load(self, game_id: str) -> LoadedGame | None:
        loaded = self._cache.get(game_id)
        if loaded is not None:
            self._cache.move_to_end(game_id)
            return loaded
        if self._batch is not None and game_id in self._batch.absent:
            return None
        loaded = await self.store.load(game_id)
        if loaded is not None:
            self._remember(game_id, loaded)
        return loaded

    def _remember(self, game_id: str, loaded: LoadedGame) -> None:
        self._cache[game_id] = loaded
        self._cache.move_to_end(game_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _routed(self, envelope: EventEnvelope, origin: str, sent: dict[str, int]
                ) -> tuple[EventEnvelope, tuple[str, ...]]:
        """A game's event with its channels, naming for each the previous event sent there (and
        noting it in ``sent``: channel -> last seq)."""
        channels = self._channels(envelope, origin)
        if not channels:
            return envelope, channels
        prev = {channel: sent.get(channel, 0) for channel in channels}
        for channel in channels:
            sent[channel] = envelope.seq
        return envelope.model_copy(update={"prev_seq": prev}), channels

    def _channels(self, envelope: EventEnvelope, origin: str) -> tuple[str, ...]:
        """The channels of a game's event: those of its readers (and a public event's game's origin)."""
        if envelope.event.type in INTERNAL_EVENTS or envelope.audience.kind is AudienceKind.NOBODY:
            return ()
        key = (origin if envelope.audience.kind is AudienceKind.PUBLIC else None, envelope.readers)
        channels = self._routes.get(key)
        if channels is None:
            found = {key[0]} if key[0] else set()
            for person in key[1]:
                found |= channels_of(self.channels, person) | self._extra_channels.get(person, set())
            channels = tuple(sorted(found & self.channels.routed))
            if len(self._routes) > 100_000:
                self._routes.clear()
            self._routes[key] = channels
        return channels

    async def _look_up_people(self, batch: list[tuple[CommandEnvelope, asyncio.Future]]) -> None:
        """One query for the people a batch's seating commands may name that are not known yet."""
        wanted: set[str] = set()
        for env, _ in batch:
            if env.command.type in SEATING_COMMANDS:
                wanted.add(env.actor)
                loaded = self._cache.get(env.game_id)
                if loaded is not None:
                    wanted.update(loaded.state.players)
        if not wanted:
            return
        if len(self._persons) > 100_000:  # bounded: a long-running engine sees many players
            self._persons.clear()
        missing = wanted - self._persons.keys()
        if missing:
            await self._learn_people(missing)

    async def _learn_people(self, players) -> None:
        rows = await self.store.players(list(players))
        for player in players:
            self._persons[player] = person_of(rows.get(player))

    async def _people(self, readers: tuple[str, ...]) -> dict[str, Person]:
        """What the engine knows of each reader (looked up for the batch already, but for the rare one
        that was not)."""
        persons = self._persons
        missing = [p for p in readers if p not in persons]
        if missing:
            await self._learn_people(missing)
        return {p: persons[p] for p in readers}

    async def publish_pending(self, game_id: str | None = None) -> int:
        """Publish what the outbox holds, in order; returns how many were published."""
        await self.flush_published()
        published = 0
        while True:
            batch = await self.store.unpublished(game_id=game_id)
            if not batch:
                if game_id is not None:
                    self._dirty.discard(game_id)
                return published
            if game_id is None:  # the outbox gauge: the events of games the bus did not take were counted
                # when committed; the others (a previous run's) are counted now
                fresh = sum(1 for item in batch if item.envelope.game_id not in self._dirty)
                if fresh:
                    self._outbox(fresh)
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
            self._outbox(-len(done))
            published += len(done)


_OUTBOX = ops.ENGINE_OUTBOX
_DEAD_COMMANDS = ops.DEAD_MESSAGES.labels(service="engine", channel="commands")
_ERROR_BATCH = ops.ERRORS.labels(service="engine", where="batch")
_ERROR_COMMAND = ops.ERRORS.labels(service="engine", where="command")
_ERROR_PUBLISH = ops.ERRORS.labels(service="engine", where="publish")
_ERROR_OUTBOX = ops.ERRORS.labels(service="engine", where="outbox")


#: How early the scheduler's timer may fire, by this engine's clock (APScheduler's own jitter)
TIMER_EARLY = timedelta(seconds=2)
#: How much longer than it says a reminder may come before the deadline (a reminder sent late by a
#: scheduler that was stopped says less time is left than there is, never more)
REMINDER_SLACK = timedelta(seconds=30)


def _not_from(channels: ChannelMap, env: CommandEnvelope, sender: str | None, prefix: str | None) -> str | None:
    """Why this command may not be believed as sent; None when it may: a gateway's channel speaks only
    for that channel's players, and a gateway's broker user only for its own channel."""
    return _foreign_player(channels, env) or _not_sent_by(channels, env, sender, prefix)


def _foreign_player(channels: ChannelMap, env: CommandEnvelope) -> str | None:
    """Whoever sent it, a gateway's channel speaks only for that channel's players: no gateway sends a
    command for a player of another channel (``tg:1`` on the email channel)."""
    claimed = channels_of(channels, env.actor) & channels.gateways
    if env.channel in channels.gateways and claimed and claimed != {env.channel}:
        return f"actor {env.actor[:60]!r} is no {env.channel} player, claimed on the {env.channel} channel"
    return None


def _not_sent_by(channels: ChannelMap, env: CommandEnvelope, sender: str | None, prefix: str | None) -> str | None:
    """Why ``sender`` (the broker user that published the command, as RabbitMQ verified it) may not
    have sent it. A gateway's own user (``<prefix>-telegram``, see services/broker_users.py) speaks
    only for its own channel and its own channel's players: the Telegram gateway cannot act as a mail
    player, or as the scheduler. The engine's user may send anything (the scheduler is in it); any
    other user (guest, an admin: a development broker) is trusted as before."""
    if not sender or not prefix or not sender.startswith(prefix + "-"):
        return None
    role = sender[len(prefix) + 1:]
    if role == "engine":
        return None
    if env.channel != role:
        return f"channel {env.channel!r} claimed by the {role} gateway's broker user {sender!r}"
    if channels_of(channels, env.actor) != {role}:
        return f"actor {env.actor[:60]!r} is no {role} player, claimed by broker user {sender!r}"
    return None


def _scheduler_may(env: CommandEnvelope, loaded: LoadedGame | None, now) -> bool:
    """A deadline or a reminder is believed only from the scheduler, and only when this engine's own
    clock agrees: a timeout once the open phase's deadline has passed, a reminder before it and
    no earlier than it says. Anything else (a gateway claiming to be the scheduler, a forged early
    timeout) changes nothing. A command for a phase that is over is left to the rules (ignored)."""
    if env.actor != SCHEDULER or env.channel != "scheduler":
        return False
    if loaded is None or env.phase_id != loaded.state.phase_id or loaded.state.over:
        return True  # stale or unknown: the rules and _remind ignore it anyway
    deadline = loaded.deadline_at
    if deadline is None:
        return False
    if env.command.type == "phase_timed_out":
        return deadline <= now + TIMER_EARLY
    return now < deadline <= now + timedelta(seconds=env.command.seconds_left) + REMINDER_SLACK


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


def _holds_nul(value) -> bool:
    """Whether a NUL character is anywhere in a command (PostgreSQL refuses it in every text column)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds_nul(v) for v in value)
    return False


def _settle(future: asyncio.Future, error: BaseException | None = None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(None)
