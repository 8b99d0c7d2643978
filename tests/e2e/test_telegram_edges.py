"""The Telegram gateway when people and Telegram misbehave: strangers, stale buttons, players who
never started the bot or blocked it, and Telegram's 429 answers."""

from __future__ import annotations

import asyncio

import pytest



async def lobby_of(fake, group, users, *, started=True):
    if started:
        for user in users:
            await user.start_private()
    await users[0].send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    for user in users[1:]:
        await user.press(lobby, button="Join")
    # announcements waiting for the same chat may arrive merged into one message: count them all
    await fake.wait_for(lambda: sum(m.text.count("joined the game") for m in fake.messages(group)) == len(users),
                        timeout=15)
    return lobby


async def started_game(fake, group, users):
    await lobby_of(fake, group, users)
    await users[0].send(group, "/startgame")
    return await fake.wait_for_message(
        group, timeout=15, where=lambda m: any(d.startswith("p:") for d in m.callback_data))


def alerts(fake, text):
    return [a for a in fake.callback_answers if a.show_alert and text in (a.text or "")]


async def test_a_strangers_press_gets_an_alert_and_changes_nothing(world):
    fake, group, users, gateway = world
    picker = await started_game(fake, group, users[:5])
    stranger = fake.user(999, "Mallory")
    group.add(stranger)
    await stranger.press(picker, picker.callback_data[0])
    await fake.wait_for(lambda: alerts(fake, "not playing"), timeout=10)
    assert "1 selected" not in fake.messages(group)[-1].text


async def test_only_the_leader_picks_the_team_and_others_get_an_alert(world):
    fake, group, users, gateway = world
    picker = await started_game(fake, group, users[:5])
    leader_name = picker.text.split(":")[0].removeprefix("👑 ")
    other = next(u for u in users[:5] if u.first_name != leader_name)
    await other.press(picker, picker.callback_data[0])
    await fake.wait_for(lambda: alerts(fake, "not your turn"), timeout=10)


async def test_a_press_on_a_keyboard_of_a_past_phase_is_refused_politely(world):
    fake, group, users, gateway = world
    picker = await started_game(fake, group, users[:5])
    leader = next(u for u in users if picker.text.startswith(f"👑 {u.first_name}:"))
    size = int(picker.text.split("pick ")[1].split(" ")[0])
    for i in range(size):
        await leader.press(picker, picker.callback_data[i])
        await fake.wait_for(lambda i=i: f"{i + 1} selected" in fake.messages(group)[-1].text
                            or any(f"{i + 1} selected" in m.text for m in fake.messages(group)), timeout=10)
    await leader.press(picker, picker.callback_data[-1])
    await fake.wait_for_message(group, "Everyone votes", timeout=10)
    await leader.press(picker, picker.callback_data[0])  # the old team picker
    await fake.wait_for(lambda: alerts(fake, "already over"), timeout=10)


async def test_a_player_who_never_started_the_bot_gets_a_deep_link_and_the_game_waits(world):
    fake, group, users, gateway = world
    for user in users[:4]:
        await user.start_private()
    await lobby_of(fake, group, users[:5], started=False)
    late = users[4]
    notice = await fake.wait_for_message(group, f"{late.first_name}, I cannot write to you yet", timeout=10)
    assert "start=join_" in notice.raw_text or "start=join_" in notice.text
    await users[0].send(group, "/startgame")
    waiting = await fake.wait_for_message(group, "Still waiting for", timeout=10)
    assert late.first_name in waiting.text
    link_payload = waiting.text.split("start=")[1].split()[0].rstrip(".")
    await late.start_private(link_payload)
    await users[0].send(group, "/startgame")
    await fake.wait_for_message(late.private_chat, "Your role:", timeout=15)


async def test_a_player_who_blocked_the_bot_is_reported_to_the_group(world):
    fake, group, users, gateway = world
    await started_game(fake, group, users[:5])
    victim = users[2]
    await victim.block_bot()
    gateway.sender.send_soon(victim.id, "ping")  # any private message now answers 403
    notice = await fake.wait_for_message(group, "cannot receive my private messages", timeout=10)
    assert victim.first_name in notice.text


@pytest.mark.parametrize("telegram_world", [None], indirect=True)
async def test_a_429_storm_delays_messages_but_loses_none(world):
    fake, group, users, gateway = world
    fake.rate_limit(per_chat_per_second=2, per_group_per_minute=30, global_per_second=30)
    fake.fail_next("sendMessage", code=429, retry_after=1, times=2)
    await lobby_of(fake, group, users)
    joined = [m for m in fake.messages(group) if "joined the game" in m.text]
    assert sum(m.text.count("joined the game") for m in joined) == len(users), "every announcement arrived"
    assert fake.rate_limit_hits or fake.calls("sendMessage", ok=False), "Telegram pushed back"
    await asyncio.sleep(0)


async def test_the_host_changes_settings_with_buttons_and_others_cannot(world):
    fake, group, users, gateway = world
    await lobby_of(fake, group, users[:5])
    await users[0].send(group, "/settings")
    panel = await fake.wait_for_message(group, timeout=10,
                                        where=lambda m: any(d.startswith("s:") for d in m.callback_data))
    lady = next(b for b in panel.buttons if "Lady of the Lake" in b["text"])
    assert lady["text"].startswith("▫️")
    await users[1].press(panel, lady["callback_data"])
    await fake.wait_for(lambda: alerts(fake, "Only the host"), timeout=10)
    await users[0].press(panel, lady["callback_data"])
    await fake.wait_for(lambda: any(b["text"].startswith("✅") and "Lady of the Lake" in b["text"]
                                    for b in fake.messages(group)[fake.messages(group).index(panel)].buttons)
                        if panel in fake.messages(group) else False, timeout=10)
    await fake.wait_for_message(group, "The settings changed", timeout=10)


