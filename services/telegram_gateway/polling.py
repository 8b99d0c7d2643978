"""Long polling that loses no update: Telegram is told an update arrived only once it is in the
database or already handled.

aiogram's own polling asks for the next updates as soon as it has handed a batch to its tasks. That
request confirms the batch (Telegram forgets it), so a gateway killed while one of them was still
being handled lost it: a leader's pick, a /startgame, a /join. Here each update is handed to its task
at once, as aiogram does, and those still being handled are meanwhile written to the
``update_inbox`` table (the bus's ``Inbox``, shared/bus/inbox.py); the next getUpdates, which confirms
them, waits for that commit. An update's row is deleted once it has been handled; what a restart
finds there is handled first. An update handled just before a crash, whose row was not deleted yet
(or that Telegram sends again), is not handled twice: ``TelegramGateway._save_after`` keeps the ids
of the updates it handled, saved before the row goes.

Updates are handled side by side: a reply paced for one chat holds up no other. The inbox writes
through the gateway's own database engine (the outbox's and the memory's): one pool per database
file in a process. Without an engine nothing is written, as with aiogram's polling.

``stop()`` ends the polling (the getUpdates waiting is cancelled, nothing logged) before the bot's
session and the database it uses are closed. (With aiogram's polling, a stop right after a start
raised "Polling is not started" and left the polling running on a closed session, each of its
getUpdates then logging a "Failed to fetch updates" ERROR.)"""

from __future__ import annotations

import asyncio
import json
import logging

from aiogram import Bot, Dispatcher
from aiogram.methods import GetUpdates
from aiogram.types import Update
from aiogram.utils.backoff import Backoff, BackoffConfig

from avalon.shared.bus.inbox import UPDATE_INBOX, Inbox

log = logging.getLogger(__name__)
BACKOFF = BackoffConfig(min_delay=1.0, max_delay=5.0, factor=1.3, jitter=0.1)


def update_key(body: bytes) -> str:
    return str(json.loads(body)["update_id"])


def _said_if_failed(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("long polling stopped: %r", task.exception(), exc_info=task.exception())


class Poller:
    def __init__(self, dispatcher: Dispatcher, bot: Bot, *, engine=None, timeout: int = 30) -> None:
        """``engine``: the gateway's database engine (the inbox writes through it); None: no inbox."""
        self.dispatcher, self.bot, self.timeout = dispatcher, bot, timeout
        self.inbox = Inbox(str(engine.url), table=UPDATE_INBOX, key_of=update_key, engine=engine) \
            if engine is not None else None
        self._handling: set[asyncio.Task] = set()
        self._keys: set[str] = set()  # the updates being handled (their inbox keys)
        self._offset: int | None = None  # what the next getUpdates confirms everything before
        self._newest = 0  # the newest update handed out: one Telegram returns again is not handed out twice
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self.run())
        self._task.add_done_callback(_said_if_failed)

    async def run(self) -> None:
        bot = self.bot
        me = await bot.me()
        if self.inbox is not None:
            left = await self.inbox.open(lambda key, body: None)
            if left:
                log.info("%d updates received before the restart are handled now", len(left))
            for key, body in left:
                self._hand_out(Update.model_validate_json(body, context={"bot": bot}))
        log.info("polling for updates as @%s", me.username)
        allowed = self.dispatcher.resolve_used_update_types()
        backoff = Backoff(config=BACKOFF)
        failing = False
        unstored: list[Update] = []  # handed out, not yet committed to the inbox
        while True:
            try:
                if unstored:
                    await self._store(unstored)
                    unstored = []
                updates = await bot(GetUpdates(offset=self._offset, timeout=self.timeout, allowed_updates=allowed),
                                    request_timeout=int((bot.session.timeout or 60) + self.timeout))
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
            for update in updates:  # handled at once; stored meanwhile, before the next getUpdates
                if self._hand_out(update) and self.inbox is not None:
                    unstored.append(update)
            if updates:
                self._offset = updates[-1].update_id + 1

    async def _store(self, updates: list[Update]) -> None:
        """The updates still being handled, committed to the inbox (one handled already needs no row)."""
        waiting = [u for u in updates if str(u.update_id) in self._keys]
        await asyncio.gather(*(self.inbox.put(u.model_dump_json(exclude_unset=True, by_alias=True).encode())
                               for u in waiting))

    def _hand_out(self, update: Update) -> bool:
        if update.update_id <= self._newest:  # Telegram returned it again (not confirmed yet)
            return False
        self._newest = update.update_id
        key = str(update.update_id)
        self._keys.add(key)
        task = asyncio.create_task(self._handle(update, key))
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)
        return True

    async def _handle(self, update: Update, key: str) -> None:
        try:
            await self.dispatcher.feed_update(self.bot, update)
        except Exception:  # noqa: BLE001 - that update is done with; the others go on
            log.exception("update %d could not be handled", update.update_id)
        self._keys.discard(key)
        if self.inbox is not None:
            self.inbox.done(key)

    async def stop(self, timeout: float = 10.0) -> None:
        """No more getUpdates (the one waiting is cancelled: nothing logged); the updates being handled
        are let finish (cut off after ``timeout``: those are handled again after a restart), and the
        inbox commits what it holds and stops. The bot's session and the database stay open: the
        gateway closes them after this."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        tasks = list(self._handling)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=timeout)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        if self.inbox is not None:
            await self.inbox.close()
