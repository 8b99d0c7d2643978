"""The engine service: consume a command, decide, persist, then publish.

For each command, under the game's lock: a command id seen before is dropped;
otherwise load the game, ``apply`` the rules, and commit the new state, the
events and the command id in one transaction; then publish the events from the
outbox. Events committed but not yet published (a crash between commit and
publish) are published on the next start. A rejection goes back to the actor
alone, as an event with its reason.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict
from contextvars import ContextVar
from datetime import timedelta

from pydantic import ValidationError

from shared.bus import Bus, PoisonMessage, Unroutable
from shared.protocol import (
    CommandEnvelope,
    CommandRejected,
    EventEnvelope,
    INTERNAL_EVENTS,
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
from services.engine.rules import events as core_events
from services.engine.rules.errors import Rejection

from .deadlines import DeadlineScheduler
from .group_commit import GroupCommit
from .routing import ROUTED as _ROUTED
from .routing import channels_of, choices_for
from .side_commands import SideCommands
from .store import KEEP, Conflict, Duplicate, LoadedGame, Outgoing, Store

log = logging.getLogger(__name__)

#: The events the command being handled (in this task) committed and must publish.
_OUTGOING: ContextVar[list[Outgoing]] = ContextVar("outgoing")

class EngineService(SideCommands):
    def __init__(self, store: Store, bus: Bus, scheduler: DeadlineScheduler | None = None, *,
                 cache_size: int = 20_000, prefetch: int = 512) -> None:
        self.store = store
        self.bus = bus
        self.scheduler = scheduler
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        self._cache: OrderedDict[str, LoadedGame] = OrderedDict()
        self._cache_size = cache_size
        self.prefetch = prefetch  # commands in flight: many games at once, each game in order
        self._extra_channels: dict[str, set[str]] = {}
        self._published: list[int] = []  # published, not yet marked in the outbox
        self._dirty: set[str] = set()  # games with events the bus did not take
        self._flusher: asyncio.Task | None = None
        self._group = GroupCommit(store)

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
        await self.flush_published()

    # -- one command -----------------------------------------------------------------

    async def handle_raw(self, body: bytes) -> None:
        try:
            envelope = CommandEnvelope.model_validate_json(body)
        except ValidationError as error:
            log.warning("malformed command dead-lettered: %s", error.errors()[:3])
            raise PoisonMessage(str(error)) from error
        lock = self._acquire(envelope.game_id)
        try:
            async with lock:
                if envelope.game_id in self._dirty:  # an earlier publish failed: keep the order
                    await self.publish_pending(envelope.game_id)
                outgoing: list[Outgoing] = []
                token = _OUTGOING.set(outgoing)
                try:
                    await self.handle(envelope)
                finally:
                    _OUTGOING.reset(token)
                await self._publish(envelope.game_id, outgoing)
        finally:
            self._release(envelope.game_id)

    async def _commit(self, **kwargs) -> None:
        """Commit (grouped with other games' commands) and note what the command has to publish."""
        _OUTGOING.get().extend(await self._group.commit(kwargs))

    async def _publish(self, game_id: str, outgoing: list[Outgoing]) -> None:
        """Publish what a command just committed, in order; the outbox keeps it if the bus fails."""
        by_channel: dict[str, list[EventEnvelope]] = {}
        for item in outgoing:
            for channel in item.channels:
                by_channel.setdefault(channel, []).append(item.envelope)
        try:
            for channel, envelopes in by_channel.items():
                try:
                    await self.bus.publish_events(envelopes, channel)
                except Unroutable:
                    log.warning("no %s subscriber for %s", channel, envelopes[0].message_id)
        except Exception:
            self._dirty.add(game_id)
            raise
        self._published.extend(item.id for item in outgoing)
        if len(self._published) >= 500:
            await self.flush_published()

    async def flush_published(self) -> None:
        """Mark published events in the outbox, in one statement for many commands."""
        ids, self._published = self._published, []
        await self.store.mark_published(ids)

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            try:
                await self.flush_published()
                for game_id in list(self._dirty):
                    await self._retry_dirty(game_id)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("outbox upkeep failed; retrying")

    async def _retry_dirty(self, game_id: str) -> None:
        lock = self._acquire(game_id)
        try:
            async with lock:
                await self.publish_pending(game_id)
        finally:
            self._release(game_id)

    def _acquire(self, game_id: str) -> asyncio.Lock:
        lock, users = self._locks.get(game_id, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[game_id] = (lock, users + 1)
        return lock

    def _release(self, game_id: str) -> None:
        lock, users = self._locks[game_id]
        if users <= 1:
            del self._locks[game_id]
        else:
            self._locks[game_id] = (lock, users - 1)

    async def handle(self, env: CommandEnvelope) -> None:
        for _attempt in range(3):
            try:
                await self._handle_once(env)
                return
            except Duplicate:
                return
            except Conflict:
                self._cache.pop(env.game_id, None)  # someone else moved the game: reload
        raise RuntimeError(f"game {env.game_id} kept changing under command {env.message_id}")

    async def _handle_once(self, env: CommandEnvelope) -> None:
        kind = env.command.type
        if kind == "update_profile":
            await self._update_profile(env)
            return
        loaded = await self._load(env.game_id)
        if kind == "remind_phase":
            await self._remind(env, loaded)
            return
        if kind == "show_board":
            await self._show_board(env, loaded)
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
        now = utcnow()
        state = result.state
        deadline_at = KEEP
        envelopes = []
        seq = loaded.version
        for event in result.events:
            seq += 1
            deadline = None
            if isinstance(event, core_events.PhaseOpened):
                deadline = now + timedelta(seconds=event.timeout_seconds) if event.timeout_seconds else None
                deadline_at = deadline
            envelope = EventEnvelope(
                message_id=f"{env.game_id}:{seq}", game_id=env.game_id, seq=seq, occurred_at=now,
                audience=audience_model(event.audience), caused_by=env.message_id, deadline_at=deadline,
                event=event_body(event))
            envelopes.append((envelope, self._channels(envelope, state, loaded.origin_channel)))
        if any(isinstance(e, (core_events.PhaseOpened, core_events.ShotHanded)) for e in result.events):
            for player in pending_players(state):  # each actor's buttons, privately
                seq += 1
                envelope = EventEnvelope(
                    message_id=f"{env.game_id}:{seq}", game_id=env.game_id, seq=seq, occurred_at=now,
                    audience=audience_model(Audience.to(player)), caused_by=env.message_id,
                    event=choices_for(state, player))
                envelopes.append((envelope, self._channels(envelope, state, loaded.origin_channel)))
        if state.over:
            deadline_at = None
        await self._commit(
            game_id=env.game_id, message_id=env.message_id, outcome="accepted", events=envelopes, state=state,
            expected_version=loaded.version, new_game_seed=seed, origin_channel=loaded.origin_channel,
            deadline_at=deadline_at)
        self._remember(env.game_id, LoadedGame(state, seq, loaded.seed, loaded.origin_channel))
        if self.scheduler is not None:
            if state.over or deadline_at is None:
                self.scheduler.disarm(env.game_id)
            elif deadline_at is not KEEP:
                self.scheduler.arm(env.game_id, state.phase_id, deadline_at, state.timeout_seconds)

    async def _reply_rejected(self, env: CommandEnvelope, loaded: LoadedGame | None, reason, params,
                              message: str) -> None:
        body = CommandRejected(command_type=env.command.type, reason=reason,
                               params={k: getattr(v, "value", v) for k, v in params.items()}, message=message)
        envelope = EventEnvelope(
            message_id=f"rejected:{env.message_id}", game_id=env.game_id, seq=0, occurred_at=utcnow(),
            audience=audience_model(Audience.to(env.actor)), caused_by=env.message_id, event=body)
        channels = channels_of(env.actor) | {env.channel}
        if env.actor.startswith("@"):  # the scheduler's own stale messages need no reply
            channels = set()
        await self._commit(game_id=env.game_id, message_id=env.message_id, outcome="rejected",
                                events=[(envelope, tuple(sorted(c for c in channels if c in _ROUTED)))])

    # -- loading, routing, publishing --------------------------------------------------

    async def _load(self, game_id: str) -> LoadedGame | None:
        loaded = self._cache.get(game_id)
        if loaded is not None:
            self._cache.move_to_end(game_id)
            return loaded
        loaded = await self.store.load(game_id)
        if loaded is not None:
            self._remember(game_id, loaded)
        return loaded

    def _remember(self, game_id: str, loaded: LoadedGame) -> None:
        self._cache[game_id] = loaded
        self._cache.move_to_end(game_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _channels(self, envelope: EventEnvelope, state, origin: str) -> tuple[str, ...]:
        if envelope.event.type in INTERNAL_EVENTS or envelope.audience.kind is AudienceKind.NOBODY:
            return ()
        if envelope.audience.kind is AudienceKind.PUBLIC:
            people = state.players
            channels = {origin}
        else:
            people = envelope.audience.players
            channels = set()
        for person in people:
            channels |= channels_of(person) | self._extra_channels.get(person, set())
        return tuple(sorted(channels & _ROUTED))

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
            done = []
            for item in batch:
                for channel in item.channels:
                    try:
                        await self.bus.publish_event(item.envelope, channel)
                    except Unroutable:
                        log.warning("no %s subscriber for %s", channel, item.envelope.message_id)
                done.append(item.id)
            await self.store.mark_published(done)
            published += len(done)
