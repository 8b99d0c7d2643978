"""A press Telegram delivers again is not applied twice. Telegram keeps an update until the bot's
next getUpdates confirms it; a gateway that dies after handling a press and before that call (a
SIGKILL while its poll waits out a 502) gets the same press again once restarted. A pick in the
leader's team picker toggles: handled again, it would take the player back off the team while the
picker still shows them on it. The gateway saves the ids of the updates it handled with its memory,
and the restarted one skips the copy."""

from __future__ import annotations

from aiogram.exceptions import TelegramBadRequest

from avalon.services.telegram_gateway.callbacks import PickCb
from avalon.services.telegram_gateway.gateway import TelegramGateway
from avalon.services.telegram_gateway.memory import GroupGame
from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.table import Seats, Table, Turn
from avalon.shared.game import CommandKind, Phase
from avalon.shared.protocol import Choice, ChoicesOffered
from avalon.shared.bus import InProcessBus
from tests.fakes import FakeTelegram

GROUP, GAME = -4200, "tg-4200_1"
PLAYERS = ["tg:1", "tg:2", "tg:3", "tg:4", "tg:5"]


async def gateway(fake: FakeTelegram, database_url: str) -> tuple[TelegramGateway, InProcessBus]:
    """A gateway process's parts on the same database as any before it (its memory is loaded)."""
    bus = InProcessBus()
    await bus.start()
    gw = TelegramGateway(fake.make_bot(), bus, database_url=database_url)
    await gw.start()
    return gw, bus


async def test_a_pick_delivered_again_after_a_restart_is_not_toggled_back(tmp_path):
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    async with FakeTelegram() as fake:
        leader = fake.user(1, "Ann")
        fake.group(GROUP, "Camelot", members=[leader])
        first, bus = await gateway(fake, database_url)
        offer = ChoicesOffered(player=PLAYERS[0], phase=Phase.PROPOSAL, phase_id=3, choices=(
            Choice(kind=CommandKind.PROPOSE_TEAM, targets=tuple(PLAYERS), count=2),))
        game = Game(Table(GAME, seats=Seats(host=PLAYERS[0], players=list(PLAYERS)), turn=Turn(
            phase=Phase.PROPOSAL, phase_id=3, leader=PLAYERS[0], team_size=2, offers={PLAYERS[0]: offer})),
            GroupGame(GROUP))
        first.book.games[GAME] = game
        first.memory.current[GROUP] = GAME
        picker = await first.bot.send_message(GROUP, "👑 Ann: pick 2 — 0 selected.",
                                              reply_markup=first.channel.pick_keyboard(game))
        game.own.pick_message = picker.message_id
        await leader.press((GROUP, picker.message_id), PickCb(game=GAME, phase=3, seat=2).pack())
        update = fake.updates_log[-1]
        await first.dispatcher().feed_raw_update(first.bot, update)
        assert first.game(GAME).table.draft.picks == ["tg:3"]
        assert fake.callback_answers, "the press was answered"
        await first.bot.session.close()  # killed: nothing else is saved, no getUpdates confirms the press
        await bus.close()

        second, bus = await gateway(fake, database_url)
        try:
            try:  # Telegram delivers it again
                await second.dispatcher().feed_raw_update(second.bot, update)
            except TelegramBadRequest:
                pass  # answering it again: "query is too old" (polling logs it and goes on)
            assert second.game(GAME).table.draft.picks == ["tg:3"], "the pick was applied twice"
            assert "1 selected" in fake.messages(GROUP)[-1].text
        finally:
            await second.close()
            await second.bot.session.close()
            await bus.close()
