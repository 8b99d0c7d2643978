"""Odd updates change nothing: what Telegram (or someone forging a button) may send besides the
messages and buttons the gateway drew.

Edited messages, channel posts, stickers, photos and messages without text are met with silence;
unknown, forged and malformed button data with an alert (a localized refusal); a command with a
5000-character argument with a short answer. Throughout, the engine's event log of the game does not
change, and afterwards the game goes on with ordinary buttons. Real gateway and engine, fake Bot API
on loopback, RabbitMQ between them.
"""

from __future__ import annotations

import asyncio
import logging
import re

import pytest

from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.shared.bus.rabbit import RabbitBus
from tests.fakes.telegram_api import FakeTelegram

from .conftest import FAST, NAMES, GatewayProcess, require_rabbitmq


@pytest.fixture
async def table(amqp_url, rabbit_prefix, tmp_path):
    """A group of five with a game just dealt: (fake, group, users, gateway process, engine store, game id)."""
    await require_rabbitmq(amqp_url)
    fake = await FakeTelegram().start()
    engine_bus = RabbitBus(amqp_url, prefix=rabbit_prefix)
    await engine_bus.start()
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}")
    engine = EngineService(store, engine_bus, DeadlineScheduler(engine_bus), channels=channel_map())
    process = GatewayProcess(fake, amqp_url, rabbit_prefix, f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}", FAST)
    await process.start()
    await engine.start()
    users = [fake.user(1000 + i, name) for i, name in enumerate(NAMES[:5])]
    group = fake.group(-100500, "Camelot", members=users)
    try:
        for user in users:
            await user.start_private()
        await users[0].send(group, "/newgame")
        lobby = await fake.wait_for_message(group, "A new game", timeout=15)
        for user in users[1:]:
            await user.press(lobby, button="Join")
        await fake.wait_for(lambda: sum(m.text.count("joined the game") for m in fake.messages(group)) == 5,
                            timeout=30)
        await users[0].send(group, "/startgame")
        picker = await fake.wait_for_message(group, timeout=30, where=lambda m: m.callback_data
                                             and m.callback_data[0].startswith("p:"))
        game = picker.callback_data[0].split(":")[1]
        yield fake, group, users, process, store, game
    finally:
        await process.stop()
        await engine.stop()
        await engine_bus.close()
        await engine_bus.delete_everything("telegram")
        await store.close()
        await fake.stop()


async def game_log(store: Store, game: str) -> list[tuple[int, str]]:
    return [(e.seq, e.event.type) for e in await store.event_log(game, include_internal=True) if e.seq]


async def settle(fake: FakeTelegram, seconds: float = 0.6) -> None:
    """Every update fetched, and time for anything it would cause to be sent."""
    await fake.wait_delivered()
    await asyncio.sleep(seconds)


def bot_texts(fake: FakeTelegram, chats) -> list[tuple[int, int, str]]:
    return [(m.chat_id, m.message_id, m.text) for chat in chats for m in fake.messages(chat)]


def photo_message(fake: FakeTelegram, chat, user, **extra) -> dict:
    sizes = [{"file_id": f"AgAD{n}", "file_unique_id": f"u{n}", "width": n, "height": n} for n in (90, 320)]
    return {"message_id": 9000 + len(fake.updates_log), "date": 1, "chat": chat.json(), "from": user.json(),
            "photo": sizes, **extra}


