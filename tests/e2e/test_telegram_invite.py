"""A Telegram group's lobby seats email players: the host invites them with /invite, the group sees
each invitation once, they join by mail (here: their commands straight on the bus, as the email
gateway sends them), and /startgame starts the game without waiting for them to open a private chat
with the bot, naming them in the seat order."""

from __future__ import annotations

from avalon.shared.protocol import CommandEnvelope

MIRA, OLAF = "mail:mira@example.org", "mail:olaf@example.org"


def group_text(fake, group) -> str:
    return "\n".join(m.text for m in fake.messages(group))


async def as_mail_player(gateway, player: str, game: str, body: dict) -> None:
    await gateway.bus.send_command(CommandEnvelope(game_id=game, actor=player, channel="email", command=body))


async def test_the_host_invites_email_players_who_join_by_mail_and_the_game_starts_with_them(world):
    fake, group, users, gateway = world
    ann, bob, cleo = users[:3]
    for user in (ann, bob, cleo):
        await user.start_private()
    await ann.send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    game = lobby.callback_data[0].split(":", 1)[1]
    for user in (bob, cleo):
        await user.press(lobby, button="Join")
    await fake.wait_for(lambda: group_text(fake, group).count("joined the game") == 3, timeout=15)
    for player, name in ((MIRA, "Mira"), (OLAF, "Olaf")):
        await gateway.bus.send_command(CommandEnvelope(
            game_id=f"profile:{player}", actor=player, channel="email",
            command={"type": "update_profile", "display_name": name}))

    await ann.send(group, "/invite Mira@Example.org not-an-address, olaf@example.org")
    refused = await fake.wait_for_message(group, "Not a valid email address", timeout=15)
    assert "not-an-address" in refused.text and "example.org" not in refused.text
    for name in ("Mira", "Olaf"):
        await fake.wait_for(lambda name=name: f"Ann invited {name} to the game" in group_text(fake, group),
                            timeout=15)
    assert "replying to the invitation email" in group_text(fake, group)
    assert not any("invited" in m.text for m in fake.messages(ann.private_chat)), \
        "the group is told, not the host again in private"

    for player in (MIRA, OLAF):
        await as_mail_player(gateway, player, game, {"type": "join"})
    await fake.wait_for(lambda: group_text(fake, group).count("joined the game") == 5, timeout=15)
    assert "Mira joined the game" in group_text(fake, group) and "Olaf joined the game" in group_text(fake, group)
    assert "I cannot write to you yet" not in group_text(fake, group), "mail players are reached by mail"

    await ann.send(group, "/startgame")
    started = await fake.wait_for_message(group, "The game begins", timeout=15)
    assert "Mira" in started.text and "Olaf" in started.text, started.text
    assert "mail:" not in group_text(fake, group)
    assert "Still waiting for" not in group_text(fake, group)
    for user in (ann, bob, cleo):
        await fake.wait_for_message(user.private_chat, "Your role", timeout=15)
    text = group_text(fake, group)
    assert text.count("invited Mira") == 1 and text.count("invited Olaf") == 1, "each invitation shown once"


async def test_invite_without_an_address_answers_how_to_use_it(world):
    fake, group, users, gateway = world
    ann = users[0]
    await ann.start_private()
    await ann.send(group, "/newgame")
    await fake.wait_for_message(group, "A new game", timeout=15)
    await ann.send(group, "/invite")
    usage = await fake.wait_for_message(group, "/invite", timeout=15)
    assert "Invite players by email" in usage.text
