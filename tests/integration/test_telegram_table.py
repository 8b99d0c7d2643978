"""The people around the table in a Telegram group: the host pauses and resumes, a player hands their
seat over and a member of the group takes it with the button (and learns the seat's secrets in
private), the one replaced is refused with the reason, /nextgame. The real gateway and engine on the
in-process bus, the fake Bot API on loopback."""

from __future__ import annotations

import re

import pytest
from aiogram.client.default import DefaultBotProperties

from avalon.services.channels import channel_map
from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.services.telegram_gateway.gateway import TelegramGateway
from avalon.services.telegram_gateway.sender import Limits
from avalon.shared.bus import InProcessBus
from tests.fakes import FakeTelegram

FAST = Limits(per_chat_interval=0.0, group_per_minute=10**6, global_per_second=10**6)
NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve"]


@pytest.fixture
async def world(tmp_path):
    fake = await FakeTelegram().start()
    bus = InProcessBus()
    await bus.start()
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}")
    engine = EngineService(store, bus, DeadlineScheduler(bus), channels=channel_map())
    bot = fake.make_bot(default=DefaultBotProperties(parse_mode="HTML"))
    gateway = TelegramGateway(bot, bus, limits=FAST, database_url=f"sqlite+aiosqlite:///{tmp_path / 'gw.db'}")
    await gateway.start()
    poller = gateway.poller(gateway.dispatcher(), timeout=1)
    poller.start()
    await engine.start()
    users = [fake.user(1000 + i, name, username=f"{name.lower()}_of_camelot") for i, name in enumerate(NAMES)]
    finn = fake.user(2000, "Finn", username="finn")
    gus = fake.user(2001, "Gus")
    group = fake.group(-100700, "Camelot", members=[*users, finn, gus])
    try:
        yield fake, group, users, finn, gus, gateway
    finally:
        await poller.stop()
        await gateway.close()
        await bot.session.close()
        await engine.stop()
        await bus.close()
        await store.close()
        await fake.stop()


def texts(fake, chat) -> list[str]:
    return [m.text for m in fake.messages(chat)]


async def said(fake, chat, phrase: str, count: int = 1) -> None:
    """Wait until ``phrase`` was said ``count`` times in ``chat`` (messages may come merged)."""
    await fake.wait_for(lambda: sum(t.count(phrase) for t in texts(fake, chat)) >= count, timeout=15,
                        what=f"{phrase!r} x{count} in {chat}")


async def start_a_game(fake, group, users) -> None:
    for user in users:
        await user.start_private()
    await users[0].send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    for user in users[1:]:
        await user.press(lobby, button="Join")
    await said(fake, group, "joined the game", len(users))
    await users[0].send(group, "/startgame")
    for user in users:
        await fake.wait_for_message(user.private_chat, "Your role", timeout=15)


def pickers(fake, group):
    return [m for m in fake.messages(group) if m.callback_data and m.callback_data[0].startswith("p:")]


async def propose(fake, group, users) -> None:
    """The leader picks the first players offered and confirms: the vote opens in the group."""
    by_name = {u.first_name: u for u in users}
    while True:
        picker = pickers(fake, group)[-1]
        leader = by_name[re.match(r"👑 (\w+):", picker.text).group(1)]
        size = int(re.search(r"pick (\d+)", picker.text).group(1))
        picked = int(re.search(r"(\d+) selected", picker.text).group(1))
        if picked == size:
            await leader.press(picker, picker.callback_data[-1])
            return
        before = picker.text
        await leader.press(picker, picker.callback_data[picked])
        await fake.wait_for(lambda: pickers(fake, group)[-1].text != before, timeout=10, what="the pick")


def answers_to(fake, user) -> list[str]:
    return [a.text or "" for a in fake.callback_answers if a.user_id == user.id]


async def press_answered(fake, user, message, data: str) -> str:
    """``user`` presses a button; what the bot answered that press."""
    before = len(answers_to(fake, user))
    await user.press(message, data)
    await fake.wait_for(lambda: len(answers_to(fake, user)) > before, timeout=10, what="the press answered")
    return answers_to(fake, user)[-1]


