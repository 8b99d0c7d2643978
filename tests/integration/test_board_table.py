"""The board shows the people around the table: each seat's missed deadlines in a row, the seats open
for a substitute and a pause, as the engine service answers ``show_board`` and a player reads it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import update

from avalon.shared.narration.render import Context, Narrator, Recipient
from avalon.shared.protocol import CommandEnvelope
from avalon.services.engine.rows import GameRow
from avalon.services.engine.store import Store

from .engine_support import lobby_commands, wait_processed
from .test_engine_service import Harness

NAMES = {f"test:p{i}": f"Name{i}" for i in range(1, 6)}


async def board(harness: Harness, actor: str, message_id: str):
    ask = CommandEnvelope(message_id=message_id, game_id="gb", actor=actor, command={"type": "show_board"})
    await harness.send_and_wait(ask)
    await harness.bus.idle()
    return next(e for e in harness.seen if e.caused_by == ask.message_id)


def text(envelope) -> str:
    return Narrator().render_in("en", envelope, Recipient(envelope.audience.players[0], ("en",)), "telegram",
                                Context(NAMES)).text


async def test_the_board_counts_a_seats_missed_deadlines_and_shows_open_seats_and_a_pause(db_url):
    first = await Harness(db_url).start()
    for envelope in lobby_commands("gb", 5):
        await first.send_and_wait(envelope)
    state = (await first.store.load("gb")).state
    leader, host = state.players[state.leader], state.host
    before = await board(first, "test:p3", "board:before")
    assert before.event.missed == (0,) * 5 and not before.event.open_seats and not before.event.paused
    assert "missed" not in text(before) and "paused" not in text(before)
    await first.close()
    store = Store(db_url)  # the leader lets the proposal's deadline pass
    async with store.sessions() as session, session.begin():
        await session.execute(update(GameRow).where(GameRow.id == "gb").values(
            deadline_at=datetime.now(timezone.utc) - timedelta(minutes=5)))
    await store.close()

    second = await Harness(db_url).start()
    try:
        await wait_processed(second.store, f"timeout:gb:{state.phase_id}")
        after = await board(second, "test:p3", "board:missed")
        assert after.event.missed[state.leader] == 1 and sum(after.event.missed) == 1
        assert f"Deadlines missed in a row: {NAMES[leader]} (1)" in text(after)

        absent = next(p for p in state.players if p not in (host, leader))
        for n, command in enumerate(({"type": "open_seat", "player": absent}, {"type": "pause_game"})):
            await second.send_and_wait(CommandEnvelope(message_id=f"table:{n}", game_id="gb", actor=host,
                                                       command=command))
        shown = await board(second, "test:p2", "board:table")
        assert shown.event.open_seats == (absent,) and shown.event.paused
        said = text(shown)
        assert f"Seats open for a substitute: {NAMES[absent]}" in said
        assert "The game is paused until the host resumes it." in said
        assert shown.event.deadline_at is None, "a paused game has no deadline running"
    finally:
        await second.close()
