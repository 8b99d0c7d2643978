"""Outbound delivery: a queue per chat within Telegram's limits, and nothing dropped silently.

- about 1 message a second per chat, 20 a minute per group, 30 a second in all (configurable);
- a 429 (``TelegramRetryAfter``) waits as told and tries again; a group migrated to a
  supergroup is followed to its new id; network errors are retried with backoff;
- plain announcements waiting for the same chat are merged into one message;
- a 403 (the player blocked the bot or never started it) is reported to ``on_forbidden``
  and, like a message that still fails after every retry, to ``on_failure``: never silently lost.

Operators' metrics (``shared.ops``): every call to the API, sent or failed; messages given up on
(dead); the messages queued and not yet delivered (the queue's depth, in ``avalon_outbox_depth``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from aiogram import Bot
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)

from shared import ops

log = logging.getLogger(__name__)
MAX_TEXT = 4096
_DEAD = ops.DEAD_MESSAGES.labels(service="telegram", channel="telegram")
_ERROR_SEND = ops.ERRORS.labels(service="telegram", where="send")


@dataclass
class Limits:
    per_chat_interval: float = 1.0
    group_per_minute: int = 20
    global_per_second: int = 30
    retries: int = 6


@dataclass
class _Job:
    kind: str  # send | edit
    chat_id: int
    text: str
    markup: Any = None
    message_id: int | None = None
    future: asyncio.Future = field(default=None)  # type: ignore[assignment]


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
        self.migrated: dict[int, int] = {}
        self._queues: dict[int, deque[_Job]] = {}
        self._wakeups: dict[int, asyncio.Event] = {}
        self._workers: dict[int, asyncio.Task] = {}
        self._last_sent: dict[int, float] = {}
        self._group_window: dict[int, deque[float]] = {}
        self._global_window: deque[float] = deque()
        self._queued = 0  # submitted, not yet delivered or given up on (the queue gauge's share of this sender)

    # -- public API ------------------------------------------------------------------

    async def send(self, chat_id: int, text: str, markup: Any = None) -> Any:
        """Queue a message; resolves to the sent Message (or None if it could not be delivered)."""
        return await self._submit(_Job("send", chat_id, text, markup))

    async def edit(self, chat_id: int, message_id: int, text: str, markup: Any = None) -> Any:
        return await self._submit(_Job("edit", chat_id, text, markup, message_id))

    def send_soon(self, chat_id: int, text: str, markup: Any = None) -> asyncio.Future:
        return self._submit(_Job("send", chat_id, text, markup))

    async def close(self) -> None:
        for task in self._workers.values():
            task.cancel()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        ops.TELEGRAM_QUEUE.dec(self._queued)  # what was still waiting leaves with this sender
        self._queued = 0

    # -- the queue per chat -------------------------------------------------------------

    def _submit(self, job: _Job) -> asyncio.Future:
        job.chat_id = self.migrated.get(job.chat_id, job.chat_id)
        job.future = asyncio.get_running_loop().create_future()
        self._queues.setdefault(job.chat_id, deque()).append(job)
        self._queued += 1
        ops.TELEGRAM_QUEUE.inc()
        self._wakeups.setdefault(job.chat_id, asyncio.Event()).set()
        worker = self._workers.get(job.chat_id)
        if worker is None or worker.done():
            self._workers[job.chat_id] = asyncio.create_task(self._work(job.chat_id))
        return job.future

    async def _work(self, chat_id: int) -> None:
        queue = self._queues[chat_id]
        while queue:
            job = queue.popleft()
            jobs = 1
            if job.kind == "send" and job.markup is None:
                merged = [job]  # merge plain announcements waiting for this chat
                while queue and queue[0].kind == "send" and queue[0].markup is None and \
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
            finally:
                self._queued -= jobs
                ops.TELEGRAM_QUEUE.dec(jobs)
            if not job.future.done():
                job.future.set_result(result)

    async def _deliver(self, job: _Job) -> Any:
        delay = 0.5
        for attempt in range(self.limits.retries):
            await self._wait_for_slot(job.chat_id)
            try:
                if job.kind == "send":
                    sent = await self.bot.send_message(job.chat_id, job.text, reply_markup=job.markup)
                else:
                    sent = await self.bot.edit_message_text(text=job.text, chat_id=job.chat_id,
                                                            message_id=job.message_id, reply_markup=job.markup)
                ops.TELEGRAM_SENT.inc()
                return sent
            except TelegramRetryAfter as error:
                ops.TELEGRAM_FAILED.inc()
                log.warning("429 for chat %s: waiting %s s", job.chat_id, error.retry_after)
                await asyncio.sleep(error.retry_after)
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
                log.warning("delivery to %s failed (attempt %d): %s", job.chat_id, attempt + 1, error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30)
        _DEAD.inc()
        if self.on_failure is not None:
            await self.on_failure(job.chat_id, job.text)
        return None

    async def _wait_for_slot(self, chat_id: int) -> None:
        limits = self.limits
        while True:
            now = time.monotonic()
            wait = self._last_sent.get(chat_id, -1e9) + limits.per_chat_interval - now
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


def _relay(target: asyncio.Future):
    def copy(source: asyncio.Future) -> None:
        if not target.done():
            target.set_result(source.result() if not source.exception() else None)
    return copy
