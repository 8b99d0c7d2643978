"""Outbound delivery: a queue per chat within Telegram's limits, and nothing dropped silently.

- each message waits for its turn within Telegram's limits and the 429 pauses (``pacing.py``);
  a 429 pauses that chat (or every chat) and the message is tried again (429s do not use up its
  retries);
- a group migrated to a supergroup is followed to its new id; network errors are retried with backoff;
- plain announcements waiting for the same chat are merged into one message (not replies);
- a 403 (the player blocked the bot or never started it) is reported to ``on_forbidden``
  and, like a message that still fails after every retry, to ``on_failure``: never silently lost.

Operators' metrics (``shared.ops``): every call to the API, sent or failed; messages given up on
(dead); the messages queued and not yet delivered (the queue's depth, in ``avalon_outbox_depth``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from aiogram import Bot
from aiogram.exceptions import (
    TelegramAPIError,
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.types import BufferedInputFile, ReplyParameters

from avalon.shared import ops

from .api_calls import hold_response_models, late_answer
from .pacing import HoldBack, Limits, Pacing

__all__ = ["Limits", "Sender", "hold_response_models"]

log = logging.getLogger(__name__)
MAX_TEXT = 4096
_DEAD = ops.DEAD_MESSAGES.labels(service="telegram", channel="telegram")
_ERROR_SEND = ops.ERRORS.labels(service="telegram", where="send")


@dataclass
class _Job:
    kind: str  # send | edit | photo
    chat_id: int
    text: str | None  # None: an edit of the buttons only
    markup: Any = None
    message_id: int | None = None
    future: asyncio.Future = field(default=None)  # type: ignore[assignment]
    reply_to: int | None = None  # a send that answers this message (of the same chat)
    photo: bytes | None = None  # a photo's PNG (its caption is ``text``)


class Sender:
    def __init__(self, bot: Bot, limits: Limits | None = None, *,
                 on_forbidden: Callable[[int], Awaitable[None]] | None = None,
                 on_failure: Callable[[int, str], Awaitable[None]] | None = None,
                 on_migrate: Callable[[int, int], None] | None = None) -> None:
        self.bot = bot
        self.limits = limits or Limits()
        self.on_forbidden = on_forbidden
        self.on_failure = on_failure
        self.on_migrate = on_migrate
        self.migrated: dict[int, int] = {}  # a group's old id -> its supergroup's (kept, not replaced)
        self.pacing = Pacing(self.limits)
        self._queues: dict[int, deque[_Job]] = {}
        self._workers: dict[int, asyncio.Task] = {}
        self._queued = 0  # submitted, not yet delivered or given up on (the queue gauge's share of this sender)
        session = getattr(bot, "session", None)
        if session is not None and hasattr(session, "middleware"):
            session.middleware(HoldBack(self.pacing, self.migrated))
            session.middleware(late_answer)
        hold_response_models()

    # -- public API ------------------------------------------------------------------

    async def send(self, chat_id: int, text: str, markup: Any = None, *, reply_to: int | None = None) -> Any:
        """Queue a message (a reply to message ``reply_to`` of that chat, if given); resolves to the
        sent Message (or None if it could not be delivered)."""
        return await self._submit(_Job("send", chat_id, text, markup, reply_to=reply_to))

    async def send_photo(self, chat_id: int, png: bytes, caption: str | None = None) -> Any:
        """Queue a photo (uploaded as multipart/form-data) with its caption, if any; resolves to the
        sent Message (or None). Paced and retried like a message; never merged with one."""
        return await self._submit(_Job("photo", chat_id, caption, photo=png))

    async def edit(self, chat_id: int, message_id: int, text: str | None, markup: Any = None) -> Any:
        """Edit a message in place: its text and buttons, or (``text=None``) its buttons only."""
        return await self._submit(_Job("edit", chat_id, text, markup, message_id))

    def send_soon(self, chat_id: int, text: str, markup: Any = None, *, reply_to: int | None = None) -> asyncio.Future:
        future = self._submit(_Job("send", chat_id, text, markup, reply_to=reply_to))
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # a failure is logged where it happens
        return future

    async def close(self) -> None:
        for task in self._workers.values():
            task.cancel()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        for queue in self._queues.values():  # whoever awaits a message that will not go now is told
            for job in queue:
                if job.future is not None and not job.future.done():
                    job.future.cancel()
        ops.TELEGRAM_QUEUE.dec(self._queued)  # what was still waiting leaves with this sender
        self._queued = 0

    # -- the queue per chat -------------------------------------------------------------

    def _submit(self, job: _Job) -> asyncio.Future:
        job.chat_id = self.migrated.get(job.chat_id, job.chat_id)
        job.future = asyncio.get_running_loop().create_future()
        self._queues.setdefault(job.chat_id, deque()).append(job)
        self._queued += 1
        ops.TELEGRAM_QUEUE.inc()
        worker = self._workers.get(job.chat_id)
        if worker is None or worker.done():
            self._workers[job.chat_id] = asyncio.create_task(self._work(job.chat_id))
        return job.future

    async def _work(self, chat_id: int) -> None:
        queue = self._queues[chat_id]
        while queue:
            job = queue.popleft()
            jobs = 1
            if _plain(job):
                merged = [job]  # merge plain announcements waiting for this chat
                while queue and _plain(queue[0]) and \
                        sum(len(j.text) + 2 for j in merged) + len(queue[0].text) < MAX_TEXT:
                    merged.append(queue.popleft())
                if len(merged) > 1:
                    jobs = len(merged)
                    job = _Job("send", chat_id, "\n\n".join(j.text for j in merged), None)
                    job.future = asyncio.get_running_loop().create_future()
                    for other in merged:
                        job.future.add_done_callback(_relay(other.future))
            try:
                result = await self._deliver(job)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - a fault of ours: this message fails, the chat goes on
                log.exception("sending to chat %s failed unexpectedly", chat_id)
                if not job.future.done():
                    job.future.set_exception(error)
                continue
            finally:
                self._queued -= jobs
                ops.TELEGRAM_QUEUE.dec(jobs)
            if not job.future.done():
                job.future.set_result(result)

    async def _deliver(self, job: _Job) -> Any:
        delay = 0.5
        attempt = floods = 0
        while attempt < self.limits.retries and floods <= self.limits.flood_retries:
            attempt += 1
            await self.pacing.wait_for_turn(job.chat_id)
            try:
                if job.kind == "photo":
                    sent = await self.bot.send_photo(job.chat_id, BufferedInputFile(job.photo or b"", "avalon.png"),
                                                     caption=job.text)
                elif job.kind == "send" and job.reply_to is not None:
                    sent = await self.bot.send_message(
                        job.chat_id, job.text, reply_markup=job.markup,
                        reply_parameters=ReplyParameters(message_id=job.reply_to, allow_sending_without_reply=True))
                elif job.kind == "send":
                    sent = await self.bot.send_message(job.chat_id, job.text, reply_markup=job.markup)
                elif job.text is None:  # the buttons only
                    sent = await self.bot.edit_message_reply_markup(chat_id=job.chat_id, message_id=job.message_id,
                                                                    reply_markup=job.markup)
                else:
                    sent = await self.bot.edit_message_text(text=job.text, chat_id=job.chat_id,
                                                            message_id=job.message_id, reply_markup=job.markup)
                ops.TELEGRAM_SENT.inc()
                return sent
            except TelegramRetryAfter as error:
                ops.TELEGRAM_FAILED.inc()
                attempt -= 1  # Telegram said when: not a failure of this message
                floods += 1
                everyone = self.pacing.pause(job.chat_id, error.retry_after)
                log.warning("429 for chat %s: %s waits %s s", job.chat_id, "every chat" if everyone else "it",
                            error.retry_after)
            except TelegramMigrateToChat as error:
                ops.TELEGRAM_FAILED.inc()
                log.info("chat %s migrated to %s", job.chat_id, error.migrate_to_chat_id)
                self.migrated[job.chat_id] = error.migrate_to_chat_id
                if self.on_migrate is not None:
                    self.on_migrate(job.chat_id, error.migrate_to_chat_id)
                job.chat_id = error.migrate_to_chat_id
            except TelegramForbiddenError:
                ops.TELEGRAM_FAILED.inc()
                _DEAD.inc()
                if self.on_forbidden is not None:
                    await self.on_forbidden(job.chat_id)
                return None
            except TelegramBadRequest as error:
                if "not modified" in str(error):
                    ops.TELEGRAM_SENT.inc()
                    return None  # the message already says this
                ops.TELEGRAM_FAILED.inc()
                _ERROR_SEND.inc()
                log.error("bad request for chat %s: %s", job.chat_id, error)
                break
            except (TelegramNetworkError, TelegramServerError, OSError) as error:
                ops.TELEGRAM_FAILED.inc()
                log.warning("delivery to %s failed (attempt %d): %s", job.chat_id, attempt, error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30)
            except TelegramAPIError as error:  # an answer with no rule here (404, 409, 413...): like a 400
                ops.TELEGRAM_FAILED.inc()
                _ERROR_SEND.inc()
                log.error("Telegram refused the message for chat %s: %s", job.chat_id, error)
                break
        _DEAD.inc()
        if self.on_failure is not None:
            await self.on_failure(job.chat_id, job.text or "")
        return None


def _plain(job: _Job) -> bool:
    """An announcement that may be merged with its neighbours: a send with no buttons, no reply."""
    return job.kind == "send" and job.markup is None and job.reply_to is None


def _relay(target: asyncio.Future):
    def copy(source: asyncio.Future) -> None:
        if not target.done():
            target.set_result(source.result() if not source.exception() else None)
    return copy
