"""The record's side commands through the engine service (in-process bus, SQLite and PostgreSQL): games
played to their end are in the record; stats, leaderboard and history answer the one who asked alone;
a person the narrator does not know and another's hidden stats are refused; forgetting removes a
person from every view."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from avalon.shared.game.codes import game_code
from avalon.shared.protocol import CommandEnvelope, from_core_command
from avalon.services.engine import record_queries as q
from avalon.services.engine.rules import CreateGame, Join, Options, StartGame
from avalon.services.engine.simulate import random_command

from .engine_support import play_to_the_end, player_ids
from .test_engine_service import Harness

TABLE = "tg-500"


@pytest.fixture
async def played(db_url):
    h = await Harness(db_url).start()
    ids = player_ids(5)
    for n, game_id in enumerate(("r1", "r2")):
        host = ids[n]
        commands = [CreateGame(actor=host, game_id=game_id, seed=0, options=replace(Options(), lady=True),
                               table=TABLE)]
        commands += [Join(actor=p) for p in ids if p != host] + [StartGame(actor=host)]
        for command in commands:
            await h.send_and_wait(from_core_command(command, game_id))
        await play_to_the_end(h.send, h.store, game_id, seed=n + 1)
    yield h
    await h.close()


async def ask(h: Harness, actor: str, command: dict):
    env = CommandEnvelope(game_id=f"records:{TABLE}", actor=actor, command=command)
    await h.send_and_wait(env)
    await h.bus.idle()
    replies = [e for e in h.seen if e.caused_by == env.message_id]
    assert len(replies) == 1
    assert replies[0].audience.players == (actor,), "only the one who asked reads it"
    return replies[0]


async def test_stats_leaderboard_and_history_of_games_played_through_the_engine(played):
    h, p1 = played, "test:p1"
    reply = await ask(h, p1, {"type": "show_stats"})
    assert reply.event.type == "stats_shown" and reply.event.player == p1
    assert reply.event.games == 2
    mine = await q.person_stats(h.store.engine, p1)
    assert reply.event.wins == mine.wins and sum(r.games for r in reply.event.by_role) == 2
    assert [(s.players, s.games) for s in reply.event.by_size] == [(5, 2)]
    other = await ask(h, p1, {"type": "show_stats", "player": "test:p4"})
    assert other.event.type == "stats_shown" and other.event.player == "test:p4" and other.event.games == 2
    board = await ask(h, "test:p2", {"type": "show_leaderboard", "table": TABLE, "min_games": 2})
    assert board.event.type == "leaderboard_shown"
    assert sorted(l.player for l in board.event.leaders) == player_ids(5)
    assert set(board.people) >= set(player_ids(5)), "the people it names come with it"
    assert await q.leaderboard(h.store.engine, TABLE, min_games=3) == []
    hosted = await ask(h, p1, {"type": "show_leaderboard", "host": p1, "min_games": 1})
    assert hosted.event.host == p1 and sorted(l.player for l in hosted.event.leaders) == player_ids(5)
    assert all(l.games == 1 for l in hosted.event.leaders), "p1 hosted one of the two games"
    history = await ask(h, p1, {"type": "show_history", "table": TABLE, "count": 5})
    assert [g.code for g in history.event.games] == [game_code("r2"), game_code("r1")]
    for game, game_id in zip(history.event.games, ("r2", "r1")):
        end = (await h.store.event_log(game_id))[-1].event
        assert game.roles == end.roles and game.winner == end.winner and game.cause == end.cause


async def test_an_unknown_person_and_hidden_stats_are_refused_and_forgetting_empties_every_view(played):
    h = played
    unknown = await ask(h, "test:p1", {"type": "show_stats", "player": "test:nobody"})
    assert unknown.event.type == "command_rejected" and unknown.event.reason == "unknown_person"
    hidden = await ask(h, "test:p2", {"type": "hide_stats"})
    assert hidden.event.type == "stats_hidden" and hidden.event.hidden
    refused = await ask(h, "test:p1", {"type": "show_stats", "player": "test:p2"})
    assert refused.event.type == "command_rejected" and refused.event.reason == "hidden_stats"
    own = await ask(h, "test:p2", {"type": "show_stats"})
    assert own.event.type == "stats_shown" and own.event.hidden and own.event.games == 2, "their own still"
    board = await ask(h, "test:p1", {"type": "show_leaderboard", "table": TABLE, "min_games": 1})
    assert "test:p2" not in {l.player for l in board.event.leaders}
    shown = await ask(h, "test:p2", {"type": "hide_stats", "hidden": False})
    assert not shown.event.hidden
    assert (await ask(h, "test:p1", {"type": "show_stats", "player": "test:p2"})).event.type == "stats_shown"

    gone = await ask(h, "test:p3", {"type": "forget_me"})
    assert gone.event.type == "records_forgotten" and gone.event.games == 2
    board = await ask(h, "test:p1", {"type": "show_leaderboard", "table": TABLE, "min_games": 1})
    assert "test:p3" not in {l.player for l in board.event.leaders} and len(board.event.leaders) == 4
    history = await ask(h, "test:p1", {"type": "show_history", "table": TABLE})
    assert all("test:p3" not in dict(g.roles) and len(g.roles) == 4 for g in history.event.games)
    after = await ask(h, "test:p1", {"type": "show_stats", "player": "test:p3"})
    assert after.event.type == "command_rejected" and after.event.reason == "unknown_person"
    assert (await ask(h, "test:p3", {"type": "show_stats"})).event.games == 0


@pytest.mark.parametrize("bad", [{"type": "show_leaderboard", "table": ""},
                                 {"type": "show_leaderboard"},
                                 {"type": "show_leaderboard", "table": TABLE, "host": "test:p1"},
                                 {"type": "show_history", "table": TABLE, "count": 0},
                                 {"type": "show_stats", "player": ""}])
def test_malformed_record_commands_are_refused_by_the_schema(bad):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        CommandEnvelope(game_id="x", actor="test:p1", command=bad)


async def test_a_game_finished_after_an_engine_restart_is_recorded_once(db_url):
    first = await Harness(db_url).start()
    ids = player_ids(6)
    commands = [CreateGame(actor=ids[0], game_id="rr", seed=0, options=Options(), table=TABLE)]
    commands += [Join(actor=p) for p in ids[1:]] + [StartGame(actor=ids[0])]
    for command in commands:
        await first.send_and_wait(from_core_command(command, "rr"))
    rng = random.Random(5)
    for _ in range(8):  # a few moves of the first round
        loaded = await first.store.load("rr")
        await first.send_and_wait(from_core_command(random_command(loaded.state, rng), "rr"))
    assert not (await first.store.load("rr")).state.over
    await first.close()  # the engine stops mid-game
    second = await Harness(db_url).start()
    try:
        await play_to_the_end(second.send, second.store, "rr", seed=5)
        end = (await second.store.event_log("rr"))[-1].event
        past = await q.history(second.store.engine, TABLE)
        assert [g.game_id for g in past] == ["rr"] and past[0].roles == tuple((p, r.value) for p, r in end.roles)
        for person, _ in end.roles:
            assert (await q.person_stats(second.store.engine, person)).games == 1
    finally:
        await second.close()
