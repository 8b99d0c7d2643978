"""A fake Telegram Bot API server for the Telegram gateway's tests.

``FakeTelegram`` is a real HTTP server (aiohttp, 127.0.0.1, a free port) that answers the Bot API the
way api.telegram.org does, so the gateway runs its real aiogram ``Bot`` against it::

    async with FakeTelegram() as fake:
        bot = Bot(fake.token, session=AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url)))
        alice = fake.user(1001, "Alice", username="alice")
        table = fake.group(-4001, "Avalon night", members=[alice])
        await alice.start_private()                 # until then the bot can't write to her privately
        await alice.send(table, "/newgame@" + fake.bot_username)
        message = await fake.wait_for_message(table, contains="Join")
        await alice.press(message, "join")          # a callback_query on that message
        await fake.wait_for(lambda: fake.callback_answers)

Everything the bot calls is in ``sent_log`` (``calls(method)`` filters it; ``calls_to(chat)``: the
sends and edits naming one chat, each with its arrival time on the fake's monotonic ``clock``); what
it said is in ``messages(chat)`` (current text after edits, entities, reply_markup). With flood
control on (``rate_limit``) or a 429 injected (``fail_next``), ``flood_violations()`` lists every
send or edit that came before a 429's retry_after had passed (to its chat; to any chat for the
global limit). Updates created by the
scripted users wait in a queue that ``getUpdates`` serves with Telegram's offset semantics and long
polling. Errors have Telegram's codes, descriptions and ``parameters`` (retry_after,
migrate_to_chat_id), so aiogram raises the same exceptions it raises in production.

Not modelled: webhook delivery (setWebhook is recorded and blocks getUpdates, as in Telegram), inline
mode, media other than ``sendPhoto`` (a photo's bytes are kept: ``SentMessage.photo``, its caption
is the message's ``text``), payments, forum topics; methods not implemented answer 404 and are listed in
``unknown_calls``.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
import math
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .telegram_markup import PARSE_MODES, MarkupError, detect_entities, render

log = logging.getLogger(__name__)

__all__ = [
    "ApiCall",
    "CallbackAnswer",
    "FakeChat",
    "FakeTelegram",
    "FakeUser",
    "SentMessage",
    "TelegramError",
    "WaitTimeout",
]

MAX_TEXT_LENGTH = 4096
MAX_CAPTION_LENGTH = 1024
MAX_CALLBACK_DATA_BYTES = 64

# Update types Telegram sends when allowed_updates is empty or was never given.
NOT_SENT_BY_DEFAULT = {"chat_member", "message_reaction", "message_reaction_count"}

# Methods that produce or change a message in a chat: what Telegram's flood control counts.
RATE_LIMITED_METHODS = {
    "sendMessage", "editMessageText", "editMessageReplyMarkup", "editMessageCaption", "sendPhoto",
    "sendDocument", "sendAnimation", "sendAudio", "sendVideo", "sendVoice", "sendSticker", "sendPoll",
    "sendDice", "sendMediaGroup", "sendLocation", "sendContact", "copyMessage", "forwardMessage",
}

CHAT_ACTIONS = {
    "typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
    "upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note",
}

# Parameters Telegram reads as integers / booleans / JSON; aiogram sends all of them as form strings.
_INT_PARAMS = {
    "chat_id", "message_id", "offset", "limit", "timeout", "user_id", "cache_time", "max_connections",
    "from_chat_id", "message_thread_id", "reply_to_message_id", "until_date",
}
_BOOL_PARAMS = {
    "show_alert", "disable_notification", "protect_content", "drop_pending_updates",
    "allow_sending_without_reply", "disable_web_page_preview", "only_if_banned", "revoke_messages",
    "allow_paid_broadcast", "is_big",
}
_JSON_PARAMS = {
    "reply_markup": "reply keyboard markup",
    "allowed_updates": "allowed updates",
    "entities": "entities",
    "caption_entities": "caption entities",
    "commands": "commands",
    "scope": "bot command scope",
    "link_preview_options": "link preview options",
    "reply_parameters": "reply parameters",
    "media": "media",
    "options": "poll options",
    "permissions": "chat permissions",
}

_DEFAULT_DESCRIPTIONS = {
    400: "Bad Request: injected failure",
    401: "Unauthorized",
    403: "Forbidden: bot was blocked by the user",
    404: "Not Found",
    409: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    500: "Internal Server Error",
    502: "Bad Gateway",
}

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)


class TelegramError(Exception):
    """An error answer: ``{"ok": false, "error_code": code, "description": ..., "parameters": ...}``."""

    def __init__(self, code: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code} {description}")
        self.code = code
        self.description = description
        self.parameters = parameters

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"ok": False, "error_code": self.code, "description": self.description}
        if self.parameters:
            body["parameters"] = self.parameters
        return body


class WaitTimeout(AssertionError):
    """``wait_for`` gave up: the condition did not become true in time."""


@dataclass
class ApiCall:
    """One request the bot made, in arrival order; the outcome is filled in when it is answered."""

    method: str  # canonical spelling ("sendMessage") for known methods, as sent otherwise
    params: dict[str, Any]
    at: float
    ok: bool | None = None  # None while a long poll is still waiting
    result: Any = None
    error_code: int | None = None
    description: str | None = None
    clock: float = 0.0  # the fake's clock (``FakeTelegram.clock``, monotonic) when the call arrived
    parameters: dict[str, Any] | None = None  # an error's parameters (retry_after, migrate_to_chat_id)
    flood_scope: str | None = None  # a 429 of the flood control: "chat", "group" or "global" (what was full)

    @property
    def chat_id(self) -> Any:
        return self.params.get("chat_id")

    @property
    def retry_after(self) -> int | None:
        """A 429's retry_after (None for any other outcome)."""
        return (self.parameters or {}).get("retry_after") if self.error_code == 429 else None

    def __repr__(self) -> str:
        outcome = "pending" if self.ok is None else "ok" if self.ok else f"{self.error_code} {self.description}"
        shown = {k: v for k, v in self.params.items() if k != "reply_markup"}
        return f"<{self.method} {shown} -> {outcome}>"


@dataclass
class CallbackAnswer:
    """An answerCallbackQuery the bot made."""

    query_id: str
    user_id: int
    data: str | None
    chat_id: int | None
    message_id: int | None
    text: str | None
    show_alert: bool
    url: str | None
    cache_time: int | None


