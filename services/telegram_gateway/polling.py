"""Long polling that loses no update: each is committed to the database before Telegram is told it
arrived.

aiogram's own polling asks for the next updates as soon as it has handed a batch to its tasks. That
request confirms the batch (Telegram forgets it), so a gateway killed while one of them was still
being handled lost it: a leader's pick, a /startgame, a /join. Here a batch is first written to the
``update_inbox`` table (the bus's ``Inbox``, shared/bus/inbox.py), and only then does the next
getUpdates confirm it. An update's row is deleted once it has been handled; what a restart finds there
is handled first. An update handled just before a crash, whose row was not deleted yet, is not handled
twice: ``TelegramGateway._save_after`` keeps the ids of the updates it handled, saved before the
row goes.

Updates are handled side by side, as aiogram does: a reply paced for one chat holds up no other.
Without a database (the in-memory gateway of some tests) updates are handed out at once, as
aiogram's polling would."""

from __future__ import annotations

import asyncio
import json
import logging

from aiogram import Bot, Dispatcher
from aiogram.methods import GetUpdates
from aiogram.types import Update
from aiogram.utils.backoff import Backoff, BackoffConfig

from shared.bus.inbox import UPDATE_INBOX, Inbox

log = logging.getLogger(__name__)
BACKOFF = BackoffConfig(min_delay=1.0, max_delay=5.0, factor=1.3, jitter=0.1)


def update_key(body: bytes) -> str:
    return str(json.loads(body)["update_id"])


class Poller:
    def __init__(self, dispatcher: Dispatcher, bot: Bot, *, database_url: str | None = None,
                 timeout: int = 30) -> None:
        self.dispatcher, self.bot, self.timeout = dispatcher, bot, timeout
        self.inbox = Inbox(database_url, table=UPDATE_INBOX, key_of=update_key) if database_url else None
        self._handling: set[asyncio.Task] = set()
        self._keys: set[str] = set()  # the inbox rows of the updates being handled
        self._offset: int | None = None  # what the next getUpdates confirms everything before
        self._newest = 0  # the newest update handed out: one Telegram returns again is not handed out twice

    async def run(self) -> None:
        bot = self.bot
        me = await bot.me()
        if self.inbox is not None:
            left = await self.inbox.open(self._stored)
            if left:
                log.info("%d updates received before the restart are handled now", len(left))
            for key, body in left:
                self._stored(key, body)
        log.info("polling for updates as @%s", me.username)
        allowed = self.dispatcher.resolve_used_update_types()
        backoff = Backoff(config=BACKOFF)
        failing = False
        while True:
            try:
                updates = await bot(GetUpdates(offset=self._offset, timeout=self.timeout, allowed_updates=allowed),
                                    request_timeout=int((bot.session.timeout or 60) + self.timeout))
                if self.inbox is not None:  # committed before the next getUpdates confirms them
                    await asyncio.gather(*(self.inbox.put(u.model_dump_json(exclude_unset=True, by_alias=True).encode())
                                           for u in updates))
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - Telegram or the database away: nothing confirmed
                if not failing:
                    log.warning("could not take the updates (%s: %s); trying again", type(error).__name__,
                                " ".join(str(error).split())[:300])
                failing = True
                await backoff.asleep()
                continue
            if failing:
                log.info("taking updates again")
                failing = False
                backoff.reset()
            if self.inbox is None:
                for update in updates:
                    self._hand_out(update, None)
            if updates:
                self._offset = updates[-1].update_id + 1

    def _stored(self, key: str, body: bytes) -> None:
        update = Update.model_validate_json(body, context={"bot": self.bot})
        self._hand_out(update, key)

    def _hand_out(self, update: Update, key: str | None) -> None:
        if update.update_id <= self._newest:  # Telegram returned it again (a batch stored in part)
            if key is not None and key not in self._keys and self.inbox is not None:
                self.inbox.done(key)  # handled already: the row written again goes too
            return
        self._newest = update.update_id
        if key is not None:
            self._keys.add(key)
        task = asyncio.create_task(self._handle(update, key))
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    async def _handle(self, update: Update, key: str | None) -> None:
        try:
            await self.dispatcher.feed_update(self.bot, update)
        except Exception:  # noqa: BLE001 - that update is done with; the others go on
            log.exception("update %d could not be handled", update.update_id)
        if key is not None and self.inbox is not None:
            self._keys.discard(key)
            self.inbox.done(key)

    async def finish(self, timeout: float = 10.0) -> None:
        """After ``run`` is cancelled: the updates being handled are let finish (cut off after
        ``timeout``: those are handled again after a restart), and the inbox is closed."""
        tasks = list(self._handling)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=timeout)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        if self.inbox is not None:
            await self.inbox.close()
