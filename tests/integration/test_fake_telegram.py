"""The fake Telegram Bot API behaves like Telegram for a real aiogram 3 Bot.

Everything runs on 127.0.0.1: a guard fails any test that opens a connection anywhere else.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time

import pytest
from aiogram import Bot, Dispatcher, F
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramConflictError,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNotFound,
    TelegramRetryAfter,
)
from aiogram.filters import CommandObject, CommandStart
from aiogram.types import (
    BotCommand,
    BotCommandScopeAllGroupChats,
    CallbackQuery,
    ChatFullInfo,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
)

from tests.fakes import FakeTelegram, WaitTimeout


@pytest.fixture(autouse=True)
def only_loopback(monkeypatch):
    """Fail loudly if anything tries to reach a non-loopback address."""
    real_connect = socket.socket.connect

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            if not ipaddress.ip_address(host).is_loopback:
                raise AssertionError(f"test tried to reach {address}; the tests must not touch the internet")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture
async def fake():
    async with FakeTelegram() as server:
        yield server


@pytest.fixture
async def bot(fake):
    bot = Bot(fake.token, session=AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url)))
    yield bot
    # AiohttpSession.close() sleeps 250 ms to let TLS connections shut down; these are plain HTTP, so
    # close the aiohttp session first (close() then has nothing left to wait for).
    client = getattr(bot.session, "_session", None)
    if client is not None and not client.closed:
        await client.close()
    await bot.session.close()


def keyboard(*buttons: tuple[str, str]) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(
        inline_keyboard=[[InlineKeyboardButton(text=text, callback_data=data)] for text, data in buttons]
    )


async def test_get_me_describes_the_fake_bot(fake, bot):
    me = await bot.get_me()

    assert me.id == 123456 == bot.id
    assert me.is_bot and me.username == fake.bot_username
    assert me.can_read_all_group_messages is False  # privacy mode, Telegram's default
    assert fake.calls("getMe")[0].ok


async def test_a_message_sent_to_a_group_is_recorded_and_returned_as_a_message(fake, bot):
    alice = fake.user(1001, "Alice", username="alice")
    table = fake.group(-4001, "Avalon night", members=[alice])

    first = await bot.send_message(
        table.id, "<b>Quest 1</b> begins, &lt;Alice&gt; leads", parse_mode="HTML",
        reply_markup=keyboard(("Approve", "vote:yes"), ("Reject", "vote:no")),
    )
    second = await bot.send_message(table.id, "second")

    assert isinstance(first, Message)
    assert first.chat.id == table.id and first.chat.type == "group" and first.chat.title == "Avalon night"
    assert first.from_user.id == bot.id and first.from_user.is_bot
    assert first.text == "Quest 1 begins, <Alice> leads"  # markup removed, entities decoded
    assert [(e.type, e.offset, e.length) for e in first.entities] == [("bold", 0, 7)]
    assert first.reply_markup.inline_keyboard[1][0].callback_data == "vote:no"
    assert second.message_id == first.message_id + 1

    recorded = fake.messages(table)
    assert [m.message_id for m in recorded] == [first.message_id, second.message_id]
    assert recorded[0].raw_text == "<b>Quest 1</b> begins, &lt;Alice&gt; leads"
    assert recorded[0].parse_mode == "HTML"
    assert recorded[0].callback_data == ["vote:yes", "vote:no"]
    call = fake.calls("sendMessage")[0]
    assert call.params["chat_id"] == table.id and call.params["parse_mode"] == "HTML"
    assert call.params["reply_markup"]["inline_keyboard"][0][0] == {"text": "Approve", "callback_data": "vote:yes"}


async def test_a_private_message_before_the_user_pressed_start_is_forbidden_and_works_after(fake, bot):
    bob = fake.user(1002, "Bob", username="bob", language_code="fr")

    with pytest.raises(TelegramForbiddenError, match="bot can't initiate conversation with a user"):
        await bot.send_message(bob.id, "Your role: Merlin")

    start = await bob.start_private()
    sent = await bot.send_message(bob.id, "Your role: Merlin")

    assert start["text"] == "/start" and start["entities"] == [{"type": "bot_command", "offset": 0, "length": 6}]
    assert start["from"]["language_code"] == "fr" and start["chat"] == {
        "id": 1002, "first_name": "Bob", "username": "bob", "type": "private"}
    assert sent.chat.type == "private" and sent.message_id == start["message_id"] + 1
    assert fake.messages(bob.id)[0].text == "Your role: Merlin"


async def test_a_user_who_blocked_the_bot_makes_private_sends_forbidden(fake, bot):
    carol = fake.user(1003, "Carol")
    await carol.start_private("game-7")
    await bot.send_message(carol.id, "Welcome")

    await carol.block_bot()

    with pytest.raises(TelegramForbiddenError, match="bot was blocked by the user"):
        await bot.send_message(carol.id, "Your role: Assassin")
    assert fake.updates_log[-1]["my_chat_member"]["new_chat_member"]["status"] == "kicked"
    await carol.start_private()  # "Restart" in the client unblocks
    await bot.send_message(carol.id, "Welcome back")


async def test_an_injected_429_raises_retry_after_with_its_delay_once(fake, bot):
    alice = fake.user(1001, "Alice")
    await alice.start_private()
    fake.fail_next("sendMessage", code=429, retry_after=7)

    with pytest.raises(TelegramRetryAfter) as raised:
        await bot.send_message(alice.id, "hello")

    assert raised.value.retry_after == 7
    assert "Too Many Requests: retry after 7" in str(raised.value)
    await bot.send_message(alice.id, "hello")
    assert [c.ok for c in fake.calls("sendMessage")] == [False, True]
    assert len(fake.messages(alice.id)) == 1


async def test_editing_to_the_same_content_is_refused_as_not_modified_and_an_edit_without_markup_drops_buttons(
        fake, bot):
    alice = fake.user(1001, "Alice")
    table = fake.group(-4001, "Avalon night", members=[alice])
    sent = await bot.send_message(table.id, "Team: Alice, Bob", reply_markup=keyboard(("Approve", "vote:yes")))

    with pytest.raises(TelegramBadRequest, match="message is not modified"):
        await bot.edit_message_text("Team: Alice, Bob", chat_id=table.id, message_id=sent.message_id,
                                    reply_markup=keyboard(("Approve", "vote:yes")))
    with pytest.raises(TelegramBadRequest, match="message is not modified"):
        await bot.edit_message_reply_markup(chat_id=table.id, message_id=sent.message_id,
                                            reply_markup=keyboard(("Approve", "vote:yes")))

    edited = await bot.edit_message_text("Team: Alice, Bob (approved)", chat_id=table.id, message_id=sent.message_id)

    assert edited.edit_date is not None and edited.reply_markup is None
    recorded = fake.messages(table)[0]
    assert recorded.text == "Team: Alice, Bob (approved)" and recorded.reply_markup is None
    assert recorded.history == [("Team: Alice, Bob", {"inline_keyboard": [[{"text": "Approve",
                                                                            "callback_data": "vote:yes"}]]})]
    with pytest.raises(TelegramBadRequest, match="message to edit not found"):
        await bot.edit_message_text("x", chat_id=table.id, message_id=999)


async def test_a_polling_dispatcher_receives_start_and_a_button_press_and_its_callback_answer_is_recorded(fake, bot):
    dp = Dispatcher()

    @dp.message(CommandStart())
    async def on_start(message: Message, command: CommandObject) -> None:
        await message.answer(f"Welcome, {message.from_user.first_name}! table={command.args}",
                             reply_markup=keyboard(("Join the table", "join:42")))

    @dp.callback_query(F.data.startswith("join:"))
    async def on_join(callback: CallbackQuery) -> None:
        await callback.answer("You joined table 42", show_alert=True)
        await callback.message.edit_text(f"{callback.from_user.first_name} joined")

    alice = fake.user(1001, "Alice", username="alice")
    polling = asyncio.create_task(dp.start_polling(bot, handle_signals=False, polling_timeout=1))
    try:
        await alice.start_private("42")
        welcome = await fake.wait_for_message(alice.private_chat, contains="Welcome")
        assert welcome.text == "Welcome, Alice! table=42" and welcome.callback_data == ["join:42"]

        query = await alice.press(welcome, button="Join the table")
        answer = (await fake.wait_for(lambda: fake.callback_answers))[0]
        joined = await fake.wait_for_message(alice.private_chat, contains="joined")
    finally:
        if not polling.done():
            await dp.stop_polling()
        await polling

    assert query["message"]["message_id"] == welcome.message_id and query["data"] == "join:42"
    assert (answer.query_id, answer.user_id, answer.text, answer.show_alert) == (
        query["id"], alice.id, "You joined table 42", True)
    assert joined.message_id == welcome.message_id and joined.reply_markup is None
    polls = fake.calls("getUpdates")
    assert set(polls[0].params["allowed_updates"]) == {"message", "callback_query"}
    assert polls[0].params["timeout"] == 1
    assert fake.calls("getMe"), "aiogram's polling starts with getMe"


async def test_a_group_upgraded_to_a_supergroup_answers_migrate_to_chat(fake, bot):
    alice = fake.user(1001, "Alice")
    old = fake.group(-4001, "Avalon night", members=[alice])
    await bot.send_message(old.id, "before")

    new = await fake.migrate_to_supergroup(old)

    with pytest.raises(TelegramMigrateToChat) as raised:
        await bot.send_message(old.id, "after")
    assert raised.value.migrate_to_chat_id == new.id == -1000000004001
    sent = await bot.send_message(new.id, "after")
    assert sent.chat.type == "supergroup" and sent.chat.title == "Avalon night"
    service = [u["message"] for u in fake.pending_updates]
    assert service[0]["migrate_to_chat_id"] == new.id and service[1]["migrate_from_chat_id"] == old.id
    assert [m.text for m in fake.messages(old.id)] == ["before"]


async def test_an_unknown_method_answers_404_and_is_listed(fake, bot):
    alice = fake.user(1001, "Alice")
    await alice.start_private()

    with pytest.raises(TelegramNotFound, match="method not found"):
        await bot.send_dice(alice.id)

    assert [c.method for c in fake.unknown_calls] == ["sendDice"]


async def test_the_rate_limit_storm_answers_429_with_a_retry_after_like_telegram(fake, bot):
    alice = fake.user(1001, "Alice")
    await alice.start_private()
    table = fake.group(-4001, "Avalon night", members=[alice])
    fake.rate_limit()

    await bot.send_message(alice.id, "one")
    with pytest.raises(TelegramRetryAfter) as per_chat:
        await bot.send_message(alice.id, "two")
    assert per_chat.value.retry_after == 1

    fake.rate_limit(per_chat_per_second=100, per_group_per_minute=3)
    for n in range(3):
        await bot.send_message(table.id, f"line {n}")
    with pytest.raises(TelegramRetryAfter) as per_group:
        await bot.send_message(table.id, "line 3")
    assert 55 <= per_group.value.retry_after <= 60

    fake.rate_limit_off()
    await bot.send_message(table.id, "line 3")
    assert len(fake.rate_limit_hits) == 2


async def test_long_polling_waits_for_the_next_update_and_offset_confirms(fake, bot):
    alice = fake.user(1001, "Alice")
    started = time.monotonic()
    assert await bot.get_updates(timeout=1) == []
    assert time.monotonic() - started >= 0.9

    waiting = asyncio.create_task(bot.get_updates(timeout=10))
    await asyncio.sleep(0.1)
    await alice.start_private()
    updates = await asyncio.wait_for(waiting, 2)

    assert [u.message.text for u in updates] == ["/start"]
    assert [u.update_id for u in await bot.get_updates()] == [updates[0].update_id]  # not confirmed yet
    assert await bot.get_updates(offset=updates[-1].update_id + 1) == []
    assert fake.pending_updates == []


async def test_html_telegram_cannot_parse_is_refused_with_its_reason(fake, bot):
    alice = fake.user(1001, "Alice")
    await alice.start_private()

    with pytest.raises(TelegramBadRequest, match="can't parse entities: Can't find end tag corresponding to start tag"):
        await bot.send_message(alice.id, "<b>Merlin", parse_mode="HTML")
    with pytest.raises(TelegramBadRequest, match='Unsupported start tag "" at byte offset 2'):
        await bot.send_message(alice.id, "2 < 3", parse_mode="HTML")
    with pytest.raises(TelegramBadRequest, match="Character '.' is reserved"):
        await bot.send_message(alice.id, "Vote now.", parse_mode="MarkdownV2")
    with pytest.raises(TelegramBadRequest, match="BUTTON_DATA_INVALID"):
        await bot.send_message(alice.id, "too long", reply_markup=keyboard(("x", "d" * 65)))
    assert fake.messages(alice.id) == []


async def test_privacy_mode_hides_plain_group_chatter_but_not_commands_for_the_bot(fake):
    alice = fake.user(1001, "Alice")
    table = fake.group(-4001, "Avalon night", members=[alice])

    await alice.send(table, "anyone up for a game?")
    await alice.send(table, "/newgame@some_other_bot")
    command = await alice.send(table, "/newgame 7", mention_bot=True)

    assert [u["message"]["text"] for u in fake.pending_updates] == [f"/newgame@{fake.bot_username} 7"]
    assert command["entities"] == [{"type": "bot_command", "offset": 0, "length": len("/newgame@avalon_test_bot")}]
    assert [m["text"] for m in fake.undelivered] == ["anyone up for a game?", "/newgame@some_other_bot"]


async def test_a_webhook_is_recorded_and_blocks_get_updates_until_deleted(fake, bot):
    assert await bot.set_webhook("https://narrator.example/telegram", secret_token="s3cret")

    info = await bot.get_webhook_info()
    assert info.url == "https://narrator.example/telegram"
    assert fake.webhook["secret_token"] == "s3cret"
    with pytest.raises(TelegramConflictError, match="webhook is active"):
        await bot.get_updates()

    assert await bot.delete_webhook(drop_pending_updates=True)
    assert (await bot.get_webhook_info()).url == ""
    assert await bot.get_updates() == []


async def test_chat_and_member_lookups_have_telegram_shapes(fake, bot):
    alice, bob = fake.user(1001, "Alice"), fake.user(1002, "Bob")
    dave = fake.user(1004, "Dave")
    table = fake.group(-4001, "Avalon night", members=[bob], creator=alice)

    chat = await bot.get_chat(table.id)
    assert isinstance(chat, ChatFullInfo) and chat.title == "Avalon night" and chat.type == "group"
    assert (await bot.get_chat_member(table.id, alice.id)).status == "creator"
    assert (await bot.get_chat_member(table.id, bob.id)).status == "member"
    assert (await bot.get_chat_member(table.id, dave.id)).status == "left"
    assert (await bot.get_chat_member(table.id, bot.id)).status == "member"
    with pytest.raises(TelegramBadRequest, match="user not found"):
        await bot.get_chat_member(table.id, 999999)
    with pytest.raises(TelegramBadRequest, match="chat not found"):
        await bot.get_chat(-999)


async def test_commands_are_recorded_per_scope_and_language(fake, bot):
    assert await bot.set_my_commands([BotCommand(command="newgame", description="Start a game")])
    assert await bot.set_my_commands([BotCommand(command="newgame", description="Nouvelle partie")],
                                     scope=BotCommandScopeAllGroupChats(), language_code="fr")

    assert fake.commands() == [{"command": "newgame", "description": "Start a game"}]
    assert fake.commands({"type": "all_group_chats"}, "fr")[0]["description"] == "Nouvelle partie"
    with pytest.raises(TelegramBadRequest, match="BOT_COMMAND_INVALID"):
        await bot.set_my_commands([BotCommand(command="New-Game", description="x")])


async def test_a_callback_query_can_be_answered_only_once_and_deleted_messages_are_gone(fake, bot):
    alice = fake.user(1001, "Alice")
    await alice.start_private()
    sent = await bot.send_message(alice.id, "Pick", reply_markup=keyboard(("A", "a")))
    query = await alice.press(sent, "a")

    assert await bot.answer_callback_query(query["id"], text="Picked A")
    with pytest.raises(TelegramBadRequest, match="query is too old"):
        await bot.answer_callback_query(query["id"])
    with pytest.raises(ValueError, match="no button"):
        await alice.press(sent, "b")

    assert await bot.delete_message(alice.id, sent.message_id)
    with pytest.raises(TelegramBadRequest, match="message to delete not found"):
        await bot.delete_message(alice.id, sent.message_id)
    assert fake.messages(alice.id) == []


async def test_wait_for_gives_up_with_an_assertion_naming_the_condition(fake):
    with pytest.raises(WaitTimeout, match="nothing ever happens not met within 0.1s"):
        await fake.wait_for(lambda: False, timeout=0.1, what="nothing ever happens")
