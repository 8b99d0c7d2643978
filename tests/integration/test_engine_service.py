"""The engine service on the in-process bus, against real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from sqlalchemy import update

from avalon.shared.bus import InProcessBus
from avalon.shared.protocol import EVENT_MODELS, CommandEnvelope, EventEnvelope, from_core_command, to_core_event
from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.engine import moves as moves_module
from avalon.services.engine.rules import Phase, replay_events
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.services.engine.rows import GameRow

from .engine_support import (
    lobby_commands,
    play_to_the_end,
    player_ids,
    wait_processed,
)


class Harness:
    """An engine service with its store and bus, and a subscriber that records events."""

    def __init__(self, url: str, bus: InProcessBus | None = None) -> None:
        self.url = url
        self.bus = bus or InProcessBus()
        self.store = Store(url)
        self.engine = EngineService(self.store, self.bus, DeadlineScheduler(self.bus), channels=channel_map())
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


async def test_a_command_on_a_channel_the_engine_does_not_know_is_dead_lettered(harness):
    create = lobby_commands("g4b", 5)[0]
    elsewhere = create.model_copy(update={"channel": "discord", "message_id": "elsewhere"})
    await harness.bus.send_raw_command(elsewhere.model_dump_json().encode())
    await harness.send_and_wait(create)
    await harness.bus.idle()
    assert len(await harness.bus.dead_letters()) == 1
    assert not await harness.store.seen("elsewhere")
    assert {e.caused_by for e in harness.seen if e.game_id == "g4b"} == {create.message_id}


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


async def seconds_left(store, game_id: str) -> int:
    """What the scheduler would say is left of the open phase: its deadline by the engine's clock."""
    from datetime import datetime, timezone

    deadline = (await store.load(game_id)).deadline_at
    return int((deadline - datetime.now(timezone.utc)).total_seconds())


async def test_a_gateway_claiming_to_be_the_scheduler_or_an_early_timeout_changes_nothing(harness):
    for envelope in lobby_commands("g7b", 5):
        await harness.send_and_wait(envelope)
    loaded = await harness.store.load("g7b")
    state = loaded.state
    forged = [
        CommandEnvelope(message_id="f1", game_id="g7b", actor="@scheduler", channel="telegram",
                        phase_id=state.phase_id, command={"type": "phase_timed_out"}),
        CommandEnvelope(message_id="f2", game_id="g7b", actor="@scheduler", channel="scheduler",
                        phase_id=state.phase_id, command={"type": "phase_timed_out"}),  # 10 minutes early
        CommandEnvelope(message_id="f3", game_id="g7b", actor="@scheduler", channel="email",
                        phase_id=state.phase_id, command={"type": "remind_phase", "seconds_left": 590}),
        CommandEnvelope(message_id="f4", game_id="g7b", actor="@scheduler", channel="scheduler",
                        phase_id=state.phase_id, command={"type": "remind_phase", "seconds_left": 60}),
    ]
    for envelope in forged:
        await harness.send_and_wait(envelope)
    await harness.bus.idle()
    after = await harness.store.load("g7b")
    assert after.state.phase_id == state.phase_id and after.version == loaded.version
    assert not [e for e in harness.seen if e.game_id == "g7b" and e.event.type in ("phase_reminder", "deadline_missed")]


async def test_the_scheduler_reminds_before_a_deadline_and_ignores_stale_reminders(harness):
    for envelope in lobby_commands("g8", 5):
        await harness.send_and_wait(envelope)
    state = (await harness.store.load("g8")).state
    left = await seconds_left(harness.store, "g8")
    remind = CommandEnvelope(message_id="remind:g8:x", game_id="g8", actor="@scheduler", channel="scheduler",
                             phase_id=state.phase_id, command={"type": "remind_phase", "seconds_left": left})
    stale = CommandEnvelope(message_id="remind:g8:y", game_id="g8", actor="@scheduler", channel="scheduler",
                            phase_id=state.phase_id - 1, command={"type": "remind_phase", "seconds_left": left})
    await harness.send_and_wait(remind)
    await harness.send_and_wait(stale)
    await harness.bus.idle()
    reminders = [e for e in harness.seen if e.event.type == "phase_reminder"]
    assert len(reminders) == 1
    assert reminders[0].event.waiting_for == (state.players[state.leader],)
    assert reminders[0].event.seconds_left == left


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
    out = subprocess.run([sys.executable, "-m", "avalon.services.cli", "export", "gx"], capture_output=True, text=True,
                         env={**os.environ, "DATABASE_URL": harness.url}, check=True).stdout
    envelopes = [EventEnvelope.model_validate(json.loads(line)) for line in out.splitlines()]
    assert envelopes[0].event.type == "game_created", "a finished game exports its seed and deal too"
    replayed = replay_events(to_core_event(e.event) for e in envelopes if e.event.type in EVENT_MODELS)
    final = (await harness.store.load("gx")).state
    assert (replayed.winner, replayed.cause, replayed.roles) == (final.winner, final.cause, final.roles)
    missing = subprocess.run([sys.executable, "-m", "avalon.services.cli", "export", "nope"], capture_output=True,
                             text=True, env={**os.environ, "DATABASE_URL": harness.url})
    assert missing.returncode == 2 and "no game" in missing.stderr


