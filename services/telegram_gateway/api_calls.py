"""What every call of the bot to the Bot API goes through, besides the pacing's pauses
(``pacing.HoldBack``): a late answer to a button press is not a failure (``late_answer``, a
request middleware), and the models aiogram reads the answers with are built once
(``hold_response_models``)."""

from __future__ import annotations

import logging
from typing import Any

from aiogram.exceptions import TelegramBadRequest
from aiogram.methods import (
    AnswerCallbackQuery,
    DeleteMessage,
    EditMessageReplyMarkup,
    EditMessageText,
    GetMe,
    GetUpdates,
    SendMessage,
    SendPhoto,
)
from aiogram.methods.base import Response

log = logging.getLogger(__name__)

#: aiogram reads every answer of the Bot API with ``Response[<the method's result type>]``, a pydantic
#: generic model that pydantic keeps only weakly: once the garbage collector has taken it, the next
#: call builds it again (about 8 ms of CPU, the event loop blocked; 253 times in two 8-player test
#: games). Held here (``hold_response_models``), the models of the calls the gateway makes are built once.
_RESPONSE_MODELS: list[type] = []


def hold_response_models() -> None:
    if not _RESPONSE_MODELS:
        methods = (SendMessage, SendPhoto, EditMessageText, EditMessageReplyMarkup, AnswerCallbackQuery, DeleteMessage,
                   GetUpdates, GetMe)
        _RESPONSE_MODELS.extend(Response[m.__returning__] for m in methods)


async def late_answer(make_request: Any, bot: Any, method: Any) -> Any:
    """The bot's request middleware: an answer to a button press that Telegram no longer takes (the
    press is too old, or was answered already) is not a failure of the press. Such a press comes again
    after a restart: the gateway was killed while handling it, so Telegram was not told it was done.
    The answer only stops the button's spinner; the press itself is still handled."""
    try:
        return await make_request(bot, method)
    except TelegramBadRequest as error:
        if type(method).__name__ != "AnswerCallbackQuery" or "query" not in str(error).lower():
            raise
        log.info("a button press was answered too late (%s): handled all the same", error.message)
        return True
