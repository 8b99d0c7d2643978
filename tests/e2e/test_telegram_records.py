"""The record of finished games in a Telegram group: a 7-player game played to its end through
buttons (real aiogram gateway, fake Bot API on loopback, real engine over RabbitMQ), then /stats,
/stats as a reply, /top and /history show it; a stranger learns nothing; /hidestats keeps one's stats
out of the group; /forgetme (in private, confirmed) removes a player from the leaderboard and the
history."""

from __future__ import annotations

import asyncio
import re
import time

from avalon.shared.game.codes import game_code

from .conftest import NAMES


def texts(fake, chat) -> list[str]:
    return [m.text for m in fake.messages(chat)]


async def play_to_the_end(fake, group, users) -> str:
    """A game opened, joined by everyone and played with buttons (everyone approves, every card is the
    first one) until it ends; returns its id."""
    by_name = dict(zip(NAMES, users))
    host = users[0]
    for user in users:
        await user.start_private()
    opening = await host.send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    for user in users[1:]:
        await user.press(lobby, button="Join")
    await fake.wait_for(lambda: sum(t.count("joined the game") for t in texts(fake, group)) == 7, timeout=15)
    await host.send(group, "/startgame")
    acted: set[tuple[int, int, str]] = set()
    deadline = time.monotonic() + 120
    while not any(t.startswith("🏁") for t in texts(fake, group)):
        assert time.monotonic() < deadline, "the game did not end:\n" + "\n".join(texts(fake, group)[-10:])
        progressed = False
        for message in fake.messages(group):
            data = message.callback_data
            key = (group.id, message.message_id, (message.text if data and data[0].startswith("p:") else "")
                   + ",".join(data))
            if not data or key in acted:
                continue
            if data[0].startswith("p:"):
                leader = by_name[re.match(r"👑 (\w+):", message.text).group(1)]
                size = int(re.search(r"pick (\d+)", message.text).group(1))
                picked = int(re.search(r"(\d+) selected", message.text).group(1))
                await leader.press(message, data[picked] if picked < size else data[-1])
            elif data[0].startswith("t:"):
                leader = by_name[re.match(r"🗡 (\w+):", message.text).group(1)]
                await leader.press(message, data[0])
            elif data[0].startswith("v:"):
                for user in users:
                    await user.press(message, data[0])
            acted.add(key)
            progressed = True
        for user in users:
            for message in fake.messages(user.private_chat):
                data = message.callback_data
                key = (user.id, message.message_id, ",".join(data))
                if data and key not in acted:
                    await user.press(message, data[0])
                    acted.add(key)
                    progressed = True
        await asyncio.sleep(0.05 if progressed else 0.1)
    return f"tg{group.id}_{opening['message_id']}"


async def test_stats_top_and_history_show_the_finished_game_and_forget_me_removes_a_player(world):
    fake, group, users, gateway = world
    ann, bob, cleo = users[0], users[1], users[2]
    game = await play_to_the_end(fake, group, users)

    await ann.send(group, "/history")
    history = (await fake.wait_for_message(group, "The last finished games here", timeout=15)).text
    assert game_code(game) in history, history
    for name in NAMES:
        assert f"• {name}:" in history, f"{name}'s role in the history"

    await ann.send(group, "/top")
    top = (await fake.wait_for_message(group, "Leaderboard", timeout=15)).text
    assert sum(f"{name} —" in top for name in NAMES) == 7, top
    assert ("won 1 of 1" in top) and ("won 0 of 1" in top), top

    await bob.send(group, "/stats")
    stats = (await fake.wait_for_message(group, "Stats of Bob", timeout=15)).text
    assert "Finished games: 1" in stats, stats

    said = await cleo.send(group, "I was Merlin, honest")
    await ann.send(group, "/stats", reply_to=said)
    cleos = (await fake.wait_for_message(group, "Stats of Cleo", timeout=15)).text
    assert "Finished games: 1" in cleos and "By role:" in cleos, cleos

    # a stranger: no finished game of theirs, and nothing of anyone's game in private
    stranger = fake.user(4242, "Zed")
    group.add(stranger)
    await stranger.start_private()
    await stranger.send(group, "/stats")
    zed = (await fake.wait_for_message(group, "Stats of Zed", timeout=15)).text
    assert "No finished games yet." in zed and "Finished games" not in zed, zed
    await stranger.send(None, "/stats")
    await fake.wait_for_message(stranger.private_chat, "No finished games yet.", timeout=15)
    assert not any("Merlin" in t or "Finished games" in t for t in texts(fake, stranger.private_chat))

    # Bob hides his stats: the group no longer reads them, Bob does in private, the leaderboard leaves him out
    await bob.send(group, "/hidestats")
    await fake.wait_for_message(group, "Your stats are hidden", timeout=15)
    await cleo.send(group, "/stats", reply_to=await bob.send(group, "hello"))
    await fake.wait_for_message(group, "Bob keeps their stats hidden", timeout=15)
    seen = len(fake.messages(group))
    await bob.send(group, "/stats")
    await fake.wait_for_message(bob.private_chat, "(hidden: only you can see them)", timeout=15)
    assert not any("Stats of Bob" in t for t in texts(fake, group)[seen:]), "hidden stats said in the group"
    await ann.send(group, "/top")
    top = (await fake.wait_for_message(group, "Leaderboard", where=lambda m: "Bob" not in m.text, timeout=15)).text
    assert sum(f"{name} —" in top for name in NAMES) == 6, top

    # Cleo is forgotten: only in private, and only once confirmed
    await cleo.send(group, "/forgetme")
    await fake.wait_for_message(group, "works in a private chat", timeout=15)
    await cleo.send(None, "/forgetme")
    await fake.wait_for_message(cleo.private_chat, "send /forgetme yes", timeout=15)
    assert not any("records are forgotten" in t for t in texts(fake, cleo.private_chat))
    await cleo.send(None, "/forgetme yes")
    await fake.wait_for_message(cleo.private_chat, "Your records are forgotten (finished games deleted: 1)",
                                timeout=15)
    seen = len(fake.messages(group))
    await ann.send(group, "/top")
    top = await fake.wait_for_message(group, "Leaderboard", after=fake.messages(group)[seen - 1], timeout=15)
    assert "Cleo" not in top.text and sum(f"{name} —" in top.text for name in NAMES) == 5, top.text
    await ann.send(group, "/history")
    history = await fake.wait_for_message(group, "The last finished games", after=top, timeout=15)
    assert "Cleo" not in history.text, history.text
    await cleo.send(None, "/stats")
    mine = await fake.wait_for_message(cleo.private_chat, "Stats of Cleo", timeout=15)
    assert "No finished games yet." in mine.text, mine.text