async def test_edits_channel_posts_stickers_photos_and_textless_messages_are_met_with_silence(table):
    fake, group, users, process, store, game = table
    host, player = users[0], users[1]
    await settle(fake, 1.0)
    log, said = await game_log(store, game), bot_texts(fake, [group, *(u.private_chat for u in users)])
    answers = len(fake.callback_answers)
    channel = {"id": -100777, "title": "Avalon news", "type": "channel"}
    edited = {"message_id": 1, "date": 1, "edit_date": 2, "chat": group.json(), "from": host.json(),
              "text": "/cancel", "entities": [{"type": "bot_command", "offset": 0, "length": 7}]}
    post = {"message_id": 5, "date": 1, "chat": channel, "sender_chat": channel, "text": "/newgame",
            "entities": [{"type": "bot_command", "offset": 0, "length": 8}]}
    sticker = {"file_id": "CAAC", "file_unique_id": "s1", "type": "regular", "width": 512, "height": 512,
               "is_animated": False, "is_video": False, "emoji": "🗡"}
    odd = [
        ("edited_message", edited),
        ("edited_message", {**edited, "chat": player.private_chat.json(), "from": player.json()}),
        ("channel_post", post),
        ("edited_channel_post", {**post, "edit_date": 2}),
        ("message", {**photo_message(fake, group, host), "sticker": sticker, "photo": None}),
        ("message", {**photo_message(fake, player.private_chat, player), "sticker": sticker, "photo": None}),
        ("message", photo_message(fake, group, host)),
        ("message", photo_message(fake, player.private_chat, player, caption="who is Merlin?")),
        ("message", {**photo_message(fake, group, host), "photo": None, "location": {"latitude": 51.5,
                                                                                      "longitude": -0.1}}),
        ("message", {**photo_message(fake, group, host), "photo": None, "dice": {"emoji": "🎲", "value": 6}}),
        ("message", {**photo_message(fake, group, host), "photo": None, "new_chat_title": "Camelot!"}),
    ]
    for kind, payload in odd:
        fake._enqueue(kind, {k: v for k, v in payload.items() if v is not None})
    # what Telegram does not send to a bot that did not ask for it, the dispatcher is also handed
    # directly, as a webhook or a careless Telegram would deliver it
    for n, (kind, payload) in enumerate(odd[:4]):
        await process.dispatcher.feed_raw_update(process.bot, {"update_id": 1 + n, kind: payload})
    await settle(fake)

    assert bot_texts(fake, [group, *(u.private_chat for u in users)]) == said, "not a word in reply"
    assert len(fake.callback_answers) == answers
    assert await game_log(store, game) == log, "the game did not change"
    assert any("edited_message" in u for u in fake.filtered_updates), "Telegram was not asked for edits"
    await player.send(group, "/status")
    board = await fake.wait_for_message(group, "📋", timeout=10)
    assert "Quest 1" in board.text, "the gateway goes on serving"


async def to_the_quest(fake: FakeTelegram, group, users) -> tuple:
    """The leader picks a team with a loyal player on it (good players' buttons first) and everyone
    approves: (leader, the vote button's data)."""
    picker = next(m for m in reversed(fake.messages(group)) if m.callback_data and m.callback_data[0][:2] == "p:")
    leader = next(u for u in users if picker.text.startswith(f"👑 {u.first_name}:"))
    size = int(re.search(r"pick (\d+)", picker.text).group(1))
    await fake.wait_for(lambda: all(any("Your role" in m.text for m in fake.messages(u.private_chat)) for u in users))
    good = {u.first_name for u in users if any("— Good" in m.text for m in fake.messages(u.private_chat))}
    assert len(good) == 3
    seats = sorted(picker.buttons[:-1], key=lambda b: b["text"] not in good)
    for i, button in enumerate(seats[:size]):
        await leader.press(picker, button["callback_data"])
        await fake.wait_for(lambda i=i: f"{i + 1} selected" in fake.messages(group)[
            fake.messages(group).index(picker)].text, timeout=10)
    await leader.press(picker, picker.callback_data[-1])
    vote = await fake.wait_for_message(group, timeout=10, where=lambda m: any(d[:2] == "v:" for d in m.callback_data))
    data = vote.callback_data[0]
    for user in users:
        await user.press(vote, data)
    await fake.wait_for(lambda: sum(1 for u in users for m in fake.messages(u.private_chat)
                                    if any(d.startswith("c:") for d in m.callback_data)) == size, timeout=15)
    return leader, data


async def answer_to(fake: FakeTelegram, query: dict):
    return await fake.wait_for(lambda: next((a for a in fake.callback_answers if a.query_id == query["id"]), None),
                               timeout=10, what=f"an answer to {query['data']!r}")