# -- commands in batches --------------------------------------------------------------------------

def _body(envelope: CommandEnvelope) -> bytes:
    return envelope.model_dump_json().encode()


def _interleaved(*streams: list[CommandEnvelope]) -> list[CommandEnvelope]:
    return [e for column in itertools.zip_longest(*streams) for e in column if e is not None]


async def _handle_at_once(engine: EngineService, envelopes: list[CommandEnvelope]) -> None:
    """Deliver these together, as a broker with a large prefetch does: they share a batch."""
    await asyncio.gather(*(engine.handle_raw(_body(e)) for e in envelopes))


def _proposal(game_id: str, state) -> CommandEnvelope:
    return CommandEnvelope(game_id=game_id, actor=state.players[state.leader], phase_id=state.phase_id,
                           command={"type": "propose_team", "team": list(state.players[:2]), "excalibur": None})


async def test_lobbies_of_three_games_handled_at_once_end_as_when_handled_one_at_a_time(harness, monkeypatch):
    monkeypatch.setattr(moves_module, "secrets", SimpleNamespace(randbits=lambda bits: 20260101))  # same deal
    sizes = (5, 6, 7)
    alone = [f"alone{n}" for n in sizes]
    together = [f"together{n}" for n in sizes]
    for game_id, n in zip(alone, sizes):
        for envelope in lobby_commands(game_id, n):
            await harness.engine.handle_raw(_body(envelope))
    await _handle_at_once(harness.engine, _interleaved(*(lobby_commands(g, n) for g, n in zip(together, sizes))))
    await harness.bus.idle()

    armed = harness.engine.scheduler.armed()
    for one, other in zip(alone, together):
        expected, got = await harness.store.load(one), await harness.store.load(other)
        assert got.state.phase is Phase.PROPOSAL
        assert replace(got.state, game_id=one) == expected.state
        assert got.version == expected.version
        log = await harness.store.event_log(other, include_internal=True)
        assert [e.seq for e in log] == list(range(1, got.version + 1)), "one gapless stream per game"
        reference = await harness.store.event_log(one, include_internal=True)
        assert [(e.seq, e.audience, e.event.model_dump_json().replace(other, one)) for e in log] == [
            (e.seq, e.audience, e.event.model_dump_json()) for e in reference]
        published = [e.seq for e in harness.seen if e.game_id == other]
        assert published == [e.seq for e in harness.seen if e.game_id == one], "the same events, in order, once"
        assert (await harness.store.deadline_of(other) is None) == (await harness.store.deadline_of(one) is None)
        assert f"{other}:timeout" in armed, "each game's new phase is armed"
    await harness.engine.flush_published()
    assert await harness.store.unpublished() == [], "every event was published"


async def test_the_same_command_twice_in_one_batch_changes_the_game_once(harness):
    for envelope in lobby_commands("twice1", 5) + lobby_commands("twice2", 5):
        await harness.engine.handle_raw(_body(envelope))
    state = (await harness.store.load("twice1")).state
    await harness.engine.handle_raw(_body(_proposal("twice1", state)))
    before = await harness.store.load("twice1")
    vote = CommandEnvelope(game_id="twice1", actor=state.players[0], command={"type": "cast_vote", "approve": True})
    other = _proposal("twice2", (await harness.store.load("twice2")).state)
    create = lobby_commands("twice3", 5)[0]

    await _handle_at_once(harness.engine, [vote, create, other, vote, create])
    await harness.bus.idle()

    after = await harness.store.load("twice1")
    assert after.version == before.version + 2  # VoteCast + PlayerVoted, once
    assert after.state.votes == {0: True}
    assert (await harness.store.load("twice2")).state.team == (0, 1), "the other game's command is applied"
    created = await harness.store.event_log("twice3", include_internal=True)
    assert [e.event.type for e in created] == ["game_created", "lobby_opened", "player_joined"]
    assert [e.seq for e in created] == [1, 2, 3] and (await harness.store.load("twice3")).version == 3
    for envelope in (vote, create):
        caused = [e for e in harness.seen if e.caused_by == envelope.message_id]
        assert caused and not any(e.event.type == "command_rejected" for e in caused)
        assert len({e.seq for e in caused}) == len(caused), "published once"