@dataclass(eq=False)
class SentMessage:
    """A message in a chat, as Telegram stores it. ``text`` is what users see (markup removed, after the
    latest edit), ``raw_text``/``parse_mode`` what the bot sent for it; ``sender`` is None for the bot."""

    chat: FakeChat
    message_id: int
    date: int
    sender: FakeUser | None
    text: str
    entities: list[dict[str, Any]]
    raw_text: str
    parse_mode: str | None
    reply_markup: dict[str, Any] | None = None
    reply_to: SentMessage | None = None
    edit_date: int | None = None
    deleted: bool = False
    service: dict[str, Any] = field(default_factory=dict)  # e.g. {"migrate_to_chat_id": ...}
    history: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)  # earlier (text, markup)
    photo: bytes | None = None  # a photo's bytes as uploaded (``text``/``entities`` are then its caption)
    _bot_json: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def chat_id(self) -> int:
        return self.chat.id

    @property
    def from_bot(self) -> bool:
        return self.sender is None

    @property
    def buttons(self) -> list[dict[str, Any]]:
        """The inline keyboard's buttons, row after row (empty without an inline keyboard)."""
        rows = (self.reply_markup or {}).get("inline_keyboard") or []
        return [button for row in rows for button in row]

    @property
    def callback_data(self) -> list[str]:
        return [b["callback_data"] for b in self.buttons if "callback_data" in b]

    def button(self, text: str) -> dict[str, Any]:
        """The inline button whose text is, or failing that contains, ``text``."""
        for exact in (True, False):
            for b in self.buttons:
                if (b.get("text") == text) if exact else (text in b.get("text", "")):
                    return b
        raise LookupError(f"no button {text!r} in message {self.message_id}: {[b.get('text') for b in self.buttons]}")

    def json(self, *, with_reply: bool = True) -> dict[str, Any]:
        """The Message object as the Bot API returns it."""
        sender = self._bot_json if self.sender is None else self.sender.json()
        message: dict[str, Any] = {"message_id": self.message_id, "from": sender, "chat": self.chat.json(),
                                   "date": self.date}
        if self.edit_date is not None:
            message["edit_date"] = self.edit_date
        if with_reply and self.reply_to is not None:
            message["reply_to_message"] = self.reply_to.json(with_reply=False)
        if self.photo is not None:
            unique = f"{self.chat.id}_{self.message_id}"
            message["photo"] = [{"file_id": "photo-" + unique, "file_unique_id": unique, "width": 960,
                                 "height": 640, "file_size": len(self.photo)}]
            if self.text:
                message["caption"] = self.text
                if self.entities:
                    message["caption_entities"] = [dict(e) for e in self.entities]
        elif self.text:
            message["text"] = self.text
            if self.entities:
                message["entities"] = [dict(e) for e in self.entities]
        message.update(self.service)
        if self.reply_markup and "inline_keyboard" in self.reply_markup:
            message["reply_markup"] = {"inline_keyboard": self.reply_markup["inline_keyboard"]}
        return message

    def __repr__(self) -> str:
        who = "bot" if self.sender is None else self.sender.first_name
        flags = " deleted" if self.deleted else ""
        return f"<SentMessage {self.chat.id}/{self.message_id} by {who}{flags}: {self.text!r} buttons={self.callback_data}>"


class FakeChat:
    """A private chat, group or supergroup. Groups know their members' statuses and the bot's."""

    def __init__(self, fake: FakeTelegram, chat_id: int, chat_type: str, *, title: str | None = None,
                 user: FakeUser | None = None, username: str | None = None) -> None:
        self.fake = fake
        self.id = chat_id
        self.type = chat_type  # "private" | "group" | "supergroup"
        self.title = title
        self.user = user  # the other side of a private chat
        self.username = username
        self.members: dict[int, str] = {}  # user id -> creator|administrator|member|left|kicked
        self.bot_status = "member"  # member|administrator|left|kicked
        self.migrated_to: int | None = None

    @property
    def is_group(self) -> bool:
        return self.type in ("group", "supergroup")

    def json(self) -> dict[str, Any]:
        if self.type == "private":
            assert self.user is not None
            chat = {"id": self.id, "first_name": self.user.first_name}
            if self.user.last_name:
                chat["last_name"] = self.user.last_name
            if self.user.username:
                chat["username"] = self.user.username
            chat["type"] = "private"
            return chat
        chat = {"id": self.id, "title": self.title, "type": self.type}
        if self.username:
            chat["username"] = self.username
        if self.type == "group":
            chat["all_members_are_administrators"] = True
        return chat

    def add(self, *users: FakeUser, status: str = "member") -> FakeChat:
        """Make users members (or ``status``) of this group, silently (as if they had joined before)."""
        for user in users:
            self.members[user.id] = status
        return self

    def status_of(self, user: FakeUser | int) -> str:
        return self.members.get(user if isinstance(user, int) else user.id, "left")

    @property
    def messages(self) -> list[SentMessage]:
        """The bot's messages here (not deleted)."""
        return self.fake.messages(self.id)

    async def add_bot(self, by: FakeUser, *, as_admin: bool = False) -> None:
        """``by`` adds the bot to this group: a my_chat_member update and a new_chat_members message."""
        old = self.bot_status
        self.bot_status = "administrator" if as_admin else "member"
        self.fake._enqueue("my_chat_member", self.fake._member_change(self, by, old, self.bot_status))
        self.fake._service_message(self, by, {"new_chat_members": [self.fake.bot_json()],
                                              "new_chat_member": self.fake.bot_json(),
                                              "new_chat_participant": self.fake.bot_json()})
        await asyncio.sleep(0)

    async def kick_bot(self, by: FakeUser) -> None:
        """``by`` removes the bot: afterwards sends here answer 403 "bot was kicked"."""
        old, self.bot_status = self.bot_status, "kicked"
        self.fake._enqueue("my_chat_member", self.fake._member_change(self, by, old, "kicked"))
        await asyncio.sleep(0)

    def __repr__(self) -> str:
        return f"<FakeChat {self.type} {self.id} {self.title or (self.user and self.user.first_name)!r}>"


class FakeUser:
    """A scripted Telegram user. Its coroutines enqueue the updates that user's actions cause."""

    def __init__(self, fake: FakeTelegram, user_id: int, first_name: str, username: str | None,
                 language_code: str | None, last_name: str | None = None) -> None:
        self.fake = fake
        self.id = user_id
        self.first_name = first_name
        self.last_name = last_name
        self.username = username
        self.language_code = language_code
        self.started = False  # has opened a private chat with the bot
        self.blocked = False  # has blocked the bot
        self.deactivated = False
        self.private_chat = FakeChat(fake, user_id, "private", user=self)

    def json(self) -> dict[str, Any]:
        user: dict[str, Any] = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        if self.last_name:
            user["last_name"] = self.last_name
        if self.username:
            user["username"] = self.username
        if self.language_code:
            user["language_code"] = self.language_code
        return user

    async def send(self, chat: FakeChat | int | None, text: str, *, reply_to: Any = None,
                   mention_bot: bool = False) -> dict[str, Any]:
        """Send ``text`` to ``chat`` (a group, or None / this user's private chat). Commands get a
        bot_command entity; ``mention_bot`` turns "/cmd args" into "/cmd@botname args". In a group with
        the bot's privacy mode on, only commands, replies to the bot and service messages reach the bot
        (others are kept in ``fake.undelivered``). Returns the Message object."""
        target = self.fake._chat_for_user(self, chat)
        if mention_bot and text.startswith("/"):
            command, sep, rest = text.partition(" ")
            if "@" not in command:
                text = f"{command}@{self.fake.bot_username}{sep}{rest}"
        replied = self.fake._find_message(reply_to, target) if reply_to is not None else None
        message = self.fake._user_message(self, target, text, reply_to=replied)
        await asyncio.sleep(0)
        return message

    async def start_private(self, payload: str | None = None) -> dict[str, Any]:
        """Open (or restart, after block_bot) the private chat with the bot: sends "/start [payload]"."""
        if self.blocked:
            self.blocked = False
            self.fake._enqueue("my_chat_member",
                               self.fake._member_change(self.private_chat, self, "kicked", "member"))
        return await self.send(None, "/start" if payload is None else f"/start {payload}")

    async def block_bot(self) -> None:
        """Block the bot: a my_chat_member update; afterwards sends to this user answer 403."""
        if not self.blocked:
            self.blocked = True
            self.fake._enqueue("my_chat_member",
                               self.fake._member_change(self.private_chat, self, "member", "kicked"))
        await asyncio.sleep(0)

    async def press(self, message: Any, data: str | None = None, *, button: str | None = None,
                    force: bool = False) -> dict[str, Any]:
        """Press an inline button of a message the bot sent (a SentMessage, an aiogram Message, a Message
        dict or a (chat_id, message_id) pair): a callback_query carrying that message as it is now.
        Give the button's ``data`` or its ``button`` text. Like a real client this only presses buttons
        the message has (``force=True`` presses anything). Returns the CallbackQuery object."""
        target = self.fake._find_message(message)
        if target.deleted:
            raise LookupError(f"message {target.chat.id}/{target.message_id} was deleted; nothing to press")
        if not target.from_bot:
            raise LookupError("only messages the bot sent have inline buttons")
        if button is not None:
            chosen = target.button(button)
            if "callback_data" not in chosen:
                raise ValueError(f"button {button!r} has no callback_data: {chosen}")
            data = chosen["callback_data"]
        if data is None:
            raise ValueError("press() needs data or button")
        if not force and data not in target.callback_data:
            raise ValueError(
                f"message {target.chat.id}/{target.message_id} has no button with callback_data {data!r}; "
                f"it has {target.callback_data}"
            )
        chat = self.fake._chat_for_user(self, target.chat)
        query_id = str(next(self.fake._callback_ids))
        query = {"id": query_id, "from": self.json(), "message": target.json(),
                 "chat_instance": self.fake._chat_instance(chat.id), "data": data}
        self.fake._open_queries[query_id] = (self, target, data)
        self.fake._enqueue("callback_query", query)
        await asyncio.sleep(0)
        return query

    def __repr__(self) -> str:
        return f"<FakeUser {self.id} {self.first_name!r}>"


