"""A player of another channel at a Telegram group's table is named, not shown as a raw id: the
names travel with the events (docs/protocol.md, `people`)."""

from __future__ import annotations

from avalon.shared.protocol import CommandEnvelope


async def test_a_mail_player_who_joins_a_telegram_game_is_named_in_the_group(world):
    fake, group, users, gateway = world
    ann = users[0]
    await ann.start_private()
    await ann.send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    game = lobby.callback_data[0].split(":", 1)[1]
    dan = "mail:dan@example.org"
    await gateway.bus.send_command(CommandEnvelope(game_id=f"profile:{dan}", actor=dan, channel="test",
                                                   command={"type": "update_profile", "display_name": "Dan"}))
    await gateway.bus.send_command(CommandEnvelope(game_id=game, actor=dan, channel="test",
                                                   command={"type": "join"}))
    joined = await fake.wait_for_message(group, "joined the game", timeout=15)
    await fake.wait_for(lambda: any("Dan joined the game" in m.text for m in fake.messages(group)), timeout=15)
    assert not any("mail:" in m.text for m in fake.messages(group)), [m.text for m in fake.messages(group)]
    assert joined