async def test_two_quick_settings_presses_both_count(world):
    """The host toggles two roles off before the engine has confirmed the first: the second press
    builds on the first, so neither undoes the other."""
    fake, group, users, gateway = world
    await lobby_of(fake, group, users[:5])
    await users[0].send(group, "/settings")
    panel = await fake.wait_for_message(group, timeout=10,
                                        where=lambda m: any(d.startswith("s:") for d in m.callback_data))

    def button(name: str) -> dict:
        return next(b for b in panel.buttons if b["text"].endswith(name))

    assert button("Percival")["text"].startswith("✅") and button("Morgana")["text"].startswith("✅")
    await users[0].press(panel, button("Percival")["callback_data"])
    await users[0].press(panel, button("Morgana")["callback_data"])
    await fake.wait_for(lambda: len(fake.calls("answerCallbackQuery", ok=True)) >= 2, timeout=10)
    await fake.wait_for(lambda: button("Morgana")["text"].startswith("▫️"), timeout=10, what="Morgana off")
    await asyncio.sleep(0.5)  # the last change shown is the last the host made
    assert button("Percival")["text"].startswith("▫️"), "the second press undid the first"
    assert button("Morgana")["text"].startswith("▫️")


async def test_with_lancelot_at_five_the_screen_ticks_what_is_dealt_and_the_game_deals_what_it_showed(world):
    """docs/rules.md sections 2 and 6: five players with Lancelot are dealt Merlin, Percival, the two
    Lancelots and the Assassin. The screen ticks Percival alone (Morgana has no seat), and with Percival
    taken off the game deals the Assassin, not Morgana: what the screen showed."""
    fake, group, users, gateway = world
    await lobby_of(fake, group, users[:5])
    await users[0].send(group, "/settings")
    panel = await fake.wait_for_message(group, timeout=10,
                                        where=lambda m: any(d.startswith("s:") for d in m.callback_data))

    def button(name: str) -> dict:
        return next(b for b in panel.buttons if b["text"].endswith(name) or b["text"].startswith(name))

    def ticked() -> set[str]:
        roles = ("Percival", "Morgana", "Mordred", "Oberon")
        return {r for r in roles if button(r)["text"].startswith("✅")}

    assert ticked() == {"Percival", "Morgana"}, "the standard set for five, without Lancelot"
    await users[0].press(panel, button("Lancelot")["callback_data"])
    await fake.wait_for(lambda: "1" in button("Lancelot")["text"], timeout=10, what="Lancelot variant 1 shown")
    await fake.wait_for(lambda: ticked() == {"Percival"}, timeout=10, what="the screen showing what is dealt")
    await users[0].press(panel, button("Percival")["callback_data"])
    await fake.wait_for(lambda: ticked() == set(), timeout=10, what="Percival off")
    await users[0].send(group, "/startgame")
    begins = await fake.wait_for_message(group, "The game begins", timeout=15)
    roles = next(line for line in begins.text.splitlines() if line.startswith("Roles in play"))
    for dealt in ("Merlin", "Good Lancelot", "the Assassin", "Evil Lancelot"):
        assert dealt in roles
    assert "Morgana" not in roles and "Percival" not in roles


async def test_status_rules_help_mygames_and_lang_answer(world):
    fake, group, users, gateway = world
    await started_game(fake, group, users[:5])
    await users[1].send(group, "/status")
    board = await fake.wait_for_message(group, "📋", timeout=10)
    assert "Quest 1" in board.text and "Vote track" in board.text
    await users[1].send(group, "/rules")
    await fake.wait_for_message(group, "Missed deadlines", timeout=10)
    await users[1].send(group, "/help")
    await fake.wait_for_message(group, "/newgame", timeout=10)
    await users[1].send(None, "/mygames")
    await fake.wait_for_message(users[1].private_chat, "Camelot", timeout=10)
    await users[1].send(group, "/lang ru")
    await fake.wait_for_message(group, "Язык", timeout=10)
    await users[1].send(group, "/status")
    await fake.wait_for_message(group, "Задание 1", timeout=10)


async def test_a_group_migrated_to_a_supergroup_keeps_its_game(world):
    fake, group, users, gateway = world
    await lobby_of(fake, group, users[:5])
    supergroup = await fake.migrate_to_supergroup(group)
    await users[0].send(supergroup, "/startgame")
    await fake.wait_for_message(supergroup, "The game begins", timeout=15)


async def test_a_gateway_restarted_mid_game_remembers_the_game_and_its_buttons(telegram_world):
    fake, group, users, process = telegram_world
    picker = await started_game(fake, group, users[:5])
    await process.stop()
    await process.start()  # a new process: everything it knows comes from the database
    leader = next(u for u in users if picker.text.startswith(f"👑 {u.first_name}:"))
    await leader.press(picker, picker.callback_data[0])
    await fake.wait_for(lambda: any("1 selected" in m.text for m in fake.messages(group)), timeout=10)
    await users[1].send(group, "/status")
    await fake.wait_for_message(group, "📋", timeout=10)
