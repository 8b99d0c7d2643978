"""A player who blocks the bot in the middle of a game and comes back: what was offered to them
while they were away reaches them again, privately, and counts (real gateway, fake Bot API over
HTTP answering 403 "bot was blocked by the user" meanwhile, real engine and RabbitMQ)."""

from __future__ import annotations

import re

from .conftest import NAMES

ROLE = "Your role:"


def texts(fake, chat) -> list[str]:
    return [m.text for m in fake.messages(chat)]


async def seated(fake, group, users):
    """Five players with their roles; the leader's picker in the group."""
    for user in users:
        await user.start_private()
    await users[0].send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    for user in users[1:]:
        await user.press(lobby, button="Join")
    await fake.wait_for(lambda: sum(t.count("joined the game") for t in texts(fake, group)) == len(users),
                        timeout=15)
    await users[0].send(group, "/startgame")
    for user in users:
        await fake.wait_for_message(user.private_chat, ROLE, timeout=15)
    picker = await fake.wait_for_message(group, timeout=15,
                                         where=lambda m: any(d.startswith("p:") for d in m.callback_data))
    return lobby, picker


def role_card(fake, user) -> str:
    return next(t for t in texts(fake, user.private_chat) if ROLE in t)


async def test_a_player_back_after_blocking_the_bot_plays_their_own_quest_card(world):
    fake, group, users, gateway = world
    players = users[:5]
    by_name = dict(zip(NAMES, players))
    lobby, picker = await seated(fake, group, players)
    game_id = lobby.callback_data[0].split(":", 1)[1]
    evil = next(u for u in players if "— Evil" in role_card(fake, u))
    leader = by_name[re.match(r"👑 (\w+):", picker.text).group(1)]
    partner = leader if leader is not evil else next(u for u in players if u is not evil)
    for count, member in enumerate((evil, partner), start=1):
        await leader.press(picker, button=member.first_name)
        await fake.wait_for(lambda: f"{count} selected" in picker.text, timeout=15, what="the pick drawn")

    await evil.block_bot()  # from now on every message to them answers 403
    await leader.press(picker, picker.callback_data[-1])  # the team goes to the vote
    vote = await fake.wait_for_message(group, timeout=15,
                                       where=lambda m: any(d.startswith("v:") for d in m.callback_data))
    for user in players:
        await user.press(vote, vote.callback_data[0])  # approve
    await fake.wait_for_message(partner.private_chat, "Your move", timeout=15)
    told = await fake.wait_for_message(group, f"{evil.first_name} cannot receive my private messages", timeout=15)
    assert f"start=join_{game_id}" in told.text, told.text
    assert not [t for t in texts(fake, evil.private_chat) if "Your move" in t], "nothing reached them while away"
    await partner.press(fake.messages(partner.private_chat)[-1], button="Success")

    # back: the link from the group opens the private chat again and presses Start
    await evil.start_private(f"join_{game_id}")
    await fake.wait_for_message(evil.private_chat, "Welcome", timeout=15)
    offer = await fake.wait_for_message(evil.private_chat, "Your move", timeout=15,
                                        where=lambda m: "Fail" in str(m.buttons))
    await evil.press(offer, button="Fail")
    result = await fake.wait_for_message(group, "Quest 1", timeout=15, where=lambda m: "💥" in m.text or "🏆" in m.text)
    assert "failed" in result.text and "1 fail card" in result.text, \
        f"their own card counted, not the missed-deadline default: {result.text!r}"
    assert "missed" not in "\n".join(texts(fake, group)).lower()

    # their role card again, on request: in private, never in the group
    cards_before = sum(ROLE in t for t in texts(fake, evil.private_chat))
    await evil.send(group, "/role")
    await evil.send(None, "/role")
    await fake.wait_for(lambda: sum(ROLE in t for t in texts(fake, evil.private_chat)) == cards_before + 2,
                        timeout=15, what="the role card, twice, in private")
    again = [t for t in texts(fake, evil.private_chat) if ROLE in t]
    assert again[-1].split(ROLE)[1] == again[0].split(ROLE)[1], "the card as dealt, with what they learned"

    # secrets: nothing private in the group or in another player's chat
    await gateway.outbox.idle()
    assert not [t for t in texts(fake, group) if ROLE in t or "Your move" in t]
    for user in players:
        if user is not evil:
            assert sum(ROLE in t for t in texts(fake, user.private_chat)) == 1, user.first_name
    assert sum("Your move" in t for t in texts(fake, partner.private_chat)) == 1, "the partner's offer, once"
