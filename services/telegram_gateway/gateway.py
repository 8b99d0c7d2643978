"""The Telegram gateway: updates -> commands on the bus; events -> messages in groups and DMs.

A channel on the delivery core: the routers read what people send (``routers/``) into commands
(``commands.Commands``); the shared pipeline folds each event into the game's table and the
Telegram channel (``channel.TelegramChannel``) draws it, committed with the game in the durable
outbox and sent by the paced ``Sender``. It never decides a rule."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.types import InlineKeyboardMarkup

from avalon.shared.bus import Bus
from avalon.shared.db import to_the_end
from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.games import GameBook
from avalon.shared.delivery.outbox import Outbox, Outgoing
from avalon.shared.delivery.pipeline import Pipeline
from avalon.shared.delivery.roster import Roster
from avalon.shared.protocol import EventEnvelope
from avalon.shared.throttle import Throttle

from . import ids, legacy
from .channel import TelegramChannel, edit
from .commands import Commands
from .memory import Memory
from .persist import MemoryKeeper
from .sender import Limits, Sender
from .speech import Speech

log = logging.getLogger(__name__)

#: Update ids remembered as handled: many more than one getUpdates batch (100) can bring again.
HANDLED_KEPT = 1000


class TelegramGateway:
    def __init__(self, bot: Bot, bus: Bus, *, database_url: str, limits: Limits | None = None, bot_username: str = "",
                 throttle: Throttle | None = None) -> None:
        self.bot = bot
        self.bot_username = bot_username
        self.memory = Memory()
        self.speech = Speech(self.memory)
        self.commands = Commands(bus, self.memory)
        #: each user's flood bucket (``throttling.py``); none given: off
        self.throttle = throttle if throttle is not None else Throttle(0, 0)
        self.sender = Sender(bot, limits, on_forbidden=self._forbidden, on_failure=self._failed,
                             on_migrate=self.migrated)
        # the chat-level memory, snapshotted; each game is kept in its own row with the events that changed it
        self.keeper = MemoryKeeper(database_url, lambda: self.memory)
        self.channel = TelegramChannel(self.memory, self.speech, self.sender, deep_link=self.deep_link,
                                       game_of=lambda game: self.book.get(game), open_games_of=self._open_games_of,
                                       slot_of=lambda name: self.book.outbox.slot(name))
        self.book: GameBook | None = None  # with the outbox, once started
        self.pipeline: Pipeline | None = None
        self._opened = asyncio.Event()

    @property
    def bus(self) -> Bus:
        return self.commands.bus

    @property
    def narrator(self):
        return self.speech.narrator

    @property
    def outbox(self) -> Outbox | None:
        return self.book.outbox if self.book is not None else None

    # -- wiring -----------------------------------------------------------------------

    def dispatcher(self) -> Dispatcher:
        from .routers import info, lobby, play, private, records, settings, table
        from .throttling import ThrottleMiddleware

        dp = Dispatcher()
        dp["gw"] = self
        dp.update.outer_middleware(self._save_after)
        throttling = ThrottleMiddleware(self)  # inner: after a handler's filters matched, before it runs
        dp.message.middleware(throttling)
        dp.callback_query.middleware(throttling)
        dp.include_routers(private.build(), lobby.build(), settings.build(), play.build(), table.build(),
                           info.build(), records.build(), play.build_unknown())
        return dp

    def poller(self, dispatcher: Dispatcher, *, timeout: int = 30):
        """Long polling for ``dispatcher`` that loses no update: each kept in the gateway's database
        until handled (``polling.Poller``)."""
        from .polling import Poller

        return Poller(dispatcher, self.bot, engine=self.keeper.engine, timeout=timeout)

    async def _save_after(self, handler, update, data):
        """What an update changed is saved with the update's id once it is handled. An update Telegram
        delivers again (the gateway died before its next getUpdates confirmed it) is not handled twice:
        a button that toggles (the leader's picks) would toggle back."""
        if update.update_id in self.memory.handled_updates:
            return None
        games = self._games_of_update(update)
        try:
            return await handler(update, data)
        finally:
            self.memory.handled_updates = (*self.memory.handled_updates[1 - HANDLED_KEPT:], update.update_id)
            await to_the_end(self._save(games))  # a handler cut off at a stop: never in the middle of a write

    async def _save(self, games: set[str]) -> None:
        for game_id in games:
            game = self.book.get(game_id)
            if game is not None:
                await self.book.save(game)
        await self.keeper.save()

    def _games_of_update(self, update) -> set[str]:
        """The games an update can change: the one its button names, the group's open one."""
        games: set[str] = set()
        query = update.callback_query
        if query is not None and query.data and ":" in query.data:
            games.add(query.data.split(":", 2)[1])
        message = update.message or (query.message if query is not None else None)
        if message is not None and (game := self.memory.current.get(message.chat.id)) is not None:
            games.add(game)
        return games

    async def start(self, *, gated: bool = False) -> None:
        """Load the memory and the games, and subscribe to the events. ``gated``: events wait (on the
        bus) until ``open()``, once the Bot API answers; the subscription is there from the start, so
        nothing published meanwhile is lost. Otherwise the gateway opens at once."""
        self.memory = await self.keeper.load() or self.memory
        self.speech.memory = self.channel.memory = self.commands.memory = self.memory
        outbox = Outbox(self.keeper.engine, self.channel.name, self.channel.deliver, on_dead=self.channel.on_dead)
        self.book = GameBook(outbox, self.channel.own_part, upgrade=legacy.upgrade)
        await self.book.load()
        for game in self.book.values():  # the group's open game (the most recently changed wins)
            chat = game.own.chat_id
            if not game.table.over:
                self.memory.current[chat] = game.table.game_id
            elif self.memory.current.get(chat) == game.table.game_id:
                del self.memory.current[chat]
        self.pipeline = Pipeline(self.channel, self.book, Roster(ids.PREFIX, has_group=True))
        self.keeper.start()
        await self.bus.subscribe_events(self.channel.name, f"{self.channel.name}.#", self._on_event, by_game=True)
        if not gated:
            if not self.bot_username:
                me = await self.bot.get_me()
                self.bot_username = me.username or ""
            await self.open()

    async def open(self) -> None:
        """Telegram answers: draw the events waiting, and send what the outbox kept."""
        await self.outbox.start()
        self._opened.set()

    async def _on_event(self, envelope: EventEnvelope) -> None:
        await self._opened.wait()
        await self.pipeline.on_event(envelope)

    async def close(self) -> None:
        if self.outbox is not None:
            await self.outbox.close()
        await self.sender.close()
        await self.keeper.close()

    # -- the games -----------------------------------------------------------------------

    def game(self, game_id: str) -> Game | None:
        return self.book.get(game_id) if self.book is not None else None

    def game_of_chat(self, chat_id: int) -> Game | None:
        game = self.memory.current.get(chat_id)
        return self.game(game) if game else None

    def games_of(self, player: str) -> list[Game]:
        """The games not over in which ``player`` has a seat."""
        return [g for g in self.book.values() if player in g.table.seats.players and not g.table.over]

    def _open_games_of(self, player: str) -> set[str]:
        return {g.table.game_id for g in self.games_of(player)}

    async def refresh_pick(self, game: Game) -> None:
        """The leader's picker, redrawn as they pick (from the buttons, not an event: at once)."""
        own = game.own
        ref = self.channel.resolve(own.pick_message)
        text, markup = self.channel.pick_text(game), self.channel.pick_keyboard(game)
        if ref is not None:
            await self.sender.edit(own.chat_id, ref, text, markup)
        elif isinstance(own.pick_message, str):  # the picker is still on its way out
            await self.outbox.post(game.table.game_id, edit(own.chat_id, own.pick_message, text, markup),
                                   f"pick:{game.table.game_id}")

    # -- commands -----------------------------------------------------------------------

    async def command(self, game: str, actor: str, body: dict[str, Any], phase_id: int | None = None) -> str:
        return await self.commands.send(game, actor, body, phase_id)

    def remember_user(self, user) -> str:
        player = ids.player_id(user.id)
        self.memory.names[player] = user.first_name or user.username or str(user.id)
        if user.username:
            self.memory.usernames[user.username.lower()] = player
        if user.language_code and player not in self.memory.languages:
            self.memory.languages[player] = user.language_code.split("-")[0]
        self.commands.profile_due(player, user)
        return player

    # -- words --------------------------------------------------------------------------

    def language_of(self, player: str | None, game: Game | None = None) -> tuple[str, ...]:
        return self.speech.language_of(player, game)

    def reason(self, reader: str | None, game: Game | None, reason: str, **params: Any) -> str:
        return self.speech.reason(reader, game, reason, **params)

    def template(self, name: str, game: Game | None, reader: str | None = None, **variables: Any) -> str:
        return self.speech.template(name, game, reader, **variables)

    def ui(self, game: Game | None, reader: str | None, key: str, **params: Any) -> str:
        return self.speech.ui(game, reader, key, **params)

    def deep_link(self, game: str) -> str:
        return self.start_link(f"join_{game}")

    def start_link(self, payload: str) -> str:
        """The link that opens the bot's private chat and sends /start ``payload`` once Start is pressed."""
        return f"https://t.me/{self.bot_username}?start={payload}"

    # -- delivery -----------------------------------------------------------------------

    async def answer(self, message, text: str, markup: InlineKeyboardMarkup | None = None, *,
                     reply: bool = False):
        """A message in the chat ``message`` came from (a reply to it with ``reply``), through the
        Sender's paced, retrying queue like every other message."""
        return await self.sender.send(message.chat.id, text, markup,
                                      reply_to=message.message_id if reply else None)

    async def post(self, game: Game, message: Outgoing, reason: str) -> None:
        await self.outbox.post(game.table.game_id, message, reason)

    async def _forbidden(self, chat_id: int) -> None:
        player = ids.player_id(chat_id)
        self.memory.reachable.discard(player)
        for game in self.games_of(player):
            name = self.memory.names.get(player, str(chat_id))
            self.sender.send_soon(game.own.chat_id, self.ui(game, None, "unreachable", name=name,
                                                            link=self.deep_link(game.table.game_id)))

    def migrated(self, old: int, new: int) -> None:
        """A group became a supergroup with a new id: its games follow it."""
        self.sender.migrated[old] = new
        self.memory.migrate(old, new)
        for game in self.book.values() if self.book is not None else ():
            if game.own.chat_id == old:
                game.own.chat_id = new

    async def _failed(self, chat_id: int, text: str) -> None:
        log.error("could not deliver to %s after every retry: %r", chat_id, text[:200])
