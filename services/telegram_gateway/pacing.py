"""The pacing of the bot's messages within Telegram's limits: about 1 message a second per chat,
20 a minute per group, 30 a second in all (``Limits``, configurable), and the pauses Telegram asks
for. A 429 (``TelegramRetryAfter``) pauses that chat until its ``retry_after`` has passed; 429s
for two chats at once are taken as the bot's global limit and pause every chat.

The pauses hold back, and are learnt from, every call through the bot (``HoldBack``, a request
middleware), not only the messages the ``Sender`` queues."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping

from aiogram.exceptions import TelegramRetryAfter


@dataclass
class Limits:
    per_chat_interval: float = 1.0
    group_per_minute: int = 20
    global_per_second: int = 30
    retries: int = 6
    flood_retries: int = 50  # 429s a message may meet before it is given up on


#: The Bot API methods Telegram's flood control counts: what a 429's pause holds back.
FLOOD_COUNTED = {
    "SendMessage", "EditMessageText", "EditMessageReplyMarkup", "EditMessageCaption", "EditMessageMedia",
    "SendPhoto", "SendDocument", "SendAnimation", "SendAudio", "SendVideo", "SendVoice", "SendSticker",
    "SendPoll", "SendDice", "SendMediaGroup", "SendLocation", "SendContact", "CopyMessage", "ForwardMessage",
}


class Pacing:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._last_sent: dict[int, float] = {}  # chat -> when its latest message went
        self._group_window: dict[int, deque[float]] = {}  # group -> when its messages of the last minute went
        self._global_window: deque[float] = deque()  # when the messages of the last second went, to any chat
        self._paused_until: dict[int, float] = {}  # chat -> when its latest 429's retry_after has passed
        self._all_paused_until = 0.0  # the same for a global 429: every chat

    async def wait_for_turn(self, chat_id: int) -> None:
        """Wait until a message to ``chat_id`` keeps within every limit and pause, and count it as sent."""
        limits = self.limits
        while True:
            now = time.monotonic()
            wait = self._last_sent.get(chat_id, -1e9) + limits.per_chat_interval - now
            wait = max(wait, self._paused_until.get(chat_id, 0.0) - now, self._all_paused_until - now)
            if chat_id < 0:
                window = self._group_window.setdefault(chat_id, deque())
                while window and window[0] <= now - 60:
                    window.popleft()
                if len(window) >= limits.group_per_minute:
                    wait = max(wait, window[0] + 60 - now)
            while self._global_window and self._global_window[0] <= now - 1:
                self._global_window.popleft()
            if len(self._global_window) >= limits.global_per_second:
                wait = max(wait, self._global_window[0] + 1 - now)
            if wait <= 0:
                break
            await asyncio.sleep(wait)
        now = time.monotonic()
        self._last_sent[chat_id] = now
        if chat_id < 0:
            self._group_window.setdefault(chat_id, deque()).append(now)
        self._global_window.append(now)

    async def wait_out_pause(self, chat_id: int) -> None:
        """Wait until a 429's pause for ``chat_id`` (or for every chat) has passed."""
        while (wait := max(self._paused_until.get(chat_id, 0.0), self._all_paused_until) - time.monotonic()) > 0:
            await asyncio.sleep(wait)

    def pause(self, chat_id: int, retry_after: float) -> bool:
        """Remember a 429: nothing goes to ``chat_id`` until ``retry_after`` has passed, and nothing
        to any chat when another chat is paused by a 429 too (the bot's global limit). Whether
        every chat was paused."""
        now = time.monotonic()
        until = now + max(float(retry_after), 0.0)
        everyone = any(other != chat_id and end > now for other, end in self._paused_until.items())
        self._paused_until[chat_id] = max(self._paused_until.get(chat_id, 0.0), until)
        if everyone:
            self._all_paused_until = max(self._all_paused_until, until)
        for other, end in list(self._paused_until.items()):
            if end <= now:
                del self._paused_until[other]
        return everyone


class HoldBack:
    """The bot's request middleware: a send or edit to a chat waits until a 429's pause for it (or
    for every chat) has passed, and a 429 it meets pauses that chat. So a call made outside the
    queue (say, removing the buttons of a message just pressed) keeps the pause too."""

    def __init__(self, pacing: Pacing, migrated: Mapping[int, int]) -> None:
        self.pacing = pacing
        self.migrated = migrated  # old chat id -> its supergroup's (the Sender's, kept up to date there)

    async def __call__(self, make_request: Any, bot: Any, method: Any) -> Any:
        chat = getattr(method, "chat_id", None) if type(method).__name__ in FLOOD_COUNTED else None
        if not isinstance(chat, int):
            return await make_request(bot, method)
        chat = self.migrated.get(chat, chat)
        await self.pacing.wait_out_pause(chat)
        try:
            return await make_request(bot, method)
        except TelegramRetryAfter as error:
            self.pacing.pause(chat, error.retry_after)
            raise
