"""The engine service on the in-process bus, against real SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import update

from shared.bus import InProcessBus
from shared.protocol import EVENT_MODELS, CommandEnvelope, EventEnvelope, to_core_event
from services.engine.deadlines import DeadlineScheduler
from services.engine.rules import Phase, replay_events
from services.engine.service import EngineService
from services.engine.store import Store
from services.engine.tables import GameRow

from .engine_support import (
    create_pg_database,
    drop_pg_database,
    lobby_commands,
    play_to_the_end,
    player_ids,
    wait_processed,
)


@pytest.fixture(params=["sqlite", "postgres"])
async def db_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}"
        return
    url, name = await create_pg_database()
    yield url
    await drop_pg_database(name)


class Harness:
    """An engine service with its store and bus, and a subscriber that records events."""

    def __init__(self, url: str, bus: InProcessBus | None = None) -> None:
        self.url = url
        self.bus = bus or InProcessBus()
        self.store = Store(url)
        self.engine = EngineService(self.store, self.bus, DeadlineScheduler(self.bus))
        self.seen: list = []

    async def start(self, subscribe: bool = True) -> "Harness":
        if subscribe:
            async def record(envelope):
                self.seen.append(envelope)
            await self.bus.subscribe_events("recorder", "test.#", record)
        await self.engine.start()
        return self

    async def send(self, envelope: CommandEnvelope) -> None:
        await self.bus.send_command(envelope)

    async def send_and_wait(self, envelope: CommandEnvelope) -> None:
        await self.send(envelope)
        await wait_processed(self.store, envelope.message_id)

    async def close(self) -> None:
        await self.engine.stop()
        await self.bus.close()
        await self.store.close()


@pytest.fixture
async def harness(db_url):
    h = await Harness(db_url).start()
    yield h
    await h.close()


async def test_a_whole_game_is_played_through_the_engine_service(harness):
    for envelope in lobby_commands("g1", 7):
        await harness.send_and_wait(envelope)
    steps = await play_to_the_end(harness.send, harness.store, "g1")
    assert steps > 20
    log = await harness.store.event_log("g1", include_internal=True)
    assert [e.seq for e in log] == list(range(1, len(log) + 1)), "one gapless stream per game"
    assert log[-1].event.type == "game_ended"
    replayed = replay_events(to_core_event(e.event) for e in log if e.event.type in EVENT_MODELS)
    loaded = await harness.store.load("g1")
    assert replayed.phase is Phase.ENDED
    assert (replayed.winner, replayed.cause, replayed.quest_results) == (
        loaded.state.winner, loaded.state.cause, loaded.state.quest_results)
    await harness.bus.idle()
    public = [e for e in harness.seen if e.audience.kind.value == "public"]
    assert [e.seq for e in public] == sorted(e.seq for e in public)
    assert public[-1].event.type == "game_ended"
    assert not any(e.event.type in ("game_created", "dealt") for e in harness.seen), "the seed never leaves"


async def test_the_same_command_delivered_twice_changes_the_game_once(harness):
    for envelope in lobby_commands("g2", 5):
        await harness.send_and_wait(envelope)
    state = (await harness.store.load("g2")).state
    voter = state.players[0]
    leader = state.players[state.leader]
    team = state.players[:2]
    propose = CommandEnvelope(game_id="g2", actor=leader, phase_id=state.phase_id,
                              command={"type": "propose_team", "team": list(team), "excalibur": None})
    await harness.send_and_wait(propose)
    before = await harness.store.load("g2")
    vote = CommandEnvelope(game_id="g2", actor=voter, command={"type": "cast_vote", "approve": True})
    await harness.send_and_wait(vote)
    await harness.send_and_wait(vote)  # delivered again: same message id
    await harness.bus.idle()
    after = await harness.store.load("g2")
    assert after.version == before.version + 2  # VoteCast + PlayerVoted, once
    assert after.state.votes == {0: True}


async def test_a_stale_button_press_is_refused_with_a_reason(harness):
    for envelope in lobby_commands("g3", 5):
        await harness.send_and_wait(envelope)
    state = (await harness.store.load("g3")).state
    old_phase = state.phase_id
    leader = state.players[state.leader]
    await harness.send_and_wait(CommandEnvelope(
        game_id="g3", actor=leader, phase_id=old_phase,
        command={"type": "propose_team", "team": list(state.players[:2]), "excalibur": None}))
    before = await harness.store.load("g3")
    stale = CommandEnvelope(game_id="g3", actor=leader, phase_id=old_phase,
                            command={"type": "propose_team", "team": list(state.players[1:3]), "excalibur": None})
    await harness.send_and_wait(stale)
    await harness.bus.idle()
    after = await harness.store.load("g3")
    assert after.version == before.version and after.state.team == before.state.team
    replies = [e for e in harness.seen if e.caused_by == stale.message_id]
    assert len(replies) == 1
    reply = replies[0]
    assert reply.event.type == "command_rejected" and reply.event.reason.value == "stale_phase"
    assert reply.audience.players == (leader,)
    assert "already over" in reply.event.message


async def test_a_malformed_message_is_dead_lettered_and_the_next_command_is_served(harness):
    await harness.bus.send_raw_command(b"\x00garbage{")
    await harness.bus.send_raw_command(b'{"v": 1, "game_id": "g4", "actor": "x", "command": {"type": "nope"}}')
    create = lobby_commands("g4", 5)[0]
    await harness.send_and_wait(create)
    assert len(await harness.bus.dead_letters()) == 2
    assert (await harness.store.load("g4")).state.phase is Phase.LOBBY


async def test_a_command_for_an_unknown_game_is_answered_and_changes_nothing(harness):
    join = CommandEnvelope(game_id="nope", actor="test:p9", command={"type": "join"})
    await harness.send_and_wait(join)
    await harness.bus.idle()
    assert await harness.store.load("nope") is None
    reply = next(e for e in harness.seen if e.caused_by == join.message_id)
    assert reply.event.reason == "unknown_game" and reply.audience.players == ("test:p9",)


class FailingBus(InProcessBus):
    async def publish_event(self, envelope, channel):
        raise ConnectionError("broker went away")


async def test_events_committed_but_not_published_are_published_after_a_restart(db_url):
    crashed = Harness(db_url, FailingBus())
    await crashed.start(subscribe=False)
    create = lobby_commands("g5", 5)[0]
    with pytest.raises(ConnectionError):
        await crashed.engine.handle_raw(create.model_dump_json().encode())
    assert await crashed.store.seen(create.message_id), "committed before publishing"
    await crashed.close()

    restarted = await Harness(db_url).start()
    try:
        await restarted.bus.idle()
        types = [e.event.type for e in restarted.seen]
        assert types == ["lobby_opened", "player_joined"]
        assert await restarted.store.unpublished() == []
    finally:
        await restarted.close()


async def test_a_deadline_that_fell_while_the_engine_was_down_fires_after_the_restart(db_url):
    first = await Harness(db_url).start()
    for envelope in lobby_commands("g6", 5):
        await first.send_and_wait(envelope)
    phase_id = (await first.store.load("g6")).state.phase_id
    await first.close()
    store = Store(db_url)  # time passes while the engine is down
    async with store.sessions() as session, session.begin():
        await session.execute(update(GameRow).where(GameRow.id == "g6").values(
            deadline_at=datetime.now(timezone.utc) - timedelta(minutes=5)))
    await store.close()

    second = await Harness(db_url).start()
    try:
        await wait_processed(second.store, f"timeout:g6:{phase_id}")
        log = await second.store.event_log("g6")
        missed = [e for e in log if e.event.type == "deadline_missed"]
        assert len(missed) == 1 and missed[0].event.phase_id == phase_id
        state = (await second.store.load("g6")).state
        assert state.phase is Phase.PROPOSAL and state.phase_id > phase_id
        assert state.vote_track == 1  # classic: a missed proposal counts as a rejection
        assert any(job.endswith(":timeout") for job in second.engine.scheduler.armed()), "the next phase is armed"
    finally:
        await second.close()


async def test_a_player_cannot_pretend_to_be_the_scheduler(harness):
    for envelope in lobby_commands("g7", 5):
        await harness.send_and_wait(envelope)
    state = (await harness.store.load("g7")).state
    forged = CommandEnvelope(game_id="g7", actor=player_ids(5)[1], phase_id=state.phase_id,
                             command={"type": "phase_timed_out"})
    await harness.send_and_wait(forged)
    assert (await harness.store.load("g7")).state.phase_id == state.phase_id


async def test_the_scheduler_reminds_before_a_deadline_and_ignores_stale_reminders(harness):
    for envelope in lobby_commands("g8", 5):
        await harness.send_and_wait(envelope)
    state = (await harness.store.load("g8")).state
    remind = CommandEnvelope(message_id="remind:g8:x", game_id="g8", actor="@scheduler", channel="scheduler",
                             phase_id=state.phase_id, command={"type": "remind_phase", "seconds_left": 60})
    stale = CommandEnvelope(message_id="remind:g8:y", game_id="g8", actor="@scheduler", channel="scheduler",
                            phase_id=state.phase_id - 1, command={"type": "remind_phase", "seconds_left": 60})
    await harness.send_and_wait(remind)
    await harness.send_and_wait(stale)
    await harness.bus.idle()
    reminders = [e for e in harness.seen if e.event.type == "phase_reminder"]
    assert len(reminders) == 1
    assert reminders[0].event.waiting_for == (state.players[state.leader],)
    assert reminders[0].event.seconds_left == 60


async def test_anyone_can_ask_for_the_board_and_only_they_get_it(harness):
    for envelope in lobby_commands("g9", 5):
        await harness.send_and_wait(envelope)
    before = await harness.store.load("g9")
    state = before.state
    ask = CommandEnvelope(game_id="g9", actor="test:p3", command={"type": "show_board"})
    await harness.send_and_wait(ask)
    await harness.bus.idle()
    reply = next(e for e in harness.seen if e.caused_by == ask.message_id)
    assert reply.event.type == "board_shown" and reply.audience.players == ("test:p3",)
    assert reply.event.leader == state.players[state.leader]
    assert reply.event.quest_sizes == (2, 3, 2, 3, 3) and reply.event.deadline_at is not None
    assert (await harness.store.load("g9")).version == before.version, "asking changes nothing"


async def test_a_finished_game_is_exported_and_replays_to_the_same_end(harness, tmp_path):
    import json
    import os
    import subprocess
    import sys

    for envelope in lobby_commands("gx", 5):
        await harness.send_and_wait(envelope)
    await play_to_the_end(harness.send, harness.store, "gx")
    out = subprocess.run([sys.executable, "-m", "services.cli", "export", "gx"], capture_output=True, text=True,
                         env={**os.environ, "DATABASE_URL": harness.url}, check=True).stdout
    envelopes = [EventEnvelope.model_validate(json.loads(line)) for line in out.splitlines()]
    assert envelopes[0].event.type == "game_created", "a finished game exports its seed and deal too"
    replayed = replay_events(to_core_event(e.event) for e in envelopes if e.event.type in EVENT_MODELS)
    final = (await harness.store.load("gx")).state
    assert (replayed.winner, replayed.cause, replayed.roles) == (final.winner, final.cause, final.roles)
    missing = subprocess.run([sys.executable, "-m", "services.cli", "export", "nope"], capture_output=True,
                             text=True, env={**os.environ, "DATABASE_URL": harness.url})
    assert missing.returncode == 2 and "no game" in missing.stderr
