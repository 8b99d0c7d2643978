"""A photo goes the way a message goes: a server error is tried again and the same picture arrives;
a photo Telegram refuses is recorded dead and the host is told (the group's own message is what was
lost), like a lost message."""

from __future__ import annotations

from avalon.shared.pictures import draw_board

from .test_telegram_edges import started_game


async def test_a_photo_refused_for_a_while_arrives_whole_and_a_photo_refused_for_good_is_told(world):
    fake, group, users, gateway = world
    await started_game(fake, group, users[:5])
    fake.fail_next("sendPhoto", code=502, times=2)  # Telegram's server away for a moment
    await users[1].send(group, "/status")
    await fake.wait_for(lambda: fake.photos(group), timeout=15)
    game = next(iter(gateway.book.games.values()))
    assert fake.photos(group)[0].photo == draw_board(game.table.picture, gateway.memory.names, "en")
    assert [c.error_code for c in fake.calls("sendPhoto")] == [502, 502, None]

    fake.fail_next("sendPhoto", code=400, description="Bad Request: IMAGE_PROCESS_FAILED")
    await users[1].send(group, "/status")
    await fake.wait_for_message(users[0].private_chat, "could not be delivered", timeout=15)
    assert len(fake.photos(group)) == 1
    assert (await gateway.book.outbox.counts()).get("dead") == 1
