"""The engine process on the real broker and PostgreSQL: crashes, duplicates, poison, downtime."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select, update

from avalon.shared.protocol import CommandEnvelope, from_core_command
from avalon.services.engine.rules import CastVote, Phase
from avalon.services.engine.simulate import random_command
from avalon.services.engine.store import Store
from avalon.services.engine.rows import GameRow, ProcessedCommand

from .conftest import rabbit_buses, require_rabbitmq
from .engine_support import create_pg_database, drop_pg_database, lobby_commands, wait_processed

ROOT = Path(__file__).resolve().parents[2]


class EngineProcess:
    """``avalon engine`` as a host runs it, in its own process."""

    def __init__(self, db_url: str, amqp_url: str, prefix: str, log: Path, **env: str) -> None:
        self.env = {**os.environ, "DATABASE_URL": db_url, "AMQP_URL": amqp_url, "BUS_PREFIX": prefix,
                    "LOG_LEVEL": "INFO", **env}
        self.log = log
        self.proc: subprocess.Popen | None = None

    async def start(self) -> None:
        """Returns once this start's ready line is logged (the log is appended to across restarts)."""
        readies = self.log.read_text().count("engine ready") + 1 if self.log.exists() else 1
        self.handle = open(self.log, "a")
        self.proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", "engine"], cwd=ROOT, env=self.env,
                                     stdout=self.handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while self.log.read_text().count("engine ready") < readies:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("engine did not start:\n" + self.log.read_text()[-3000:])
            await asyncio.sleep(0.05)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.handle.close()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.handle.close()


@pytest.fixture
async def stack(amqp_url, rabbit_prefix, tmp_path):
    await require_rabbitmq(amqp_url)
    db_url, db_name = await create_pg_database()
    engine = EngineProcess(db_url, amqp_url, rabbit_prefix, tmp_path / "engine.log")
    store = Store(db_url)
    async with rabbit_buses(amqp_url, rabbit_prefix) as make:
        client = await make()
        seen = []

        async def observe(envelope):
            seen.append(envelope)
        await client.subscribe_events("observer", "test.#", observe)
        await engine.start()
        try:
            yield engine, client, store, seen
        finally:
            engine.stop()
            await store.close()
    await drop_pg_database(db_name)


async def test_a_game_survives_sigkill_with_commands_in_flight_and_applies_each_exactly_once(stack):
    engine, client, store, seen = stack
    for envelope in lobby_commands("crash", 7):
        await client.send_command(envelope)
    await wait_processed(store, envelope.message_id)
    rng = random.Random(7)
    sent: list[CommandEnvelope] = []
    kills = 0
    for _round in range(400):
        state = (await store.load("crash")).state
        if state.over:
            break
        # a burst: every vote of a vote phase (or one command otherwise) sent at once
        burst = []
        if state.phase is Phase.VOTE:
            for i, player in enumerate(state.players):
                if i not in state.votes:
                    vote = CastVote(actor=player, approve=rng.random() < 0.7, phase_id=state.phase_id)
                    burst.append(from_core_command(vote, "crash"))
        else:
            burst.append(from_core_command(random_command(state, rng), "crash"))
        for envelope in burst:
            await client.send_command(envelope)
        sent.extend(burst)
        if len(burst) > 1 and kills < 3:
            await asyncio.sleep(rng.uniform(0.0, 0.05))  # part of the burst is applied, part is in flight
            engine.kill()
            kills += 1
            await engine.start()
        for envelope in burst:
            await wait_processed(store, envelope.message_id, timeout=30)
    state = (await store.load("crash")).state
    assert state.over and state.winner is not None
    assert kills == 3
    async with store.sessions() as session:
        processed = set((await session.execute(select(ProcessedCommand.message_id))).scalars())
    assert {e.message_id for e in sent} <= processed, "every command was handled"
    log = await store.event_log("crash", include_internal=True)
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    blocks: list[str] = []
    for e in log:
        if not blocks or blocks[-1] != e.caused_by:
            blocks.append(e.caused_by)
    assert len(blocks) == len(set(blocks)), "no command's events were applied twice"
    voters_per_phase: dict = {}
    for e in log:
        if e.event.type == "phase_opened":
            current = e.event.phase_id
        if e.event.type == "vote_cast":
            voters_per_phase.setdefault(current, []).append(e.event.player)
    assert voters_per_phase and all(len(v) == len(set(v)) for v in voters_per_phase.values())


