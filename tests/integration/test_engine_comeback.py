"""A player's role card and open choices sent to them again (show_role, show_choices): to them
alone, as dealt and as offered, changing nothing; asked by anyone else, refused (SQLite and PostgreSQL)."""

from __future__ import annotations

from avalon.shared.protocol import CommandEnvelope

from .engine_support import lobby_commands
from .test_engine_service import harness  # noqa: F401 - the fixture


async def ask(harness, game: str, actor: str, kind: str) -> list:
    command = CommandEnvelope(game_id=game, actor=actor, command={"type": kind})
    await harness.send_and_wait(command)
    await harness.bus.idle()
    return [e for e in harness.seen if e.caused_by == command.message_id]


async def test_a_player_gets_their_role_card_again_and_nobody_else_reads_it(harness):
    for envelope in lobby_commands("gr", 5):
        await harness.send_and_wait(envelope)
    before = await harness.store.load("gr")
    dealt = {e.event.player: e for e in harness.seen if e.event.type == "role_assigned"}
    for player, original in dealt.items():
        replies = await ask(harness, "gr", player, "show_role")
        assert [r.event.type for r in replies] == ["role_assigned"]
        reply = replies[0]
        assert reply.audience.players == (player,) and reply.seq == 0 and not reply.readers
        assert reply.event == original.event, "the card as dealt, with what they learned in the night"

    refused = await ask(harness, "gr", "test:stranger", "show_role")
    assert [(r.event.type, r.event.reason) for r in refused] == [("command_rejected", "not_a_player")]
    assert refused[0].audience.players == ("test:stranger",)
    assert (await harness.store.load("gr")).version == before.version, "asking changes nothing"


async def test_a_player_gets_what_is_open_for_them_again_and_only_that(harness):
    for envelope in lobby_commands("gc", 5):
        await harness.send_and_wait(envelope)
    loaded = await harness.store.load("gc")
    state = loaded.state
    leader = state.players[state.leader]
    offered = [e for e in harness.seen if e.event.type == "choices_offered" and e.event.player == leader][-1]

    replies = await ask(harness, "gc", leader, "show_choices")
    assert [r.event.type for r in replies] == ["choices_offered"]
    assert replies[0].audience.players == (leader,) and replies[0].seq == 0
    assert replies[0].event == offered.event, "what was offered when the phase opened"

    waiting_for_nothing = next(p for p in state.players if p != leader)
    assert await ask(harness, "gc", waiting_for_nothing, "show_choices") == [], "nothing open: no answer"

    lobby = lobby_commands("gl", 5)[:3]  # still in the lobby: no role, no choices
    for envelope in lobby:
        await harness.send_and_wait(envelope)
    refused = await ask(harness, "gl", lobby[0].actor, "show_role")
    assert [(r.event.type, r.event.reason) for r in refused] == [("command_rejected", "wrong_phase")]
    assert (await harness.store.load("gc")).version == loaded.version, "asking changes nothing"