async def test_a_game_moved_by_another_engine_does_not_lose_the_other_commands_of_the_batch(harness):
    games = ["moved1", "moved2", "moved3"]
    for game_id in games:
        for envelope in lobby_commands(game_id, 5):
            await harness.engine.handle_raw(_body(envelope))
    states = {g: (await harness.store.load(g)).state for g in games}
    version = (await harness.store.load("moved2")).version

    other = await Harness(harness.url).start()  # a second engine instance on the same database
    try:
        remind = CommandEnvelope(message_id="remind:moved2:other", game_id="moved2", actor="@scheduler",
                                 channel="scheduler", phase_id=states["moved2"].phase_id,
                                 command={"type": "remind_phase",
                                          "seconds_left": await seconds_left(harness.store, "moved2")})
        await other.engine.handle_raw(_body(remind))  # the first engine's copy of moved2 is now stale
    finally:
        await other.close()
    assert (await harness.store.load("moved2")).version == version + 1

    proposals = [_proposal(g, states[g]) for g in games]
    await _handle_at_once(harness.engine, proposals)  # returns only once each is committed and published
    await harness.bus.idle()

    for game_id, proposal in zip(games, proposals):
        loaded = await harness.store.load(game_id)
        assert loaded.state.phase is Phase.VOTE and loaded.state.team == (0, 1), game_id
        log = await harness.store.event_log(game_id, include_internal=True)
        assert [e.seq for e in log] == list(range(1, loaded.version + 1)), "one gapless stream per game"
        caused = [e.seq for e in log if e.caused_by == proposal.message_id]
        assert caused and [e.seq for e in harness.seen if e.caused_by == proposal.message_id] == [
            e.seq for e in log if e.caused_by == proposal.message_id and e.audience.kind.value != "nobody"]
    moved = await harness.store.event_log("moved2")
    reminder = next(e for e in moved if e.event.type == "phase_reminder")
    assert reminder.seq == version + 1
    assert min(e.seq for e in moved if e.caused_by == proposals[1].message_id) == version + 2, \
        "decided again on top of the other engine's event"


async def test_a_lone_command_of_a_game_another_engine_moved_is_decided_again_on_the_new_state(harness):
    for envelope in lobby_commands("lone", 5):
        await harness.engine.handle_raw(_body(envelope))
    state = (await harness.store.load("lone")).state
    other = await Harness(harness.url).start()
    try:
        await other.engine.handle_raw(_body(CommandEnvelope(
            message_id="remind:lone:other", game_id="lone", actor="@scheduler", channel="scheduler",
            phase_id=state.phase_id,
            command={"type": "remind_phase", "seconds_left": await seconds_left(harness.store, "lone")})))
    finally:
        await other.close()
    proposal = _proposal("lone", state)
    await harness.engine.handle_raw(_body(proposal))  # alone in its batch: no error, applied
    loaded = await harness.store.load("lone")
    assert loaded.state.phase is Phase.VOTE and loaded.state.team == (0, 1)
    log = await harness.store.event_log("lone", include_internal=True)
    assert [e.seq for e in log] == list(range(1, loaded.version + 1))
    assert [e.event.type for e in log if e.caused_by == "remind:lone:other"] == ["phase_reminder"]


async def test_a_command_of_a_game_another_engine_moved_as_far_is_decided_again_not_failed(harness):
    for envelope in lobby_commands("race", 5):
        await harness.engine.handle_raw(_body(envelope))
    state = (await harness.store.load("race")).state
    await harness.engine.handle_raw(_body(_proposal("race", state)))
    first, second = (CommandEnvelope(game_id="race", actor=p, command={"type": "cast_vote", "approve": True})
                     for p in state.players[:2])
    other = await Harness(harness.url).start()
    try:
        await other.engine.handle_raw(_body(first))  # two events, as the stale engine's vote will have
    finally:
        await other.close()
    await harness.engine.handle_raw(_body(second))
    assert (await harness.store.load("race")).state.votes == {0: True, 1: True}