class FakeTelegram:
    """The fake Bot API server. See the module docstring."""

    def __init__(self, token: str = "123456:TEST", *, bot_username: str = "avalon_test_bot",
                 bot_first_name: str = "Avalon Narrator", privacy_mode: bool = True) -> None:
        bot_id, sep, secret = token.partition(":")
        if not (sep and bot_id.isdigit() and secret):
            raise ValueError(f"not a bot token: {token!r}")
        self.token = token
        self.bot_id = int(bot_id)
        self.bot_username = bot_username
        self.bot_first_name = bot_first_name
        self.privacy_mode = privacy_mode

        self.sent_log: list[ApiCall] = []
        self.unknown_calls: list[ApiCall] = []
        self.callback_answers: list[CallbackAnswer] = []
        self.updates_log: list[dict[str, Any]] = []  # every update ever enqueued
        self.undelivered: list[dict[str, Any]] = []  # user messages the bot could not see (privacy mode)
        self.filtered_updates: list[dict[str, Any]] = []  # dropped because of allowed_updates
        self.webhook: dict[str, Any] | None = None
        self.bot_commands: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.rate_limit_hits: list[ApiCall] = []
        self.internal_errors: list[BaseException] = []  # bugs in the fake itself (answered as 500)

        self._users: dict[int, FakeUser] = {}
        self._chats: dict[int, FakeChat] = {}
        self._migrated: dict[int, int] = {}
        self._messages: dict[int, dict[int, SentMessage]] = {}
        self._next_message_id: dict[int, int] = {}
        self._pending: list[dict[str, Any]] = []  # unconfirmed updates
        self._update_ids = itertools.count(700_000_001)
        self._callback_ids = itertools.count(4_382_001_957_266_100_001)
        self._open_queries: dict[str, tuple[FakeUser, SentMessage, str]] = {}
        self._delivered_up_to = 0
        self._allowed_updates: list[str] | None = None
        self._poll_generation = 0
        self._updates_event = asyncio.Event()
        self._changed_event = asyncio.Event()
        self._closing = False
        self._failures: list[dict[str, Any]] = []
        self._holds: dict[str, asyncio.Event] = {}
        self._limits: dict[str, float] | None = None
        self._sent_at: dict[int, deque[float]] = {}
        self._sent_at_global: deque[float] = deque()
        self.clock: Callable[[], float] = time.monotonic  # for rate limits
        self.now: Callable[[], float] = time.time  # for message dates

        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._methods: dict[str, tuple[str, Callable[[dict[str, Any]], Awaitable[Any]]]] = {}
        for name in ("getMe", "getUpdates", "deleteWebhook", "setWebhook", "getWebhookInfo", "sendMessage", "sendPhoto",
                     "editMessageText", "editMessageReplyMarkup", "deleteMessage", "answerCallbackQuery",
                     "getChat", "getChatMember", "setMyCommands", "getMyCommands", "deleteMyCommands",
                     "sendChatAction"):
            self._methods[name.lower()] = (name, getattr(self, "_api_" + name))

    # ----------------------------------------------------------------------------- server lifecycle

    async def start(self, port: int = 0) -> FakeTelegram:
        """Serve on 127.0.0.1: a free port, or ``port`` (a server that appears where a client waits)."""
        if self._runner is not None:
            return self
        self._closing = False
        self._updates_event, self._changed_event = asyncio.Event(), asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_route("*", "/file/bot{token}/{path:.*}", self._handle_file)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def stop(self) -> None:
        if self._runner is None:
            return
        self._closing = True
        self._wake_pollers()  # long polls answer at once
        for method in list(self._holds):
            self.release(method)
        await asyncio.sleep(0)
        runner, self._runner = self._runner, None
        await runner.cleanup()

    async def __aenter__(self) -> FakeTelegram:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeTelegram is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """For ``TelegramAPIServer.from_base(fake.base_url)``."""
        return f"http://127.0.0.1:{self.port}"

    def api_server(self) -> Any:
        """aiogram's TelegramAPIServer pointing at this fake."""
        from aiogram.client.telegram import TelegramAPIServer

        return TelegramAPIServer.from_base(self.base_url)

    def make_bot(self, **kwargs: Any) -> Any:
        """A real aiogram Bot talking to this fake (kwargs go to Bot, e.g. default=...)."""
        from aiogram import Bot
        from aiogram.client.session.aiohttp import AiohttpSession

        return Bot(self.token, session=AiohttpSession(api=self.api_server()), **kwargs)

    # ------------------------------------------------------------------------------ world building

    def bot_json(self) -> dict[str, Any]:
        return {"id": self.bot_id, "is_bot": True, "first_name": self.bot_first_name, "username": self.bot_username}

    def user(self, user_id: int, first_name: str, username: str | None = None, language_code: str | None = "en",
             *, last_name: str | None = None) -> FakeUser:
        """A user (the same object again for a known id)."""
        if user_id in self._users:
            return self._users[user_id]
        if user_id <= 0:
            raise ValueError("user ids are positive")
        user = FakeUser(self, user_id, first_name, username, language_code, last_name)
        self._users[user_id] = user
        self._chats[user_id] = user.private_chat
        return user

    def group(self, chat_id: int, title: str, *, members: Iterable[FakeUser] = (), admins: Iterable[FakeUser] = (),
              creator: FakeUser | None = None, bot_admin: bool = False) -> FakeChat:
        """A basic group (negative id) the bot is already in, with these members."""
        return self._new_group(chat_id, title, "group", members, admins, creator, bot_admin, None)

    def supergroup(self, chat_id: int, title: str, *, members: Iterable[FakeUser] = (),
                   admins: Iterable[FakeUser] = (), creator: FakeUser | None = None, bot_admin: bool = False,
                   username: str | None = None) -> FakeChat:
        """A supergroup (id like -100xxxxxxxxxx) the bot is already in."""
        return self._new_group(chat_id, title, "supergroup", members, admins, creator, bot_admin, username)

    def _new_group(self, chat_id: int, title: str, kind: str, members: Iterable[FakeUser],
                   admins: Iterable[FakeUser], creator: FakeUser | None, bot_admin: bool,
                   username: str | None) -> FakeChat:
        if chat_id >= 0:
            raise ValueError("group ids are negative")
        if chat_id in self._chats or chat_id in self._migrated:
            raise ValueError(f"chat {chat_id} exists already")
        chat = FakeChat(self, chat_id, kind, title=title, username=username)
        chat.add(*members)
        chat.add(*admins, status="administrator")
        if creator is not None:
            chat.add(creator, status="creator")
        chat.bot_status = "administrator" if bot_admin else "member"
        self._chats[chat_id] = chat
        return chat

    def chat(self, chat_id: int) -> FakeChat:
        return self._chats[chat_id]

    async def migrate_to_supergroup(self, group: FakeChat | int, new_id: int | None = None,
                                    by: FakeUser | None = None) -> FakeChat:
        """Upgrade a basic group, as Telegram does: the supergroup gets a new id, both chats get a service
        message (migrate_to_chat_id / migrate_from_chat_id), and any call naming the old id answers 400
        "group chat was upgraded to a supergroup chat" with parameters.migrate_to_chat_id."""
        old = group if isinstance(group, FakeChat) else self._chats[group]
        if old.type != "group":
            raise ValueError(f"{old} is not a basic group")
        new_id = new_id if new_id is not None else -(10**12 + abs(old.id))
        by = by or next((self._users[uid] for uid, st in old.members.items() if st in ("creator", "administrator")),
                        None) or next((self._users[uid] for uid in old.members), None)
        if by is None:
            raise ValueError("the group has no members to migrate it")
        self._service_message(old, by, {"migrate_to_chat_id": new_id})
        new = FakeChat(self, new_id, "supergroup", title=old.title)
        new.members = dict(old.members)
        new.bot_status = old.bot_status
        old.migrated_to = new_id
        del self._chats[old.id]
        self._migrated[old.id] = new_id
        self._chats[new_id] = new
        self._service_message(new, by, {"migrate_from_chat_id": old.id})
        await asyncio.sleep(0)
        return new

    # ------------------------------------------------------------------------------ failure injection

    def fail_next(self, method: str, code: int = 429, retry_after: int = 1, times: int = 1, *,
                  description: str | None = None, chat_id: int | None = None) -> None:
        """The next ``times`` calls of ``method`` ("*" for any; optionally only those naming ``chat_id``)
        answer error ``code`` before doing anything. 429 carries parameters.retry_after."""
        if code == 429:
            description = description or f"Too Many Requests: retry after {retry_after}"
        self._failures.append({"method": method.lower(), "code": code, "retry_after": retry_after, "times": times,
                               "description": description or _DEFAULT_DESCRIPTIONS.get(code, f"Error {code}"),
                               "chat_id": chat_id})

    def hold(self, method: str) -> None:
        """Calls of ``method`` wait, unanswered and not yet carried out, until ``release(method)``: a bot
        caught in the middle of handling something (then killed, say)."""
        self._holds[method.lower()] = asyncio.Event()

    def release(self, method: str) -> None:
        """The calls held for ``method`` are carried out and answered; later ones are not held."""
        event = self._holds.pop(method.lower(), None)
        if event is not None:
            event.set()

    def rate_limit(self, per_chat_per_second: float = 1, per_group_per_minute: float = 20,
                   global_per_second: float = 30) -> None:
        """Flood control like Telegram's: message sends and edits beyond these rates answer 429 with a
        retry_after (seconds until the window has room). Off until called; ``rate_limit_off()`` ends it."""
        self._limits = {"chat": per_chat_per_second, "group": per_group_per_minute, "global": global_per_second}

    def rate_limit_off(self) -> None:
        self._limits = None

    # --------------------------------------------------------------------------------------- inspection

    def messages(self, chat: FakeChat | FakeUser | int, *, include_deleted: bool = False) -> list[SentMessage]:
        """The bot's messages in a chat (a user means their private chat), oldest first, as they are now."""
        chat_id = chat if isinstance(chat, int) else chat.id
        return [m for m in self._messages.get(chat_id, {}).values()
                if m.from_bot and (include_deleted or not m.deleted)]

    def all_messages(self, chat: FakeChat | FakeUser | int) -> list[SentMessage]:
        """Every message of the chat (users' and the bot's, deleted included), oldest first."""
        chat_id = chat if isinstance(chat, int) else chat.id
        return list(self._messages.get(chat_id, {}).values())

    def calls(self, method: str | None = None, *, ok: bool | None = None) -> list[ApiCall]:
        """The calls of one method (case-insensitive; all when None), optionally only the (un)successful."""
        return [c for c in self.sent_log
                if (method is None or c.method.lower() == method.lower()) and (ok is None or c.ok is ok)]

    def calls_to(self, chat: FakeChat | FakeUser | int, methods: Iterable[str] | None = RATE_LIMITED_METHODS
                 ) -> list[ApiCall]:
        """Every call naming this chat (a user means their private chat), in arrival order, each with
        its arrival time (``clock``) and outcome; by default only the sends and edits flood control
        counts (``methods=None``: every method)."""
        chat_id = chat if isinstance(chat, int) else chat.id
        wanted = None if methods is None else {m.lower() for m in methods}
        return [c for c in self.sent_log
                if c.chat_id == chat_id and (wanted is None or c.method.lower() in wanted)]

    def flood_violations(self) -> list[tuple[ApiCall, ApiCall]]:
        """(429, call) for every send or edit that came before a 429's retry_after had passed: to the
        429's chat, or to any chat after a 429 of the global limit. Empty when the bot waited as told."""
        counted = {m.lower() for m in RATE_LIMITED_METHODS}
        calls = [c for c in self.sent_log if c.method.lower() in counted]
        early = []
        for i, refused in enumerate(calls):
            if refused.retry_after is None:
                continue
            until = refused.clock + refused.retry_after
            for later in calls[i + 1:]:
                if later.clock >= until:
                    break
                if refused.flood_scope == "global" or later.chat_id == refused.chat_id:
                    early.append((refused, later))
        return early

    def commands(self, scope: dict[str, Any] | None = None, language_code: str = "") -> list[dict[str, Any]]:
        """The commands set with setMyCommands for this scope (default scope when None) and language."""
        return self.bot_commands.get((_scope_key(scope), language_code or ""), [])

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates the bot has not confirmed yet (with a later getUpdates offset)."""
        return list(self._pending)

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 10, *, what: str | None = None) -> Any:
        """Wait until ``predicate()`` (sync or async) is truthy and return its value; re-checked after
        every API call and update and every 50 ms. Raises WaitTimeout (an AssertionError) with the
        latest calls after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            event = self._changed_event
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            remaining = deadline - loop.time()
            if remaining <= 0:
                recent = "\n  ".join(repr(c) for c in self.sent_log[-12:] if c.method != "getUpdates")
                raise WaitTimeout(
                    f"{what or getattr(predicate, '__name__', 'condition')} not met within {timeout}s; "
                    f"latest calls (getUpdates omitted):\n  {recent or '(none)'}"
                )
            try:
                await asyncio.wait_for(event.wait(), min(remaining, 0.05))
            except TimeoutError:
                pass

    async def wait_for_message(self, chat: FakeChat | FakeUser | int, contains: str | None = None, *,
                               where: Callable[[SentMessage], Any] | None = None, timeout: float = 10,
                               after: SentMessage | int | None = None) -> SentMessage:
        """The latest bot message in ``chat`` whose text contains ``contains`` and/or satisfies ``where``
        (and, with ``after``, newer than that message / message id), waiting for it to appear."""
        after_id = after.message_id if isinstance(after, SentMessage) else (after or 0)

        def found() -> SentMessage | None:
            for message in reversed(self.messages(chat)):
                if message.message_id > after_id and (contains is None or contains in message.text) \
                        and (where is None or where(message)):
                    return message
            return None

        return await self.wait_for(found, timeout, what=f"a bot message in {chat} containing {contains!r}")

    async def wait_for_call(self, method: str, *, where: Callable[[ApiCall], Any] | None = None,
                            timeout: float = 10, ok: bool | None = None) -> ApiCall:
        """The first answered call of ``method`` satisfying ``where``."""
        def found() -> ApiCall | None:
            return next((c for c in self.calls(method) if c.ok is not None and (ok is None or c.ok is ok)
                         and (where is None or where(c))), None)

        return await self.wait_for(found, timeout, what=f"a {method} call")

    async def wait_delivered(self, timeout: float = 10) -> None:
        """Wait until the bot has fetched every update enqueued so far."""
        def delivered() -> bool:
            return not any(u["update_id"] > self._delivered_up_to and self._allowed(u) for u in self._pending)

        await self.wait_for(delivered, timeout, what="delivery of all updates")

    # --------------------------------------------------------------------------------------- internals

    def _notify(self) -> None:
        event, self._changed_event = self._changed_event, asyncio.Event()
        event.set()

    def _wake_pollers(self) -> None:
        event, self._updates_event = self._updates_event, asyncio.Event()
        event.set()

    def _date(self) -> int:
        return int(self.now())

    def _enqueue(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        update = {"update_id": next(self._update_ids), kind: payload}
        self.updates_log.append(update)
        self._pending.append(update)
        self._wake_pollers()
        self._notify()
        return update

    def _member_change(self, chat: FakeChat, by: FakeUser, old: str, new: str) -> dict[str, Any]:
        return {"chat": chat.json(), "from": by.json(), "date": self._date(),
                "old_chat_member": self._member_json(self.bot_json(), old, chat),
                "new_chat_member": self._member_json(self.bot_json(), new, chat)}

    def _chat_instance(self, chat_id: int) -> str:
        return str(-((abs(chat_id) * 2654435761 + self.bot_id) % (2**63 - 1)) or -1)

    def _store(self, chat: FakeChat, sender: FakeUser | None, text: str, entities: list[dict[str, Any]],
               raw_text: str, parse_mode: str | None, reply_markup: dict[str, Any] | None = None,
               reply_to: SentMessage | None = None, service: dict[str, Any] | None = None) -> SentMessage:
        message_id = self._next_message_id.get(chat.id, 1)
        self._next_message_id[chat.id] = message_id + 1
        message = SentMessage(chat=chat, message_id=message_id, date=self._date(), sender=sender, text=text,
                              entities=entities, raw_text=raw_text, parse_mode=parse_mode, reply_markup=reply_markup,
                              reply_to=reply_to, service=service or {}, _bot_json=self.bot_json())
        self._messages.setdefault(chat.id, {})[message_id] = message
        return message

    def _service_message(self, chat: FakeChat, by: FakeUser, service: dict[str, Any]) -> SentMessage:
        message = self._store(chat, by, "", [], "", None, service=service)
        self._enqueue("message", message.json())
        return message

    def _chat_for_user(self, user: FakeUser, chat: FakeChat | int | None) -> FakeChat:
        """The chat a user acts in (checking they can), joining groups on the way."""
        if chat is None or chat is user.private_chat or chat == user.id:
            if user.blocked:
                raise RuntimeError(f"{user} blocked the bot; start_private() restarts it")
            return user.private_chat
        chat_id = chat.id if isinstance(chat, FakeChat) else chat
        if chat_id in self._migrated:
            raise RuntimeError(f"chat {chat_id} was migrated to {self._migrated[chat_id]}; use the supergroup")
        target = self._chats.get(chat_id)
        if target is None:
            raise LookupError(f"no chat {chat_id}; create it with fake.group()")
        if target.type == "private":
            if target.id != user.id:
                raise RuntimeError(f"{user} cannot act in another user's private chat with the bot")
            return target
        status = target.status_of(user)
        if status == "kicked":
            raise RuntimeError(f"{user} is banned from {target}")
        if status == "left":
            target.members[user.id] = "member"
        return target

    def _find_message(self, ref: Any, chat: FakeChat | None = None) -> SentMessage:
        if isinstance(ref, SentMessage):
            return ref
        if isinstance(ref, dict):
            chat_id, message_id = ref["chat"]["id"], ref["message_id"]
        elif isinstance(ref, tuple):
            chat_id, message_id = ref
        elif isinstance(ref, int) and chat is not None:
            chat_id, message_id = chat.id, ref
        elif hasattr(ref, "message_id") and hasattr(ref, "chat"):
            chat_id, message_id = ref.chat.id, ref.message_id
        else:
            raise TypeError(f"not a message reference: {ref!r}")
        try:
            return self._messages[chat_id][message_id]
        except KeyError:
            raise LookupError(f"no message {message_id} in chat {chat_id}") from None

    def _user_message(self, user: FakeUser, chat: FakeChat, text: str,
                      reply_to: SentMessage | None = None) -> dict[str, Any]:
        if not text.strip():
            raise ValueError("Telegram clients do not send empty messages")
        text = text.strip()
        message = self._store(chat, user, text, detect_entities(text), text, None, reply_to=reply_to)
        payload = message.json()
        if chat.type == "private":
            user.started = True
        if self._bot_sees(chat, message):
            self._enqueue("message", payload)
        else:
            self.undelivered.append(payload)
            self._notify()
        return payload

    def _bot_sees(self, chat: FakeChat, message: SentMessage) -> bool:
        """Whether the bot receives a user's message (Telegram's privacy mode for groups)."""
        if chat.type == "private":
            return True
        if chat.bot_status in ("left", "kicked"):
            return False
        if not self.privacy_mode or chat.bot_status == "administrator":
            return True
        if message.reply_to is not None and message.reply_to.from_bot:
            return True
        first = message.entities[0] if message.entities else None
        if first and first["type"] == "bot_command" and first["offset"] == 0:
            command = message.text[: first["length"]]
            _, at, name = command.partition("@")
            return not at or name.lower() == self.bot_username.lower()
        return False

    def _member_json(self, user_json: dict[str, Any], status: str, chat: FakeChat) -> dict[str, Any]:
        if status == "creator":
            return {"status": "creator", "user": user_json, "is_anonymous": False}
        if status == "administrator":
            flags = ("can_manage_chat", "can_delete_messages", "can_manage_video_chats", "can_restrict_members",
                     "can_change_info", "can_invite_users", "can_post_stories", "can_edit_stories",
                     "can_delete_stories", "can_pin_messages")
            member: dict[str, Any] = {"status": "administrator", "user": user_json, "can_be_edited": False,
                                      "is_anonymous": False, "can_promote_members": False,
                                      "can_send_welcome_messages": False}
            member.update({flag: True for flag in flags})
            if chat.type == "supergroup":
                member["can_manage_topics"] = False
            return member
        if status == "kicked":
            return {"status": "kicked", "user": user_json, "until_date": 0}
        return {"status": status, "user": user_json}

    # ----------------------------------------------------------------------------------- HTTP layer

    async def _handle_file(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)

    async def _handle(self, request: web.Request) -> web.Response:
        token, method = request.match_info["token"], request.match_info["method"]
        canonical, handler = self._methods.get(method.lower(), (method, None))
        call = ApiCall(method=canonical, params={}, at=time.time(), clock=self.clock())
        self.sent_log.append(call)
        try:
            call.params = await self._read_params(request)
            if token != self.token:
                raise TelegramError(401, "Unauthorized")
            if handler is None:
                self.unknown_calls.append(call)
                raise TelegramError(404, "Not Found: method not found")
            self._injected_failure(canonical, call.params)
            if (held := self._holds.get(canonical.lower())) is not None:
                await held.wait()
            self._check_rate(canonical, call)
            result = await handler(call.params)
            self._count_rate(canonical, call.params)
            body, status = {"ok": True, "result": result}, 200
            if isinstance(result, _WithDescription):
                body = {"ok": True, "result": result.result, "description": result.description}
            call.ok, call.result = True, body["result"]
        except TelegramError as error:
            body, status = error.body(), error.code
            call.ok, call.error_code, call.description = False, error.code, error.description
            call.parameters = error.parameters
        except Exception as error:  # noqa: BLE001 - a bug in the fake: answer as Telegram would, keep it visible
            log.exception("FakeTelegram failed on %s %s", canonical, call.params)
            self.internal_errors.append(error)
            body, status = {"ok": False, "error_code": 500, "description": "Internal Server Error"}, 500
            call.ok, call.error_code, call.description = False, 500, f"Internal Server Error (fake bug: {error!r})"
        self._notify()
        return web.json_response(body, status=status)

    async def _read_params(self, request: web.Request) -> dict[str, Any]:
        raw: dict[str, Any] = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                try:
                    body = await request.json()
                except ValueError:
                    raise TelegramError(400, "Bad Request: can't parse JSON object") from None
                if not isinstance(body, dict):
                    raise TelegramError(400, "Bad Request: parameters must be a JSON object")
                raw.update(body)
            else:
                form = await request.post()
                for key, value in form.items():
                    if isinstance(value, web.FileField):
                        data = value.file.read()
                        raw[key] = {"filename": value.filename, "size": len(data), "data": data}
                    else:
                        raw[key] = value
        return {key: _coerce(key, value) for key, value in raw.items()}

    def _injected_failure(self, method: str, params: dict[str, Any]) -> None:
        for failure in self._failures:
            if failure["method"] not in ("*", method.lower()):
                continue
            if failure["chat_id"] is not None and params.get("chat_id") != failure["chat_id"]:
                continue
            failure["times"] -= 1
            if failure["times"] <= 0:
                self._failures.remove(failure)
            parameters = {"retry_after": failure["retry_after"]} if failure["code"] == 429 else None
            raise TelegramError(failure["code"], failure["description"], parameters)

    def _check_rate(self, method: str, call: ApiCall) -> None:
        if self._limits is None or method not in RATE_LIMITED_METHODS:
            return
        now = self.clock()
        chat_id = call.params.get("chat_id")
        waits: list[tuple[float, str]] = []
        while self._sent_at_global and self._sent_at_global[0] <= now - 1:
            self._sent_at_global.popleft()
        if len(self._sent_at_global) >= self._limits["global"]:
            waits.append((self._sent_at_global[0] + 1 - now, "global"))
        if isinstance(chat_id, int):
            times = self._sent_at.setdefault(chat_id, deque())
            while times and times[0] <= now - 60:
                times.popleft()
            last_second = [t for t in times if t > now - 1]
            if len(last_second) >= self._limits["chat"]:
                waits.append((last_second[0] + 1 - now, "chat"))
            if chat_id < 0 and len(times) >= self._limits["group"]:
                waits.append((times[0] + 60 - now, "group"))
        if waits:
            wait, scope = max(waits)
            retry_after = max(1, math.ceil(wait))
            call.flood_scope = scope
            self.rate_limit_hits.append(call)
            raise TelegramError(429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after})

    def _count_rate(self, method: str, params: dict[str, Any]) -> None:
        if self._limits is None or method not in RATE_LIMITED_METHODS:
            return
        now = self.clock()
        self._sent_at_global.append(now)
        if isinstance(params.get("chat_id"), int):
            self._sent_at.setdefault(params["chat_id"], deque()).append(now)

    # ----------------------------------------------------------------------------- chat resolution

    def _lookup_chat(self, chat_id: Any) -> FakeChat:
        if chat_id is None or chat_id == "":
            raise TelegramError(400, "Bad Request: chat_id is empty")
        if isinstance(chat_id, str):
            if chat_id.startswith("@"):
                name = chat_id[1:].lower()
                found = next((c for c in self._chats.values()
                              if c.type != "private" and c.username and c.username.lower() == name), None)
                if found is None:
                    raise TelegramError(400, "Bad Request: chat not found")
                return found
            raise TelegramError(400, "Bad Request: chat not found")
        if chat_id in self._migrated:
            raise TelegramError(400, "Bad Request: group chat was upgraded to a supergroup chat",
                                {"migrate_to_chat_id": self._migrated[chat_id]})
        chat = self._chats.get(chat_id)
        if chat is None:
            raise TelegramError(400, "Bad Request: chat not found")
        return chat

    def _writable_chat(self, chat_id: Any) -> FakeChat:
        """The chat the bot may post in, or Telegram's error for why not."""
        chat = self._lookup_chat(chat_id)
        if chat.type == "private":
            user = chat.user
            assert user is not None
            if user.deactivated:
                raise TelegramError(403, "Forbidden: user is deactivated")
            if user.blocked:
                raise TelegramError(403, "Forbidden: bot was blocked by the user")
            if not user.started:
                raise TelegramError(403, "Forbidden: bot can't initiate conversation with a user")
        elif chat.bot_status == "kicked":
            raise TelegramError(403, f"Forbidden: bot was kicked from the {chat.type} chat")
        elif chat.bot_status == "left":
            raise TelegramError(403, f"Forbidden: bot is not a member of the {chat.type} chat")
        return chat

    def _visible_chat(self, chat_id: Any) -> FakeChat:
        """A chat getChat may describe: groups the bot is in, users who have talked to it."""
        chat = self._lookup_chat(chat_id)
        if chat.type == "private":
            assert chat.user is not None
            if not chat.user.started and not any(
                    m.sender is chat.user for msgs in self._messages.values() for m in msgs.values()):
                raise TelegramError(400, "Bad Request: chat not found")
        elif chat.bot_status in ("left", "kicked"):
            raise TelegramError(403, f"Forbidden: bot is not a member of the {chat.type} chat")
        return chat

    def _render(self, params: dict[str, Any], *, required: bool = True) -> tuple[str, list[dict[str, Any]]]:
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise TelegramError(400, "Bad Request: message text is empty")
        parse_mode = params.get("parse_mode") or None
        if parse_mode is not None and str(parse_mode).lower() not in PARSE_MODES:
            raise TelegramError(400, "Bad Request: unsupported parse_mode")
        try:
            plain, entities = render(text, parse_mode, params.get("entities") if not parse_mode else None)
        except MarkupError as error:
            raise TelegramError(400, f"Bad Request: can't parse entities: {error}") from None
        if not plain:
            raise TelegramError(400, "Bad Request: text must be non-empty")
        if len(plain) > MAX_TEXT_LENGTH:
            raise TelegramError(400, "Bad Request: message is too long")
        return plain, entities

    def _markup(self, params: dict[str, Any], *, inline_only: bool = False) -> dict[str, Any] | None:
        markup = params.get("reply_markup")
        if markup is None:
            return None
        if not isinstance(markup, dict):
            raise TelegramError(400, "Bad Request: can't parse reply keyboard markup JSON object")
        if "inline_keyboard" in markup:
            rows = markup["inline_keyboard"]
            if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
                raise TelegramError(400, "Bad Request: can't parse inline keyboard button: "
                                         "field \"inline_keyboard\" must be an Array of Arrays")
            if sum(len(row) for row in rows) > 100:
                raise TelegramError(400, "Bad Request: reply markup is too long")
            for row in rows:
                for button in row:
                    if not isinstance(button, dict) or not isinstance(button.get("text"), str):
                        raise TelegramError(400, "Bad Request: can't parse inline keyboard button: "
                                                 "Field \"text\" must be of type String")
                    if "callback_data" in button:
                        data = button["callback_data"]
                        if not isinstance(data, str) or not 1 <= len(data.encode()) <= MAX_CALLBACK_DATA_BYTES:
                            raise TelegramError(400, "Bad Request: BUTTON_DATA_INVALID")
                    elif "url" in button:
                        if not button["url"]:
                            raise TelegramError(400, "Bad Request: BUTTON_URL_INVALID")
                    elif not any(k in button for k in ("login_url", "switch_inline_query", "web_app", "pay",
                                                       "switch_inline_query_current_chat", "callback_game",
                                                       "copy_text", "switch_inline_query_chosen_chat")):
                        raise TelegramError(400, "Bad Request: can't parse inline keyboard button: "
                                                 "Text buttons are unallowed in the inline keyboard")
        elif inline_only:
            raise TelegramError(400, "Bad Request: inline keyboard expected")
        return markup

    # ------------------------------------------------------------------------------------ methods

    async def _api_getMe(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**self.bot_json(), "can_join_groups": True, "can_read_all_group_messages": not self.privacy_mode,
                "supports_inline_queries": False, "can_connect_to_business": False, "has_main_web_app": False}

    async def _api_getUpdates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.webhook is not None:
            raise TelegramError(409, "Conflict: can't use getUpdates method while webhook is active; "
                                     "use deleteWebhook to delete the webhook first")
        offset = params.get("offset") or 0
        limit = params.get("limit") or 100
        timeout = params.get("timeout") or 0
        if not isinstance(offset, int) or not isinstance(limit, int) or not isinstance(timeout, int):
            raise TelegramError(400, "Bad Request: wrong parameter type")
        limit = min(max(limit, 1), 100)
        if "allowed_updates" in params:
            allowed = params["allowed_updates"]
            self._allowed_updates = list(allowed) if allowed else None
        if offset < 0:
            self._pending = self._pending[offset:]
        elif offset > 0:
            self._pending = [u for u in self._pending if u["update_id"] >= offset]
        self._poll_generation += 1
        generation = self._poll_generation
        self._wake_pollers()  # an earlier long poll is terminated, as in Telegram
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            batch = self._deliverable(limit)
            if batch or self._closing:
                break
            if generation != self._poll_generation:
                raise TelegramError(409, "Conflict: terminated by other getUpdates request; "
                                         "make sure that only one bot instance is running")
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            event = self._updates_event
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                pass
        if batch:
            self._delivered_up_to = max(self._delivered_up_to, batch[-1]["update_id"])
        return batch

    def _deliverable(self, limit: int) -> list[dict[str, Any]]:
        kept = []
        for update in self._pending:
            if self._allowed(update):
                kept.append(update)
            else:
                self.filtered_updates.append(update)
        self._pending = kept
        return kept[:limit]

    def _allowed(self, update: dict[str, Any]) -> bool:
        kind = next(k for k in update if k != "update_id")
        if self._allowed_updates:
            return kind in self._allowed_updates
        return kind not in NOT_SENT_BY_DEFAULT

    async def _api_setWebhook(self, params: dict[str, Any]) -> Any:
        url = params.get("url") or ""
        if not url:
            was = self.webhook is not None
            self.webhook = None
            return _WithDescription(True, "Webhook was deleted" if was else "Webhook is already deleted")
        if not url.startswith("https://"):
            raise TelegramError(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
        if params.get("drop_pending_updates"):
            self._pending.clear()
        if params.get("allowed_updates") is not None:
            self._allowed_updates = list(params["allowed_updates"]) or None
        same = self.webhook is not None and self.webhook.get("url") == url
        self.webhook = {k: v for k, v in params.items() if k != "certificate"}
        return _WithDescription(True, "Webhook is already set" if same else "Webhook was set")

    async def _api_deleteWebhook(self, params: dict[str, Any]) -> Any:
        if params.get("drop_pending_updates"):
            self._pending.clear()
        was = self.webhook is not None
        self.webhook = None
        return _WithDescription(True, "Webhook was deleted" if was else "Webhook is already deleted")

    async def _api_getWebhookInfo(self, params: dict[str, Any]) -> dict[str, Any]:
        info: dict[str, Any] = {"url": "", "has_custom_certificate": False, "pending_update_count": len(self._pending)}
        if self.webhook is not None:
            info.update(url=self.webhook["url"], has_custom_certificate="certificate" in self.webhook,
                        max_connections=self.webhook.get("max_connections", 40), ip_address="127.0.0.1")
            if self._allowed_updates:
                info["allowed_updates"] = list(self._allowed_updates)
        return info

    async def _api_sendMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        chat = self._writable_chat(params.get("chat_id"))
        text, entities = self._render(params)
        markup = self._markup(params)
        reply_to = None
        reply = params.get("reply_parameters") or {}
        reply_id = reply.get("message_id") if isinstance(reply, dict) else None
        reply_id = reply_id or params.get("reply_to_message_id")
        if reply_id:
            reply_to = self._messages.get(chat.id, {}).get(reply_id)
            if reply_to is not None and reply_to.deleted:
                reply_to = None
            if reply_to is None and not (reply.get("allow_sending_without_reply")
                                         or params.get("allow_sending_without_reply")):
                raise TelegramError(400, "Bad Request: message to be replied not found")
        message = self._store(chat, None, text, entities, params["text"], params.get("parse_mode"),
                              reply_markup=markup, reply_to=reply_to)
        return message.json()

    async def _api_sendPhoto(self, params: dict[str, Any]) -> dict[str, Any]:
        """A photo uploaded as multipart/form-data (``photo``: ``attach://<field>`` or the file field
        itself), with an optional caption (at most 1024 characters after its markup)."""
        chat = self._writable_chat(params.get("chat_id"))
        upload = params.get("photo")
        if isinstance(upload, str) and upload.startswith("attach://"):
            upload = params.get(upload[len("attach://"):])
        if not isinstance(upload, dict) or not upload.get("data"):
            raise TelegramError(400, "Bad Request: there is no photo in the request")
        caption, entities = "", []
        if params.get("caption"):
            caption, entities = self._render({**params, "text": params["caption"]})
            if len(caption.encode("utf-16-le")) // 2 > MAX_CAPTION_LENGTH:
                raise TelegramError(400, "Bad Request: message caption is too long")
        message = self._store(chat, None, caption, entities, params.get("caption") or "", params.get("parse_mode"),
                              reply_markup=self._markup(params))
        message.photo = upload["data"]
        return message.json()

    def photos(self, chat: FakeChat | FakeUser | int) -> list[SentMessage]:
        """The bot's photos in a chat, oldest first (each with its bytes and its caption as ``text``)."""
        return [m for m in self.messages(chat) if m.photo is not None]

    def _editable(self, params: dict[str, Any], verb: str = "edit") -> SentMessage:
        if params.get("inline_message_id"):
            raise TelegramError(400, "Bad Request: MESSAGE_ID_INVALID")
        chat = self._writable_chat(params.get("chat_id"))
        message_id = params.get("message_id")
        if not message_id:
            raise TelegramError(400, "Bad Request: message identifier is not specified")
        message = self._messages.get(chat.id, {}).get(message_id)
        if message is None or message.deleted:
            raise TelegramError(400, f"Bad Request: message to {verb} not found")
        if not message.from_bot:
            raise TelegramError(400, "Bad Request: message can't be edited")
        return message

    def _apply_edit(self, message: SentMessage, text: str, entities: list[dict[str, Any]], raw_text: str,
                    parse_mode: str | None, markup: dict[str, Any] | None) -> dict[str, Any]:
        if text == message.text and entities == message.entities and markup == message.reply_markup:
            raise TelegramError(400, NOT_MODIFIED)
        message.history.append((message.text, message.reply_markup))
        message.text, message.entities, message.raw_text, message.parse_mode = text, entities, raw_text, parse_mode
        message.reply_markup = markup
        message.edit_date = self._date()
        return message.json()

    async def _api_editMessageText(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._editable(params)
        text, entities = self._render(params)
        # As in Telegram: an edit without reply_markup removes the inline keyboard.
        markup = self._markup(params, inline_only=True)
        return self._apply_edit(message, text, entities, params["text"], params.get("parse_mode"), markup)

    async def _api_editMessageReplyMarkup(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._editable(params)
        markup = self._markup(params, inline_only=True)
        return self._apply_edit(message, message.text, message.entities, message.raw_text, message.parse_mode,
                                markup)

    async def _api_deleteMessage(self, params: dict[str, Any]) -> bool:
        chat = self._lookup_chat(params.get("chat_id"))
        message = self._messages.get(chat.id, {}).get(params.get("message_id"))
        if message is None or message.deleted:
            raise TelegramError(400, "Bad Request: message to delete not found")
        if chat.is_group and not message.from_bot and chat.bot_status != "administrator":
            raise TelegramError(400, "Bad Request: message can't be deleted")
        message.deleted = True
        return True

    async def _api_answerCallbackQuery(self, params: dict[str, Any]) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        opened = self._open_queries.pop(query_id, None)
        if opened is None:
            raise TelegramError(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        user, message, data = opened
        text = params.get("text")
        if text is not None and len(text) > 200:
            raise TelegramError(400, "Bad Request: MESSAGE_TOO_LONG")
        self.callback_answers.append(CallbackAnswer(
            query_id=query_id, user_id=user.id, data=data, chat_id=message.chat.id, message_id=message.message_id,
            text=text, show_alert=bool(params.get("show_alert")), url=params.get("url"),
            cache_time=params.get("cache_time")))
        return True

    async def _api_getChat(self, params: dict[str, Any]) -> dict[str, Any]:
        chat = self._visible_chat(params.get("chat_id"))
        info = chat.json()
        info.pop("all_members_are_administrators", None)
        info.update(accent_color_id=chat.id % 7, max_reaction_count=11,
                    accepted_gift_types={"unlimited_gifts": True, "limited_gifts": True, "unique_gifts": True,
                                         "premium_subscription": True, "gifts_from_channels": True})
        if chat.type != "private":
            info["permissions"] = {"can_send_messages": True, "can_send_audios": True, "can_send_documents": True,
                                   "can_send_photos": True, "can_send_videos": True, "can_send_video_notes": True,
                                   "can_send_voice_notes": True, "can_send_polls": True,
                                   "can_send_other_messages": True, "can_add_web_page_previews": True,
                                   "can_change_info": True, "can_invite_users": True, "can_pin_messages": True}
        return info

    async def _api_getChatMember(self, params: dict[str, Any]) -> dict[str, Any]:
        chat = self._visible_chat(params.get("chat_id"))
        user_id = params.get("user_id")
        if user_id == self.bot_id:
            return self._member_json(self.bot_json(), "member" if chat.type == "private" else chat.bot_status, chat)
        user = self._users.get(user_id) if isinstance(user_id, int) else None
        if user is None:
            raise TelegramError(400, "Bad Request: user not found")
        if chat.type == "private":
            status = "member" if user.id == chat.id else "left"
        else:
            status = chat.status_of(user)
        return self._member_json(user.json(), status, chat)

    async def _api_setMyCommands(self, params: dict[str, Any]) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise TelegramError(400, "Bad Request: can't parse commands JSON object")
        if len(commands) > 100:
            raise TelegramError(400, "Bad Request: too many commands")
        for command in commands:
            name = command.get("command") if isinstance(command, dict) else None
            if not isinstance(name, str) or not 1 <= len(name) <= 32 or not all(
                    ch.isascii() and (ch.islower() or ch.isdigit() or ch == "_") for ch in name):
                raise TelegramError(400, "Bad Request: BOT_COMMAND_INVALID")
            description = command.get("description")
            if not isinstance(description, str) or not 1 <= len(description) <= 256:
                raise TelegramError(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
        self.bot_commands[(_scope_key(params.get("scope")), params.get("language_code") or "")] = [
            {"command": c["command"], "description": c["description"]} for c in commands]
        return True

    async def _api_getMyCommands(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        return self.commands(params.get("scope"), params.get("language_code") or "")

    async def _api_deleteMyCommands(self, params: dict[str, Any]) -> bool:
        self.bot_commands.pop((_scope_key(params.get("scope")), params.get("language_code") or ""), None)
        return True

    async def _api_sendChatAction(self, params: dict[str, Any]) -> bool:
        self._writable_chat(params.get("chat_id"))
        if params.get("action") not in CHAT_ACTIONS:
            raise TelegramError(400, "Bad Request: wrong parameter action in request")
        return True


@dataclass
class _WithDescription:
    """A successful result that Telegram answers with a description too (the webhook methods)."""

    result: Any
    description: str


def _scope_key(scope: Any) -> str:
    return json.dumps(scope or {"type": "default"}, sort_keys=True)


def _coerce(key: str, value: Any) -> Any:
    """A parameter as Telegram reads it: aiogram sends every value as a form string."""
    if key in _JSON_PARAMS:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                raise TelegramError(400, f"Bad Request: can't parse {_JSON_PARAMS[key]} JSON object") from None
        return value
    if not isinstance(value, str):
        return value
    if key in _INT_PARAMS:
        try:
            return int(value)
        except ValueError:
            return value
    if key in _BOOL_PARAMS:
        return value.strip().lower() in ("true", "1")
    return value
