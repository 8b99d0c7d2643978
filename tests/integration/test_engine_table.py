"""The people around the table through the engine service, on real SQLite and PostgreSQL: a pause
stops the scheduler's clock and a resume gives the phase its time back; a spectator reads every
public event and nothing private; a substitute gets the seat's knowledge once and the one replaced
reads the takeover and is refused after it."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime, timezone

from avalon.services.engine.rules import Options, Phase
from avalon.services.engine.simulate import random_command
from avalon.shared.protocol import CommandEnvelope, from_core_command

from .engine_support import lobby_commands, player_ids, wait_processed
from .test_engine_service import Harness, harness  # noqa: F401 - the fixture

HOST = player_ids(5)[0]


def command(game_id: str, actor: str, body: dict, **kw) -> CommandEnvelope:
    return CommandEnvelope(game_id=game_id, actor=actor, command=body, **kw)


def of_game(h: Harness, game_id: str, kind: str | None = None) -> list:
    return [e for e in h.seen if e.game_id == game_id and (kind is None or e.event.type == kind)]


async def started(h: Harness, game_id: str, **options) -> None:
    for envelope in lobby_commands(game_id, 5, replace(Options(), **options)):
        await h.send_and_wait(envelope)


async def test_a_pause_stops_the_clock_across_the_deadline_and_the_resume_gives_the_time_back(harness):
    await started(harness, "t1")
    before = await harness.store.load("t1")
    assert "t1:timeout" in harness.engine.scheduler.armed()
    left = (before.deadline_at - datetime.now(timezone.utc)).total_seconds()

    await harness.send_and_wait(command("t1", HOST, {"type": "pause_game"}))
    await harness.bus.idle()
    paused = await harness.store.load("t1")
    assert paused.state.paused and paused.deadline_at is None
    assert not [j for j in harness.engine.scheduler.armed() if j.startswith("t1:")], "nothing fires while paused"
    told = of_game(harness, "t1", "game_paused")[-1].event
    assert abs(told.seconds_left - left) <= 3

    # the deadline armed before the pause comes due anyway (an engine that had already sent it): nothing
    await harness.send_and_wait(CommandEnvelope(
        message_id=f"timeout:t1:{before.state.phase_id}", game_id="t1", actor="@scheduler", channel="scheduler",
        phase_id=before.state.phase_id, command={"type": "phase_timed_out"}))
    assert (await harness.store.load("t1")).version == paused.version
    leader = before.state.players[before.state.leader]
    refusal = command("t1", leader, {"type": "propose_team", "team": list(before.state.players[:2])})
    await harness.send_and_wait(refusal)
    await harness.bus.idle()
    assert [e.event.reason for e in harness.seen if e.caused_by == refusal.message_id] == ["game_paused"]

    await harness.send_and_wait(command("t1", HOST, {"type": "resume_game"}))
    await harness.bus.idle()
    resumed = await harness.store.load("t1")
    assert not resumed.state.paused and resumed.state.phase_id == before.state.phase_id + 1
    again = (resumed.deadline_at - datetime.now(timezone.utc)).total_seconds()
    assert abs(again - told.seconds_left) <= 3, "the phase has the time it had left"
    assert "t1:timeout" in harness.engine.scheduler.armed()
    offered = [e for e in of_game(harness, "t1", "choices_offered") if e.event.phase_id == resumed.state.phase_id]
    assert [e.audience.players for e in offered] == [(leader,)], "the leader is offered the proposal again"


async def test_a_spectator_reads_every_public_event_and_nothing_private(harness):
    await started(harness, "t2", spectators=True)
    await harness.send_and_wait(command("t2", "test:friend", {"type": "watch"}))
    joined = of_game(harness, "t2", "spectator_joined")[-1]
    rng = random.Random(3)
    while not (loaded := await harness.store.load("t2")).state.over:
        envelope = from_core_command(random_command(loaded.state, rng), "t2")
        await harness.send_and_wait(envelope)
    await harness.bus.idle()
    after = [e for e in of_game(harness, "t2") if e.seq >= joined.seq]
    public = [e for e in after if e.audience.kind.value == "public"]
    assert len(public) > 20 and all("test:friend" in e.readers for e in public)
    assert not [e for e in after if e.audience.kind.value != "public" and "test:friend" in e.readers]
    assert {e.event.type for e in public} >= {"phase_opened", "votes_revealed", "game_ended"}


async def test_a_substitute_learns_the_seat_once_and_the_one_replaced_is_told_and_refused(harness):
    await started(harness, "t3")
    state = (await harness.store.load("t3")).state
    seat = next(i for i in (2, 3) if state.players[i] != HOST)
    old = state.players[seat]
    await harness.send_and_wait(command("t3", HOST, {"type": "open_seat", "player": old}))
    take = command("t3", "test:sub", {"type": "take_seat", "player": old})
    await harness.send_and_wait(take)
    await harness.send_and_wait(take)  # the same message again (a gateway's retry): nothing doubles
    await harness.bus.idle()
    private = [e for e in of_game(harness, "t3") if "test:sub" in e.readers and e.audience.kind.value == "players"]
    offered = ["choices_offered"] if state.leader == seat else []  # a leader's seat: the proposal is theirs now
    assert [e.event.type for e in private] == ["role_assigned", "seat_briefing", *offered]
    assert private[0].event.role == state.roles[seat]
    assert not [e for e in of_game(harness, "t3", "seat_briefing") if set(e.readers) != {"test:sub"}]
    taken = of_game(harness, "t3", "seat_taken")
    assert len(taken) == 1 and old in taken[0].readers and "test:sub" in taken[0].readers
    assert "test:sub" in taken[0].people and taken[0].event.seat == seat
    stale = command("t3", old, {"type": "void_game"})
    await harness.send_and_wait(stale)
    await harness.bus.idle()
    answer = [e for e in harness.seen if e.caused_by == stale.message_id]
    assert [(e.event.reason, e.event.params) for e in answer] == [("seat_taken", {"player": "test:sub"})]
    assert answer[0].audience.players == (old,)
    assert (await harness.store.load("t3")).state.phase is Phase.PROPOSAL


async def test_the_host_invites_an_address_to_an_open_seat_and_the_invitee_takes_it(harness):
    await started(harness, "t4")
    state = (await harness.store.load("t4")).state
    seat = next(i for i in (3, 4) if state.players[i] != HOST)
    old, newcomer = state.players[seat], "mail:nina@example.org"
    early = command("t4", HOST, {"type": "invite", "player": newcomer, "seat": old})
    await harness.send_and_wait(early)
    await harness.send_and_wait(command("t4", HOST, {"type": "open_seat", "player": old}))
    invite = command("t4", HOST, {"type": "invite", "player": newcomer, "seat": old})
    await harness.send_and_wait(invite)
    await harness.bus.idle()
    assert [e.event.reason for e in harness.seen if e.caused_by == early.message_id] == ["seat_not_open"]
    [invited] = [e for e in harness.seen if e.caused_by == invite.message_id]
    assert invited.event.type == "player_invited" and invited.event.seat == old
    assert set(invited.readers) == {HOST, newcomer}
    await harness.send_and_wait(command("t4", newcomer, {"type": "take_seat", "player": old}, channel="email"))
    after = (await harness.store.load("t4")).state
    assert after.players[seat] == newcomer and after.former == {old: newcomer}
