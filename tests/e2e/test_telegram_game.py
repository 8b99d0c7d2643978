"""A whole 7-player game with the Lady of the Lake, played in a Telegram group by scripted users
through commands and buttons only: real aiogram gateway, fake Bot API on loopback, real RabbitMQ."""

from __future__ import annotations

import asyncio
import re
import time

from avalon.services.engine.store import Store
from avalon.shared.pictures import draw_board, draw_end, picture_of
from avalon.shared.protocol import to_core_event

from .conftest import NAMES


def texts(fake, chat) -> list[str]:
    return [m.text for m in fake.messages(chat)]


async def start_a_game(fake, group, users) -> None:
    """Seven players join a new game in the group and it starts: each has their role card."""
    host = users[0]
    for user in users:
        await user.start_private()
    await host.send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    for user in users[1:]:
        await user.press(lobby, button="Join")
    # announcements waiting for the group may arrive merged into one message: count them all
    await fake.wait_for(lambda: sum(t.count("joined the game") for t in texts(fake, group)) == 7, timeout=15)
    await host.send(group, "/startgame")
    for user in users:
        await fake.wait_for_message(user.private_chat, "Your role", timeout=15)


async def play_to_the_end(fake, group, users) -> None:
    """Every button pressed (the leader's picks, everyone approves, success, the first target) until
    the game's end is told in the group."""
    by_name = dict(zip(NAMES, users))
    acted: set[tuple[int, int, str]] = set()
    deadline = time.monotonic() + 120
    while not any(t.startswith("🏁") for t in texts(fake, group)):
        assert time.monotonic() < deadline, "the game did not end:\n" + "\n".join(texts(fake, group)[-10:])
        progressed = False
        for message in fake.messages(group):
            data = message.callback_data
            # the picker is pressed again after each edit; any other keyboard once
            key = (group.id, message.message_id, (message.text if data and data[0].startswith("p:") else "")
                   + ",".join(data))
            if not data or key in acted:
                continue
            if data[0].startswith("p:"):  # the leader's team picker
                leader = by_name[re.match(r"👑 (\w+):", message.text).group(1)]
                size = int(re.search(r"pick (\d+)", message.text).group(1))
                picked = int(re.search(r"(\d+) selected", message.text).group(1))
                if picked < size:
                    await leader.press(message, data[picked])
                else:
                    await leader.press(message, data[-1])
            elif data[0].startswith("t:"):  # Excalibur's holder (not in this game)
                leader = by_name[re.match(r"🗡 (\w+):", message.text).group(1)]
                await leader.press(message, data[0])
            elif data[0].startswith("v:"):  # everyone approves
                for user in users:
                    await user.press(message, data[0])
            acted.add(key)
            progressed = True
        for user in users:
            for message in fake.messages(user.private_chat):
                data = message.callback_data
                key = (user.id, message.message_id, ",".join(data))
                if data and key not in acted:
                    await user.press(message, data[0])  # success / the first target
                    acted.add(key)
                    progressed = True
        await asyncio.sleep(0.05 if progressed else 0.1)


async def test_a_whole_game_with_the_lady_is_played_in_a_group_with_buttons_only(world):
    fake, group, users, gateway = world
    await start_a_game(fake, group, users)
    await play_to_the_end(fake, group, users)

    group_text = "\n".join(texts(fake, group))
    assert "Your role" not in group_text, "role cards only in private chats"
    for phrase in ("A new game", "The game begins", "is the leader", "Everyone votes", "The team goes on quest",
                   "succeeded", "Lady of the Lake", "shoots", "🏁"):
        assert phrase in group_text, f"the group was never told: {phrase}"
    for user in users:
        private = "\n".join(texts(fake, user.private_chat))
        assert private.count("Your role:") == 1
        assert "already over" not in private, private
    roles = re.findall(r"• (\w+): ([^\n(]+)", group_text.split("🏁")[-1])
    assert len(roles) == 7, "every role revealed at the end"
    before_end = group_text.split("🏁")[0]
    for role_word in ("Merlin —", "Your role", "Morgana —", "is evil"):
        assert role_word not in before_end, f"private fact in the group: {role_word}"


async def public_picture(store: Store, game_id: str):
    """What a picture of the game may show, from the engine's whole log (private events included: the
    pictures' own fold must leave them out)."""
    log = await store.event_log(game_id, include_internal=True)
    return picture_of(to_core_event(e.event, e.audience) for e in log if hasattr(e.event, "core"))


async def test_the_board_and_the_end_come_as_photos_drawn_from_what_the_group_was_told(world, tmp_path):
    fake, group, users, gateway = world
    await start_a_game(fake, group, users)
    game_id = next(iter(gateway.book.games))
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}")
    try:
        await fake.wait_for_message(group, timeout=15, where=lambda m: any(d.startswith("p:") for d in m.callback_data))
        await users[2].send(group, "/status")
        await fake.wait_for(lambda: fake.photos(group), timeout=15)
        board = fake.photos(group)[0]
        game = await public_picture(store, game_id)
        assert game.seats and game.leader, "the game had started"
        assert board.photo == draw_board(game, gateway.memory.names, "en")
        assert board.text.startswith("📋") and "Leader:" in board.text, "the board's text kept as the photo's caption"
        upload = fake.calls("sendPhoto")[0].params
        assert upload[upload["photo"].removeprefix("attach://")]["filename"] == "avalon.png"  # a multipart upload

        await play_to_the_end(fake, group, users)
        await fake.wait_for(lambda: len(fake.photos(group)) == 2, timeout=15)
        end = fake.photos(group)[1]
        game = await public_picture(store, game_id)
        assert game.ending is not None
        assert end.photo == draw_end(game, gateway.memory.names, "en")
        told = end.text or fake.messages(group)[fake.messages(group).index(end) + 1].text
        assert told.startswith("🏁") and len(re.findall(r"• (\w+): ", told)) == 7, "the end's text kept"
    finally:
        await store.close()