async def test_the_board_asked_in_the_same_batch_as_a_proposal_shows_the_vote_and_its_deadline(harness):
    for envelope in lobby_commands("gb", 5):
        await harness.engine.handle_raw(_body(envelope))
    state = (await harness.store.load("gb")).state
    ask = CommandEnvelope(game_id="gb", actor="test:p3", command={"type": "show_board"})
    await _handle_at_once(harness.engine, [_proposal("gb", state), ask])  # one batch: the vote opens, then the ask
    await harness.bus.idle()
    reply = next(e for e in harness.seen if e.caused_by == ask.message_id)
    assert reply.event.phase is Phase.VOTE
    assert reply.event.deadline_at == await harness.store.deadline_of("gb"), "the vote's deadline, not the proposal's"


async def test_a_flush_returns_only_once_a_flush_already_under_way_has_marked_its_events(harness, monkeypatch):
    mark = harness.store.mark_published
    entered, gate = asyncio.Event(), asyncio.Event()

    async def gated_mark(ids):
        if ids:
            entered.set()
            await gate.wait()  # the background flush is slow to commit
        await mark(ids)

    monkeypatch.setattr(harness.store, "mark_published", gated_mark)
    for envelope in lobby_commands("fl", 5):
        await harness.engine.handle_raw(_body(envelope))
    await asyncio.wait_for(entered.wait(), 5)  # the engine's own flush has taken the ids and waits on the database
    second = asyncio.create_task(harness.engine.flush_published())
    await asyncio.sleep(0.2)
    if second.done():
        assert await harness.store.unpublished(game_id="fl") == [], "a flush that returned has marked everything"
    gate.set()
    await second
    assert await harness.store.unpublished(game_id="fl") == []


async def test_ids_a_flush_could_not_mark_are_marked_by_the_next(harness, monkeypatch):
    for envelope in lobby_commands("fm", 5):
        await harness.engine.handle_raw(_body(envelope))
    await harness.bus.idle()
    mark = harness.store.mark_published

    async def failing_mark(ids):
        raise ConnectionError("database gone")

    monkeypatch.setattr(harness.store, "mark_published", failing_mark)
    with pytest.raises(ConnectionError):
        await harness.engine.flush_published()
    monkeypatch.setattr(harness.store, "mark_published", mark)
    await harness.engine.flush_published()
    assert await harness.store.unpublished(game_id="fm") == []


async def test_a_reminder_in_a_private_assassination_does_not_name_the_shooter(harness):
    """docs/rules.md section 5: with a private evil conference the table is not told who takes the
    shot; the reminder before its deadline must not tell it either (it named the shooter to the group)."""
    from avalon.shared.game import Card, CastVote, PlayCard
    from avalon.services.engine.rules import Phase as P
    from avalon.services.engine.simulate import random_command

    for envelope in lobby_commands("g-shot", 5):
        await harness.send_and_wait(envelope)
    rng = random.Random(3)
    for _ in range(400):  # everyone approves, every card succeeds: good wins three quests
        state = (await harness.store.load("g-shot")).state
        if state.phase is P.ASSASSINATION or state.over:
            break
        command = random_command(state, rng)
        if isinstance(command, CastVote):
            command = replace(command, approve=True)
        elif isinstance(command, PlayCard) and Card.SUCCESS in state.allowed_cards(state.seat_of[command.actor]):
            command = replace(command, card=Card.SUCCESS)
        await harness.send_and_wait(from_core_command(command, "g-shot"))
    state = (await harness.store.load("g-shot")).state
    assert state.phase is P.ASSASSINATION and state.options.conference.value == "private"
    await harness.send_and_wait(CommandEnvelope(
        message_id="remind:g-shot", game_id="g-shot", actor="@scheduler", channel="scheduler",
        phase_id=state.phase_id, command={"type": "remind_phase", "seconds_left": await seconds_left(harness.store,
                                                                                                    "g-shot")}))
    await harness.bus.idle()
    reminder = next(e for e in harness.seen if e.game_id == "g-shot" and e.event.type == "phase_reminder")
    assert reminder.event.waiting_for == (), "the shooter named to everyone"
