"""A flood from one Telegram user is cut off before anything reaches the bus.

Every message a handler takes (a command, or free text in private) and every button press takes a
token from that user's bucket (``shared.throttle``, key ``("telegram", user id)``), after the
router's filters matched and before the handler runs: a refused update never reaches a handler,
so nothing of it goes on the bus. A refused button press gets an alert every time (private and
cheap: it only answers the press); a refused message gets one reply per refusal window, in the
user's language, and then silence until the window has passed."""

from __future__ import annotations

import logging

from aiogram.types import CallbackQuery, Message

from avalon.shared.narration.render import html_to_text

log = logging.getLogger(__name__)
CHANNEL = "telegram"


class ThrottleMiddleware:
    """An inner middleware of the dispatcher's ``message`` and ``callback_query`` observers (inner:
    called only for an update that a handler will take, so chatter no handler reads costs nothing)."""

    def __init__(self, gw) -> None:
        self.gw = gw

    async def __call__(self, handler, event, data):
        user = getattr(event, "from_user", None)
        if user is None or (isinstance(event, Message) and event.migrate_from_chat_id is not None):
            return await handler(event, data)  # Telegram's own service message: the group has moved
        verdict = self.gw.throttle.check((CHANNEL, user.id))
        if verdict.allowed:
            return await handler(event, data)
        if verdict.first:
            log.info("telegram user %s is sending too fast: throttled for %.0f s", user.id, self.gw.throttle.quiet)
        if isinstance(event, CallbackQuery):
            await event.answer(html_to_text(self._words(event, user, verdict)), show_alert=True)
        elif isinstance(event, Message) and verdict.first:
            await self.gw.answer(event, self._words(event, user, verdict), reply=True)
        return None

    def _words(self, event, user, verdict) -> str:
        gw = self.gw
        player = gw.remember_user(user)
        message = event.message if isinstance(event, CallbackQuery) else event
        game = gw.game_of_chat(message.chat.id) if message is not None else None
        return gw.ui(game, player, "too_fast", wait=verdict.wait_seconds)
