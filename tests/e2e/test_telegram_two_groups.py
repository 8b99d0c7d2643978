"""A player seated in two groups' games at once: every private message about either game says
which game it belongs to (the group's title on its first line); a player in one game only reads
no such line. Real gateway and engine, fake Bot API on loopback, real RabbitMQ."""

from __future__ import annotations

from .test_telegram_flood import open_lobby, play_to_the_end, start

HEADER = "🎲 Game in "


async def test_a_player_in_two_games_reads_which_game_each_private_message_is_about(world):
    fake, camelot, users, gateway = world
    ann = users[0]
    tintagel = fake.group(-100600, "Tintagel", members=[ann, *users[5:7]])
    hal, ivy = fake.user(2000, "Hal"), fake.user(2001, "Ivy")
    tintagel.add(hal, ivy)
    in_camelot = users[:5]  # Ann, Bob, Cleo, Dan, Eve
    in_tintagel = [ann, users[5], users[6], hal, ivy]  # Ann, Finn, Gus, Hal, Ivy

    await open_lobby(fake, camelot, in_camelot)
    await open_lobby(fake, tintagel, in_tintagel)
    await start(fake, camelot, in_camelot)
    await start(fake, tintagel, in_tintagel)
    # Ann on every team (so she plays quest cards); Tintagel's game stays open meanwhile
    await play_to_the_end(fake, camelot, in_camelot, timeout=60, on_teams=("Ann",))

    welcome = "Welcome!"
    about_games = [m for m in fake.messages(ann) if welcome not in m.text]
    assert about_games, "Ann was told about her games"
    for message in about_games:
        first_line = message.text.split("\n", 1)[0]
        assert first_line in (HEADER + "Camelot", HEADER + "Tintagel"), message.text
        buttons = [b.get("callback_data", "") for _, markup in message.history + [(None, message.reply_markup)]
                   for row in (markup or {}).get("inline_keyboard", []) for b in row]
        game_chat = camelot if first_line.endswith("Camelot") else tintagel
        assert all(f"tg{game_chat.id}_" in data for data in buttons), message  # buttons of the game named
    cards = [m.text for m in about_games if "Your role:" in m.text]
    assert len(cards) == 2
    assert {card.split("\n", 1)[0] for card in cards} == {HEADER + "Camelot", HEADER + "Tintagel"}
    choices = [m for m in about_games if m.callback_data or any(markup for _, markup in m.history)]
    assert any(m.text.startswith(HEADER + "Camelot") for m in choices), "her quest cards in Camelot were headed"

    for user in in_camelot[1:] + in_tintagel[1:]:  # in one game only
        private = "\n".join(m.text for m in fake.messages(user))
        assert "Your role:" in private
        assert HEADER not in private, (user, private)
    for group in (camelot, tintagel):
        assert HEADER not in "\n".join(m.text for m in fake.messages(group)), "the groups read no header"
