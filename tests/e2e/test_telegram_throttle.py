"""A flood of commands from one Telegram user is throttled without slowing another group's game.

Real gateway and engine, fake Bot API on loopback, real RabbitMQ. Two groups: in Camelot five
players play a whole game; in Tintagel, Zoe (who reads Russian) floods the bot with 425 commands
and button presses as fast as the fake takes them, meanwhile. The gateway's bucket has a clock the
test moves by hand (it stands still during the flood), so what passes is exact, not timed."""

from __future__ import annotations

import asyncio
import sqlite3

from avalon.shared.narration.render import html_to_text, ui_text
from avalon.shared.throttle import Throttle

from .test_telegram_flood import ended, open_lobby, play_to_the_end, start, texts

BURST = 40  # more than any Camelot player presses in a whole game, a fraction of the flood
RATE = 1.0  # a refusal window lasts BURST / RATE = 40 s of the test's clock


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def processed(db, chat_id: int) -> list[str]:
    """The outcome of every command the engine handled for the games of one group, in order."""
    with sqlite3.connect(db, timeout=30) as conn:
        rows = conn.execute("SELECT outcome FROM processed_commands WHERE game_id LIKE ? ORDER BY processed_at",
                            (f"tg{chat_id}_%",)).fetchall()
    return [outcome for (outcome,) in rows]


async def test_a_flooder_is_cut_to_the_bucket_and_told_once_per_window_while_another_game_plays_on(
        telegram_world, tmp_path):
    fake, camelot, users, process = telegram_world
    gateway, clock, db = process.gateway, Clock(), str(tmp_path / "engine.db")
    gateway.throttle = Throttle(RATE, BURST, clock=clock)
    in_camelot, finn = users[:5], users[5]
    zoe = fake.user(3000, "Zoe", language_code="ru")
    tintagel = fake.group(-100600, "Tintagel", members=[finn, zoe])
    too_fast = html_to_text(ui_text("ru", "too_fast", wait=1))  # with the clock still, a token is 1 s away

    await open_lobby(fake, tintagel, [finn, zoe])  # Zoe spends 2 tokens: /start in private, the Join button
    await open_lobby(fake, camelot, in_camelot)
    await start(fake, camelot, in_camelot)
    lobby = next(m for m in fake.messages(tintagel) if "A new game" in m.text)
    camelot_before = len(texts(fake, camelot))
    game = asyncio.create_task(play_to_the_end(fake, camelot, in_camelot, timeout=180))

    def replies() -> list[str]:
        return [m.text for m in fake.messages(tintagel) if m.from_bot and m.text == too_fast]

    def answers_to_zoe() -> list:
        return [a for a in fake.callback_answers if a.user_id == zoe.id]

    async def flood_texts(n: int, refused: int, told: int) -> None:
        for _ in range(n):
            await zoe.send(tintagel, "/join")
        await fake.wait_for(lambda: gateway.throttle.refused == refused, timeout=120, what="the texts handled")
        await fake.wait_for(lambda: len(replies()) == told, timeout=30, what="the one reply of this window")

    async def flood_presses(n: int, answered: int) -> None:
        for _ in range(n):
            await zoe.press(lobby, button="Join")
        await fake.wait_for(lambda: len(answers_to_zoe()) == answered, timeout=120, what="every press answered")

    # the first window: her tokens go to the first commands, then one reply, then alerts only
    await flood_texts(150, refused=150 - (BURST - 2), told=1)
    await flood_presses(150, answered=1 + 150)
    # the window passes and her bucket fills again: 5 presses and 35 texts pass, then a second reply
    clock.now += BURST / RATE + 5
    await flood_presses(5, answered=1 + 150 + 5)
    await flood_texts(60, refused=112 + 150 + 25, told=2)
    await flood_presses(60, answered=1 + 150 + 5 + 60)
    sent = 2 + 150 + 150 + 5 + 60 + 60  # with /start and the first Join
    passed = 2 + (BURST - 2) + BURST  # one bucket, then one more once it had filled again
    flood_over = len(texts(fake, camelot))

    await asyncio.wait_for(game, 200)
    expected_in_tintagel = 1 + (passed - 1)  # Finn's create_game; every command of Zoe's but her /start
    await fake.wait_for(lambda: len(processed(db, tintagel.id)) == expected_in_tintagel, timeout=60,
                        what="Zoe's commands that passed reaching the engine")

    assert sent == 427 and gateway.throttle.refused == sent - passed
    assert len(processed(db, tintagel.id)) == expected_in_tintagel, "nothing of a refused update reached the bus"
    assert replies() == [too_fast, too_fast], "told once per window, in Russian, by a reply in the group"
    alerts = [a for a in answers_to_zoe() if a.show_alert]
    assert len(alerts) == 150 + 60 and {a.text for a in alerts} == {too_fast}, "an alert on every refused press"
    assert [a.text for a in answers_to_zoe()[151:156]] == ["✅"] * 5, "the presses that passed were sent"

    # Camelot's game went on during the flood: it moved while Zoe flooded, ended, and the engine
    # accepted every one of its commands (each only valid in its turn: all applied, in order)
    assert flood_over > camelot_before, "Camelot's game moved on during the flood"
    assert ended(fake, camelot)
    outcomes = processed(db, camelot.id)
    assert len(outcomes) > 20 and set(outcomes) == {"accepted"}, outcomes
    camelot_ids = {u.id for u in in_camelot}
    assert not [a for a in fake.callback_answers if a.user_id in camelot_ids and a.show_alert]
    assert too_fast not in texts(fake, camelot) and all(
        "too fast" not in t and too_fast not in t for u in in_camelot for t in texts(fake, u.private_chat))
