"""A message that cannot be drawn or cannot be delivered is not lost silently: it is tried again,
then recorded dead (kept in the outbox with its error, logged, counted for operators) and the
group is told; the game's next messages still go out."""

from __future__ import annotations

import pytest

from avalon.shared import ops


def texts(fake, chat) -> list[str]:
    return [m.text for m in fake.messages(chat)]


async def test_an_event_that_cannot_be_rendered_is_tried_again_then_dead_and_the_game_goes_on(world):
    fake, group, users, gateway = world
    ann, bob, cleo = users[:3]
    real_render = gateway.narrator.render
    tries = []

    def render(envelope, recipient, channel, context):
        if envelope.event.type == "player_joined" and envelope.event.player == f"tg:{bob.id}":
            tries.append(envelope.message_id)
            raise KeyError("a template that is not there")
        return real_render(envelope, recipient, channel, context)

    gateway.narrator.render = render
    dead_before = ops.sample("avalon_dead_messages_total", service="delivery", channel="telegram")
    for user in (ann, bob, cleo):
        await user.start_private()
    await ann.send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    await bob.press(lobby, button="Join")
    await fake.wait_for_message(group, "could not be delivered", timeout=30)
    await cleo.press(lobby, button="Join")
    await fake.wait_for_message(group, "Cleo joined", timeout=15)

    assert len(tries) == 3 and len(set(tries)) == 1, "the same event, tried three times"
    dead = await gateway.outbox.dead_rows()
    assert [(row.event_id, row.recipient) for row in dead] == [(tries[0], "group")]
    assert "could not render player_joined" in (await _errors(gateway))[0]
    assert ops.sample("avalon_dead_messages_total", service="delivery", channel="telegram") == dead_before + 1
    assert not any("Bob joined" in t for t in texts(fake, group))


@pytest.mark.parametrize("code, description", [
    (400, "Bad Request: can't parse entities"),
    # a code the sender has no rule for (404, 409, 413, ...): its chat's worker once died with it, the
    # message's sender waited forever, and the group heard nothing more
    (404, "Not Found: something odd"),
])
async def test_a_message_telegram_refuses_is_dead_the_host_is_told_and_the_next_ones_still_go(world, code,
                                                                                              description):
    fake, group, users, gateway = world
    ann, bob = users[:2]
    for user in (ann, bob):
        await user.start_private()
    await ann.send(group, "/newgame")
    lobby = await fake.wait_for_message(group, "A new game", timeout=15)
    await fake.wait_for_message(group, "Ann joined", timeout=15)
    fake.fail_next("sendMessage", code=code, description=description, chat_id=group.id)
    await bob.press(lobby, button="Join")
    await fake.wait_for_message(ann.private_chat, "could not be delivered", timeout=30)  # the group's own message
    await bob.send(group, "/leave")
    await fake.wait_for_message(group, "Bob left", timeout=15)

    dead = await gateway.outbox.dead_rows()
    assert len(dead) == 1 and dead[0].recipient == str(group.id) and "Bob joined" in dead[0].body["text"]
    assert (await gateway.outbox.counts())["dead"] == 1
    assert not any("Bob joined" in t for t in texts(fake, group))


async def _errors(gateway) -> list[str]:
    from sqlalchemy import select

    from avalon.shared.delivery.rows import OutboxRow

    async with gateway.outbox.engine.connect() as conn:
        rows = await conn.execute(select(OutboxRow.last_error).where(OutboxRow.state == "dead"))
        return [error for (error,) in rows.all()]
