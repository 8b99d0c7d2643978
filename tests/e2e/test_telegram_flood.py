"""Telegram's flood control during a whole 10-player game: after a 429 nothing goes to that chat
before its retry_after has passed (sends and edits alike, replies to commands included), and no
message is lost. Real gateway and engine, fake Bot API on loopback with its flood control on,
real RabbitMQ. The limits are Telegram's shape at a faster pace (5 a second per chat instead of
1, so that a game takes seconds, not minutes); the gateway's pacing is set a little faster than
the fake allows, so that Telegram really pushes back."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from avalon.services.telegram_gateway.sender import Limits

from .conftest import NAMES

#: The gateway's pacing: a bit faster than the fake's flood control below lets through.
EAGER = Limits(per_chat_interval=0.15, group_per_minute=10**6, global_per_second=20)
#: The fake's flood control: 5 sends or edits a second per chat, 300 a minute per group, 30 a second in all.
FLOOD = dict(per_chat_per_second=5, per_group_per_minute=300, global_per_second=30)
MORE_NAMES = ["Hal", "Ivy", "Jon"]
SETTLE = 0.3  # seconds a keyboard in the group is shown before it is pressed


def texts(fake, chat) -> list[str]:
    return [m.text for m in fake.messages(chat)]


def ended(fake, group) -> bool:
    """The group was told the game is over (a line starting 🏁, perhaps inside a merged message)."""
    return any(line.startswith("🏁") for t in texts(fake, group) for line in t.split("\n"))


async def open_lobby(fake, group, players) -> None:
    """Every player opens the bot in private, the first opens a lobby, the others join."""
    for user in players:
        if not user.started:
            await user.start_private()
    await players[0].send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=30)
    for user in players[1:]:
        await user.press(lobby, button="Join")
    await fake.wait_for(lambda: sum(t.count("joined the game") for t in texts(fake, group)) == len(players),
                        timeout=30)


async def start(fake, group, players) -> None:
    """The host starts the game; every player gets a role card."""
    await players[0].send(group, "/startgame")
    for user in players:
        await fake.wait_for_message(user.private_chat, "Your role", timeout=30)


async def play_to_the_end(fake, group, players, *, timeout: float = 80, during=None, on_teams=()) -> None:
    """Press the buttons as the players would until the group is told the game is over: the
    leader picks the players named in ``on_teams`` and then the first seats, and confirms; everyone
    approves; every private choice of this game takes its first button. ``during(message)`` is
    awaited once for each new group keyboard. A keyboard is pressed a moment after it appears
    (as a person would), not in the very millisecond it is posted."""
    by_name = {u.first_name: u for u in players}
    game = None
    acted: set[tuple[int, int, str]] = set()
    seen: dict[tuple[int, int, str], float] = {}
    deadline = time.monotonic() + timeout
    while not ended(fake, group):
        assert time.monotonic() < deadline, "the game did not end:\n" + "\n".join(texts(fake, group)[-10:])
        progressed = False
        for message in fake.messages(group):
            data = message.callback_data
            key = (group.id, message.message_id, (message.text if data and data[0].startswith("p:") else "")
                   + ",".join(data))
            if not data or key in acted or data[0].startswith("j:"):
                continue
            if time.monotonic() - seen.setdefault(key, time.monotonic()) < SETTLE:
                continue
            game = game or data[0].split(":")[1]
            if data[0].startswith("p:"):  # the leader's team picker, pressed again after each edit
                leader = by_name[re.match(r"👑 (\w+):", message.text).group(1)]
                size = int(re.search(r"pick (\d+)", message.text).group(1))
                picked = int(re.search(r"(\d+) selected", message.text).group(1))
                seats = [b for b in message.buttons if not b["callback_data"].endswith(":-1")]
                free = sorted((b for b in seats if not b["text"].startswith("✅")),
                              key=lambda b: b["text"] not in on_teams)
                await leader.press(message, free[0]["callback_data"] if picked < size else data[-1])
            elif data[0].startswith("v:"):
                for user in players:
                    await user.press(message, data[0])
            if during is not None:
                await during(message)
            acted.add(key)
            progressed = True
        for user in players:
            for message in fake.messages(user.private_chat):
                data = message.callback_data
                key = (user.id, message.message_id, ",".join(data))
                if data and key not in acted and (game is None or data[0].split(":")[1] == game):
                    await user.press(message, data[0])
                    acted.add(key)
                    progressed = True
        await asyncio.sleep(0.05 if progressed else 0.1)


@pytest.mark.parametrize("telegram_world", [EAGER], indirect=True)
async def test_after_every_429_nothing_goes_to_that_chat_before_its_retry_after_and_help_and_rules_arrive(
        telegram_world):
    fake, group, users, process = telegram_world
    players = users + [fake.user(2000 + i, name) for i, name in enumerate(MORE_NAMES)]
    group.add(*players)
    assert len(players) == 10 and len(NAMES) == 7
    started = time.monotonic()
    fake.rate_limit(**FLOOD)
    await open_lobby(fake, group, players)
    await start(fake, group, players)

    asked: list[str] = []

    async def ask_while_busy(message) -> None:
        """On the first vote, Telegram refuses the group's next call for 2 s, and /help and /rules
        come in meanwhile; on the second, they come in while the tally is being edited."""
        if not message.callback_data[0].startswith("v:") or len(asked) >= 4:
            return
        if not asked:
            fake.fail_next("*", code=429, retry_after=2, chat_id=group.id)
        await players[1].send(group, "/help")
        await players[2].send(group, "/rules")
        asked.extend(["/help", "/rules"])

    await play_to_the_end(fake, group, players, timeout=80, during=ask_while_busy)
    await fake.wait_for(lambda: sum(t.count("the narrator") for t in texts(fake, group)) == 2
                        and sum(t.count("The rules of this game") for t in texts(fake, group)) == 2, timeout=20,
                        what="the replies to /help and /rules")
    elapsed = time.monotonic() - started

    refused = [c for c in fake.sent_log if c.retry_after is not None]
    assert any(c.retry_after == 2 and c.chat_id == group.id for c in refused), "the injected 429 happened"
    assert fake.rate_limit_hits, "the flood control pushed back too"
    assert fake.flood_violations() == [], "a call came before its chat's retry_after had passed"
    for call in refused:  # the same, said by hand: the next send or edit to that chat waited
        later = [c for c in fake.calls_to(call.chat_id) if c.clock > call.clock]
        if later:
            assert later[0].clock - call.clock >= call.retry_after, (call, later[0])
    assert len(asked) == 4
    assert ended(fake, group)
    for user in players:
        assert "\n".join(texts(fake, user.private_chat)).count("Your role:") == 1, user
    assert elapsed < 90, f"the game took {elapsed:.0f} s"


@pytest.mark.parametrize("telegram_world", [EAGER], indirect=True)
async def test_429s_for_two_chats_at_once_hold_every_chat_back_until_they_have_passed(telegram_world):
    fake, group, users, process = telegram_world
    sender = process.gateway.sender
    ann, bob, cleo = users[:3]
    for user in (ann, bob, cleo):
        await user.start_private()
    for user in (ann, bob, cleo):
        await fake.wait_for_message(user, "Welcome", timeout=10)
    fake.fail_next("sendMessage", code=429, retry_after=2, chat_id=ann.id)
    fake.fail_next("sendMessage", code=429, retry_after=2, chat_id=bob.id)
    first = [sender.send_soon(ann.id, "one for Ann"), sender.send_soon(bob.id, "one for Bob")]
    await fake.wait_for(lambda: len([c for c in fake.sent_log if c.retry_after]) == 2, timeout=10)
    await asyncio.sleep(0.3)  # the two answers reach the gateway (the fake counted them as it sent them)
    third = sender.send_soon(cleo.id, "one for Cleo")  # a chat that Telegram never refused
    await asyncio.wait_for(asyncio.gather(*first, third), 15)
    refusals = [c for c in fake.sent_log if c.retry_after]
    cleo_call = fake.calls_to(cleo.id)[-1]
    assert "one for Cleo" in cleo_call.params["text"] and cleo_call.ok
    # whichever refusal came second made the pause global: Cleo's message waited it out too
    assert cleo_call.clock >= min(c.clock + c.retry_after for c in refusals), "Cleo's message was held too"
    assert [c.ok for c in fake.calls_to(ann.id)] == [True, False, True]  # welcome, refused, sent
    assert [c.ok for c in fake.calls_to(bob.id)] == [True, False, True]
    assert fake.flood_violations() == []
