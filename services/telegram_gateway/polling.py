"""Long polling that confirms an update to Telegram only once it has been handled.

aiogram's own polling asks for the next updates as soon as it has handed a batch to its tasks. That
request confirms the batch, and Telegram then forgets it. A gateway killed while one of those updates
was still being handled lost it: a leader's pick, a /startgame, a /join. Here the offset sent with
getUpdates is the oldest update still being handled, so Telegram keeps that update until it is done
and delivers it again after a restart. An update Telegram returns again while it is still being
handled is not handed out twice. One handled before a restart but not yet confirmed is skipped by
``TelegramGateway._save_after``, which keeps the ids of the updates it handled.

Updates are still handled side by side: a reply paced for one chat holds up no other. While some are
being handled, Telegram answers getUpdates at once (it has unconfirmed updates to return), so the
next request waits until the oldest of them is done, or at most ``busy_poll`` seconds."""

from __future__ import annotations

import asyncio
import logging

from aiogram import Bot, Dispatcher
from aiogram.methods import GetUpdates
from aiogram.types import Update
from aiogram.utils.backoff import Backoff, BackoffConfig

log = logging.getLogger(__name__)
BACKOFF = BackoffConfig(min_delay=1.0, max_delay=5.0, factor=1.3, jitter=0.1)


class Poller:
    def __init__(self, dispatcher: Dispatcher, bot: Bot, *, timeout: int = 30, busy_poll: float = 0.25) -> None:
        self.dispatcher, self.bot = dispatcher, bot
        self.timeout, self.busy_poll = timeout, busy_poll
        self._handling: dict[int, asyncio.Task] = {}  # update id -> its task, until it is handled
        self._next: int | None = None  # the id after the newest update handed out

    @property
    def offset(self) -> int | None:
        """What getUpdates confirms: everything before the oldest update still being handled."""
        return min(self._handling) if self._handling else self._next

    async def run(self) -> None:
        bot = self.bot
        me = await bot.me()
        log.info("polling for updates as @%s: each confirmed to Telegram once it is handled", me.username)
        allowed = self.dispatcher.resolve_used_update_types()
        backoff = Backoff(config=BACKOFF)
        failing = False
        while True:
            wait = 0 if self._handling else self.timeout
            try:
                updates = await bot(GetUpdates(offset=self.offset, timeout=wait, allowed_updates=allowed),
                                    request_timeout=int((bot.session.timeout or 60) + wait))
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - Telegram away: tried again, nothing confirmed
                if not failing:
                    log.warning("could not fetch updates (%s: %s); trying again", type(error).__name__, error)
                failing = True
                await backoff.asleep()
                continue
            if failing:
                log.info("fetching updates again")
                failing = False
                backoff.reset()
            fresh = [u for u in updates if self._next is None or u.update_id >= self._next]
            for update in fresh:
                self._hand_out(update)
            if not fresh and self._handling:
                await asyncio.wait([self._handling[min(self._handling)]], timeout=self.busy_poll)

    async def finish(self, timeout: float = 10.0) -> None:
        """After ``run`` is cancelled: the updates being handled are let finish (cut off after
        ``timeout``: those come again after a restart), and what is done is confirmed."""
        tasks = list(self._handling.values())
        if tasks:
            done, late = await asyncio.wait(tasks, timeout=timeout)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        if self.offset is not None and not self._handling:
            try:  # limit=1, no wait: an update this returns is not handed out, and so not confirmed
                await self.bot(GetUpdates(offset=self.offset, limit=1, timeout=0), request_timeout=3)
            except Exception as error:  # noqa: BLE001 - confirmed by the next start instead
                log.info("could not confirm the last updates before stopping: %s", error)

    def _hand_out(self, update: Update) -> None:
        self._next = update.update_id + 1
        self._handling[update.update_id] = asyncio.create_task(self._handle(update))

    async def _handle(self, update: Update) -> None:
        try:
            await self.dispatcher.feed_update(self.bot, update)
        except Exception:  # noqa: BLE001 - that update is done with; the others go on
            log.exception("update %d could not be handled", update.update_id)
        finally:
            self._handling.pop(update.update_id, None)