async def test_unknown_forged_and_malformed_buttons_are_refused_with_an_alert_and_change_nothing(table, caplog):
    fake, group, users, _, store, game = table
    caplog.set_level(logging.ERROR)
    leader, old_vote = await to_the_quest(fake, group, users)
    cards = {u: m for u in users for m in fake.messages(u.private_chat) if any(d[:2] == "c:" for d in m.callback_data)}
    phase = cards[next(iter(cards))].callback_data[0].split(":")[2]
    good = next(u for u, m in cards.items() if len(m.callback_data) == 1)  # a loyal member may only succeed
    outsider = next(u for u in users if u not in cards)
    stranger = fake.user(1099, "Mordred")
    other_group = fake.group(-100600, "Lyonesse", members=[stranger, outsider])
    await stranger.send(other_group, "/newgame")
    other_lobby = await fake.wait_for_message(other_group, "A new game", timeout=15)
    other = other_lobby.callback_data[0].split(":")[1]
    await settle(fake)
    log = await game_log(store, game)
    target = fake.messages(group)[-1]  # any message of the bot's in the group carries a forged press
    alerts = [
        (outsider, "zzz"), (outsider, "x" * 64), (outsider, "v:1:2"), (outsider, f"v:{game}:one:1"),
        (outsider, f"v:{game}:{phase}:maybe"), (outsider, f"c:{game}:{phase}"),
        (leader, f"p:{game}:{phase}:99"), (leader, f"p:{game}:{phase}:-7"),  # seats that do not exist
        (good, f"c:{game}:{phase}:bogus"), (good, f"t:{game}:{phase}:q:0"), (good, f"t:{game}:{phase}:l:-1"),
        (outsider, old_vote), (outsider, f"j:{game}"), (outsider, f"s:{game}:lady"),
        (outsider, f"v:tg-100999_7:{phase}:1"),  # a game that does not exist
        (outsider, f"s:{other}:lady"), (outsider, f"v:{other}:0:1"),  # another group's game
    ]
    for user, data in alerts:
        answer = await answer_to(fake, await user.press(target, data, force=True))
        assert answer.show_alert and answer.text and len(answer.text) <= 200, (data, answer)
    # buttons of someone else's private keyboard: the engine refuses, and says so to the one who pressed
    for user, data in [(outsider, f"c:{game}:{phase}:success"), (good, f"c:{game}:{phase}:fail")]:
        await answer_to(fake, await user.press(target, data, force=True))
    await fake.wait_for_message(outsider.private_chat, "not your turn", timeout=10)
    await fake.wait_for_message(good.private_chat, "You cannot play", timeout=10)
    await settle(fake)
    assert await game_log(store, game) == log, "no button changed the game"
    assert not [r.getMessage()[:200] for r in caplog.records if r.levelno >= logging.ERROR]

    for user, message in cards.items():  # the real buttons still work
        await user.press(message, message.callback_data[0])
    await fake.wait_for_message(group, timeout=15, where=lambda m: re.search(r"Quest 1 (succeeded|failed)", m.text))


async def test_commands_with_a_5000_character_argument_get_a_short_answer_and_change_nothing(table):
    fake, group, users, _, store, game = table
    host, player = users[0], users[1]
    await settle(fake, 1.0)
    log = await game_log(store, game)
    long = "x" * 5000
    asks = [  # who, where, what, and the answer (in that chat; the engine's refusals come in private)
        (host, group, f"/invite {long}", group, "Not a valid email address"),
        (host, group, f"/lang {long}", group, "/lang en"),
        (host, group, f"/newgame {long}", group, "A game is already open"),
        (player, group, f"/join {long}", player.private_chat, "cannot be done now"),
        (player, group, f"/status {long}", group, "📋"),
        (player, None, f"/start join_{long}", player.private_chat, "Welcome"),
        (player, None, f"/mygames {long}", player.private_chat, "Camelot"),
    ]
    for user, chat, text, where, reply in asks:
        before = fake.messages(where)
        await user.send(chat, text)
        answer = await fake.wait_for_message(where, reply, timeout=10, after=before[-1] if before else None)
        assert len(answer.text) < 1000, text[:20]
    await player.send(None, long)  # free text, when nothing is asked: silence
    await settle(fake)
    assert not fake.calls("sendMessage", ok=False), "every answer fitted in a message"
    assert await game_log(store, game) == log


async def test_a_private_button_forged_on_the_groups_team_picker_leaves_the_picker_alone(table):
    fake, group, users, _, store, game = table
    await settle(fake, 1.0)
    picker = next(m for m in reversed(fake.messages(group)) if m.callback_data and m.callback_data[0][:2] == "p:")
    keyboard, phase = list(picker.callback_data), picker.callback_data[0].split(":")[2]
    log = await game_log(store, game)
    someone = next(u for u in users if not picker.text.startswith(f"👑 {u.first_name}:"))
    for data in (f"c:{game}:{phase}:success", f"t:{game}:{phase}:e:-1"):
        await answer_to(fake, await someone.press(picker, data, force=True))
    await settle(fake)
    assert fake.messages(group)[fake.messages(group).index(picker)].callback_data == keyboard, \
        "the leader can still pick a team"
    assert await game_log(store, game) == log