async def test_the_same_command_delivered_twice_over_the_broker_changes_the_game_once(stack):
    engine, client, store, seen = stack
    for envelope in lobby_commands("dup", 5):
        await client.send_command(envelope)
    await wait_processed(store, envelope.message_id)
    before = await store.load("dup")
    leader = before.state.players[before.state.leader]
    propose = CommandEnvelope(game_id="dup", actor=leader, phase_id=before.state.phase_id,
                              command={"type": "propose_team", "team": list(before.state.players[:2]),
                                       "excalibur": None})
    await client.send_command(propose)
    await client.send_command(propose)
    await wait_processed(store, propose.message_id)
    marker = lobby_commands("other", 5)[0]  # a later command: once it is done, the duplicate was too
    await client.send_command(marker)
    await wait_processed(store, marker.message_id)
    after = await store.load("dup")
    assert after.state.phase is Phase.VOTE
    log = await store.event_log("dup")
    assert sum(1 for e in log if e.event.type == "team_proposed") == 1


async def test_a_malformed_message_is_dead_lettered_and_the_next_command_is_served(stack):
    engine, client, store, seen = stack
    await client.send_raw_command(b"not json at all")
    create = lobby_commands("poison", 5)[0]
    await client.send_command(create)
    await wait_processed(store, create.message_id)
    deadline = time.monotonic() + 10
    dead = []
    while not dead and time.monotonic() < deadline:
        dead = await client.dead_letters()
        await asyncio.sleep(0.1)
    assert dead == [b"not json at all"]


async def test_a_stale_command_for_an_earlier_phase_is_refused_with_a_reason(stack):
    engine, client, store, seen = stack
    for envelope in lobby_commands("stale", 5):
        await client.send_command(envelope)
    await wait_processed(store, envelope.message_id)
    state = (await store.load("stale")).state
    leader = state.players[state.leader]
    first = CommandEnvelope(game_id="stale", actor=leader, phase_id=state.phase_id,
                            command={"type": "propose_team", "team": list(state.players[:2]), "excalibur": None})
    again = CommandEnvelope(game_id="stale", actor=leader, phase_id=state.phase_id,
                            command={"type": "propose_team", "team": list(state.players[2:4]), "excalibur": None})
    await client.send_command(first)
    await client.send_command(again)
    await wait_processed(store, again.message_id)
    deadline = time.monotonic() + 10
    while not any(e.caused_by == again.message_id for e in seen) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    reply = next(e for e in seen if e.caused_by == again.message_id)
    assert reply.event.type == "command_rejected" and reply.event.reason.value == "stale_phase"
    assert reply.audience.players == (leader,)
    assert (await store.load("stale")).state.team == (0, 1)


async def test_a_deadline_that_fell_while_the_engine_was_down_fires_after_the_restart(stack):
    engine, client, store, seen = stack
    for envelope in lobby_commands("late", 5):
        await client.send_command(envelope)
    await wait_processed(store, envelope.message_id)
    phase_id = (await store.load("late")).state.phase_id
    engine.kill()
    async with store.sessions() as session, session.begin():
        await session.execute(update(GameRow).where(GameRow.id == "late").values(
            deadline_at=datetime.now(timezone.utc) - timedelta(minutes=1)))
    await engine.start()
    await wait_processed(store, f"timeout:late:{phase_id}", timeout=30)
    log = await store.event_log("late")
    assert [e.event.phase_id for e in log if e.event.type == "deadline_missed"] == [phase_id]
    assert (await store.load("late")).state.phase_id > phase_id


async def test_a_restarted_engine_says_it_is_ready_only_once_its_open_deadlines_are_armed(stack):
    engine, client, store, seen = stack
    for envelope in lobby_commands("armed", 5):
        await client.send_command(envelope)
    await wait_processed(store, envelope.message_id)
    engine.kill()
    before = len(engine.log.read_text())
    await engine.start()
    second = engine.log.read_text()[before:]  # the restart's lines
    served, ready = second.find("served here: 1 deadline(s) armed"), second.find("engine ready")
    assert -1 < served < ready, second[-2000:]