async def test_pause_resume_handover_take_seat_and_the_replaced_players_old_button(world):
    fake, group, users, finn, gus, gateway = world
    ann, bob = users[0], users[1]
    await start_a_game(fake, group, users)
    await fake.wait_for(lambda: pickers(fake, group), timeout=15, what="the leader's picker")

    await bob.send(group, "/pause")  # not the host: refused, to him alone
    await fake.wait_for_message(bob.private_chat, "host", timeout=15)
    assert not any("paused" in t for t in texts(fake, group))
    await ann.send(group, "/pause")
    await said(fake, group, "paused")
    old_picker = pickers(fake, group)[0]
    await ann.send(group, "/resume")
    await fake.wait_for(lambda: any(p.message_id > old_picker.message_id for p in pickers(fake, group)), timeout=15,
                        what="the picker drawn again")
    assert not fake.messages(group)[fake.messages(group).index(old_picker)].callback_data, \
        "the picker of before the pause lost its buttons"

    await propose(fake, group, users)
    vote = await fake.wait_for_message(group, timeout=15,
                                       where=lambda m: any(d.startswith("v:") for d in m.callback_data))

    await bob.send(group, "/handover")
    opened = await fake.wait_for_message(group, timeout=15, where=lambda m: any(
        d.startswith("o:") for d in m.callback_data))
    assert "already" in await press_answered(fake, users[2], opened, opened.callback_data[0])  # has a seat
    # never opened the private chat: told to, first
    assert "private chat" in await press_answered(fake, gus, opened, opened.callback_data[0])

    await finn.start_private()
    await fake.wait_for_message(finn.private_chat, timeout=10)
    await finn.press(opened, opened.callback_data[0])
    card = await fake.wait_for_message(finn.private_chat, "Your role", timeout=15)
    bob_card = next(t for t in texts(fake, bob.private_chat) if "Your role" in t)
    assert card.text.splitlines()[0] == bob_card.splitlines()[0], "Bob's role card, now Finn's"
    await fake.wait_for(lambda: len(texts(fake, finn.private_chat)) >= 3, timeout=15,
                        what="the seat's briefing after the role card")
    await said(fake, group, "Finn")
    await fake.wait_for(lambda: not fake.messages(group)[fake.messages(group).index(opened)].callback_data,
                        timeout=10, what="the Take seat button gone once taken")
    assert not any("Your role" in t for t in texts(fake, group)), "secrets only in private"

    refusal = await press_answered(fake, bob, vote, vote.callback_data[0])  # his old vote button
    assert "Finn" in refusal and "seat" in refusal, refusal
    assert "Voted: 0/5" in fake.messages(group)[fake.messages(group).index(vote)].text, "Bob's press counted"
    await finn.press(vote, vote.callback_data[0])
    await fake.wait_for(lambda: "Voted: 1/5" in fake.messages(group)[fake.messages(group).index(vote)].text,
                        timeout=15, what="Finn's vote counted")


async def test_nextgame_sends_a_private_message_when_the_next_lobby_opens_once(world):
    fake, group, users, finn, gus, gateway = world
    ann, eve = users[0], users[4]
    await gus.send(group, "/nextgame")  # no private chat yet: told to open one, with the link
    told = await fake.wait_for_message(group, "Gus", timeout=15)
    assert "start=next_-100700" in told.text and "private" in told.text
    await eve.start_private()
    await eve.send(group, "/nextgame")
    await said(fake, group, "when the next game opens")
    await gus.start_private("next_-100700")  # the link: subscribed once Start is pressed
    await fake.wait_for_message(gus.private_chat, "Camelot", timeout=15)

    await ann.start_private()
    await ann.send(group, "/newgame")
    await fake.wait_for_message(group, "A new game", timeout=15)
    for user in (eve, gus):
        notice = await fake.wait_for_message(user.private_chat, "A new game is opening", timeout=15)
        assert "Camelot" in notice.text and "/nextgame" in notice.text
    assert not any("A new game is opening" in t for t in texts(fake, ann.private_chat)), "the host opened it"

    await ann.send(group, "/cancel")
    await said(fake, group, "cancel")
    await ann.send(group, "/newgame")
    await said(fake, group, "A new game", 2)
    await fake.wait_delivered()
    assert sum("A new game is opening" in t for t in texts(fake, eve.private_chat)) == 1, "told once only"


async def test_the_host_names_a_player_by_username_or_reply_and_an_unknown_name_is_explained(world):
    fake, group, users, finn, gus, gateway = world
    ann, bob, cleo = users[0], users[1], users[2]
    await ann.start_private()
    await ann.send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    await bob.press(lobby, button="Join")
    await cleo.press(lobby, button="Join")
    await said(fake, group, "joined the game", 3)

    await ann.send(group, "/kick")
    await fake.wait_for_message(group, "Name the player: add their @username", timeout=15)
    await ann.send(group, "/kick @nobody_here")
    await fake.wait_for_message(group, "I do not know that @username", timeout=15)
    await bob.send(group, "/kick @cleo_of_camelot")  # not the host: the engine refuses, Cleo stays
    await ann.send(group, "/kick @bob_of_camelot")
    await said(fake, group, "removed Bob")
    hello = await cleo.send(group, "/status")
    await ann.send(group, "/kick", reply_to=hello["message_id"])
    await said(fake, group, "removed Cleo")
    assert gateway.game_of_chat(group.id).table.seats.players == ["tg:1000"]
