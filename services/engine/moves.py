"""The game's own commands (``create_game`` to ``assassinate``, and a deadline's ``phase_timed_out``):
the rules decide, and what they decided is staged for the batch's commit.

Accepted, a command's events are numbered in its game's stream, each with its readers (and, for the
events that change who is at the table, what the engine knows of each of them); a phase that opens
offers each actor their choices, privately; the game's deadline moves with its phase. Rejected, the
actor alone hears why. A command that changes nothing (a stale deadline) is ignored.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta

from avalon.shared.protocol import CommandEnvelope, audience_model, event_body, to_core_command
from avalon.services.engine.rules import Accepted, Audience, apply, new_game, pending_players
from avalon.shared.game import events as core_events
from avalon.shared.game.errors import Rejection

from .batcher import StagedBatch
from .cache import GameCache
from .deadlines import Deadlines
from .envelopes import Envelopes
from .people import People
from .routing import SEATING_EVENTS, choices_for, readers_of
from .store import KEEP, LoadedGame

#: What the engine answers a command for a game it does not have.
UNKNOWN_GAME = ("unknown_game", {}, "There is no such game.")
#: The events after which the actors of the open phase are offered their choices.
OPENING_EVENTS = (core_events.PhaseOpened, core_events.ShotHanded, core_events.GameResumed)


class GameMoves:
    def __init__(self, games: GameCache, people: People, envelopes: Envelopes, deadlines: Deadlines,
                 clock: Callable[[], datetime]) -> None:
        self.games = games
        self.people = people
        self.envelopes = envelopes
        self.deadlines = deadlines
        self.clock = clock  # the engine's now: deadlines are set by it

    async def play(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        seed = None
        if env.command.type == "create_game":
            if loaded is None:
                seed = secrets.randbits(63)
                loaded = LoadedGame(new_game(), 0, seed, env.channel)
        elif loaded is None:
            batch.reject(env, self.envelopes.rejection(env, *UNKNOWN_GAME))
            return
        command = to_core_command(env, seed or loaded.seed)
        if env.command.type == "pause_game":  # the open phase's time left, by the engine's clock
            left = (loaded.deadline_at - self.clock()).total_seconds() if loaded.deadline_at else 0
            command = dataclasses.replace(command, seconds_left=max(0, math.ceil(left)))
        result = apply(loaded.state, command)
        if isinstance(result, Rejection):
            batch.reject(env, self.envelopes.rejection(env, result.reason, result.params, result.message))
            return
        if not result.events:  # e.g. a stale deadline: nothing happens
            batch.ignore(env)
            return
        await self._accept(env, loaded, result, seed, batch)

    async def _accept(self, env: CommandEnvelope, loaded: LoadedGame, result: Accepted, seed: int | None,
                      batch: StagedBatch) -> None:
        now = self.clock()
        state = result.state
        deadline_at = KEEP
        envelopes = []
        sent = dict(loaded.sent)
        seq = loaded.version
        audience_of = state.players + state.spectators if state.spectators else state.players
        for event in result.events:
            seq += 1
            deadline = None
            if isinstance(event, core_events.PhaseOpened):
                deadline = now + timedelta(seconds=event.timeout_seconds) if event.timeout_seconds else None
                deadline_at = deadline
            elif isinstance(event, core_events.GameResumed):
                deadline = now + timedelta(seconds=event.seconds_left) if event.seconds_left else None
                deadline_at = deadline
            elif isinstance(event, core_events.GamePaused):
                deadline_at = None  # the clock stops: nothing fires until the resume
            readers = readers_of(event, audience_of)
            people = await self.people.of(readers) if isinstance(event, SEATING_EVENTS) else None
            envelopes.append(self.envelopes.in_stream(
                env, loaded, sent, seq, event_body(event), audience_model(event.audience), readers, at=now,
                people=people, deadline_at=deadline))
        opening = any(isinstance(e, OPENING_EVENTS) for e in result.events)
        newcomers = () if opening else tuple(e.player for e in result.events if isinstance(e, core_events.SeatTaken))
        if opening or newcomers:
            waiting = pending_players(state)
            for player in (waiting if opening else [p for p in newcomers if p in waiting]):  # buttons, privately
                if state.seated(player) is None:
                    continue  # handed over: the missed-deadline rule plays the seat
                seq += 1
                audience = audience_model(Audience.to(player))
                envelopes.append(self.envelopes.in_stream(
                    env, loaded, sent, seq, choices_for(state, player), audience, audience.players, at=now))
        if state.over:
            deadline_at = None
        batch.accept(env, envelopes, state=state, expected_version=loaded.version, new_game_seed=seed,
                     origin_channel=loaded.origin_channel, deadline_at=deadline_at)
        self.games.remember(env.game_id, LoadedGame(state, seq, loaded.seed, loaded.origin_channel,
                                                    loaded.deadline_at if deadline_at is KEEP else deadline_at, sent))
        batch.after_commit(env.game_id, self.deadlines.after_commit(env.game_id, state, deadline_at))
