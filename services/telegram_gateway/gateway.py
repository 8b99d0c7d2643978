"""The Telegram gateway: updates -> commands on the bus; events -> messages in groups and DMs.

It never decides a rule. It remembers what it needs to draw (``memory.Memory``), sends
commands, and renders every event through the narration layer in the reader's language.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import pickle
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.types import InlineKeyboardMarkup

from shared.bus import Bus
from shared.narration.render import LOCALES, Context, Narrator, Recipient, reasons
from shared.protocol import CommandEnvelope, EventEnvelope
from shared.throttle import Throttle

from . import ids
from .memory import GameMemo, Memory
from .sender import Limits, Sender

log = logging.getLogger(__name__)

#: Update ids remembered as handled: many more than one getUpdates batch (100) can bring again.
HANDLED_KEPT = 1000


class TelegramGateway:
    def __init__(self, bot: Bot, bus: Bus, *, limits: Limits | None = None, bot_username: str = "",
                 database_url: str | None = None, throttle: Throttle | None = None) -> None:
        self.bot = bot
        self.bus = bus
        self.narrator = Narrator()
        self.memory = Memory()
        self._profiles_sent: dict[str, tuple[str, str | None]] = {}  # player -> (name, language) the engine has
        self._profiles_due: dict[str, tuple[str, str | None]] = {}  # player -> what to send before their command
        self.bot_username = bot_username
        #: each user's flood bucket (``throttling.py``); none given: off
        self.throttle = throttle if throttle is not None else Throttle(0, 0)
        self.sender = Sender(bot, limits, on_forbidden=self._forbidden, on_failure=self._failed,
                             on_migrate=self.migrated)
        self.keeper = None
        self.outbox = None  # the delivery core's durable outbox, with a database
        #: each game's memory as last committed (``game_blob``): what a failed drawing goes back to,
        #: and what tells whether an update changed it
        self._blobs: dict[str, bytes] = {}
        self._writing: dict[str, asyncio.Lock] = {}  # a game's memory is written by one task at a time
        if database_url:
            from .persist import MemoryKeeper

            # the games are kept apart, each in its row with the events that changed it (the outbox)
            self.keeper = MemoryKeeper(database_url, lambda: dataclasses.replace(self.memory, games={}, offers={}))

    # -- wiring -----------------------------------------------------------------------

    def dispatcher(self) -> Dispatcher:
        from .routers import info, lobby, play, private, settings
        from .throttling import ThrottleMiddleware

        dp = Dispatcher()
        dp["gw"] = self
        dp.update.outer_middleware(self._save_after)
        throttling = ThrottleMiddleware(self)  # inner: after a handler's filters matched, before it runs
        dp.message.middleware(throttling)
        dp.callback_query.middleware(throttling)
        dp.include_routers(private.build(), lobby.build(), settings.build(), play.build(), info.build(),
                           play.build_unknown())
        return dp

    async def _save_after(self, handler, update, data):
        """What an update changed in the memory is saved with the update's id once it is handled. An
        update Telegram delivers again (the gateway died before its next getUpdates confirmed it)
        is not handled twice: a button that toggles (the leader's picks) would toggle back."""
        if update.update_id in self.memory.handled_updates:
            return None
        games = self._games_of_update(update)
        try:
            return await handler(update, data)
        finally:
            self.memory.handled_updates = (*self.memory.handled_updates[1 - HANDLED_KEPT:], update.update_id)
            if self.outbox is not None:
                for game in games:
                    memo = self.memory.games.get(game)
                    if memo is not None:
                        await self.save_game(memo)
            if self.keeper is not None:
                await self.keeper.save()

    def _games_of_update(self, update) -> set[str]:
        """The games an update can change the memory of: the one its button names, the group's open one."""
        games: set[str] = set()
        query = update.callback_query
        if query is not None and query.data and ":" in query.data:
            games.add(query.data.split(":", 2)[1])
        message = update.message or (query.message if query is not None else None)
        if message is not None and (game := self.memory.current.get(message.chat.id)) is not None:
            games.add(game)
        return games

    async def start(self, *, gated: bool = False) -> None:
        """Load the memory and subscribe to the events. ``gated``: events wait (on the bus) until
        ``open()``, once the Bot API answers; the subscription is there from the start, so nothing
        published meanwhile is lost. Otherwise the gateway opens at once."""
        import asyncio

        from .channel import EventPainter

        if self.keeper is not None:
            self.memory = await self.keeper.load() or self.memory
            from shared.delivery.outbox import Outbox

            self.outbox = Outbox(self.keeper.engine, "telegram", self._deliver_row, on_dead=self._dead_row)
            self._restore_games(await self.outbox.games())
            self.keeper.start()
        self.painter = EventPainter(self)
        self._opened = asyncio.Event()
        await self.bus.subscribe_events("telegram", "telegram.#", self._on_event, by_game=True)
        if not gated:
            if not self.bot_username:
                me = await self.bot.get_me()
                self.bot_username = me.username or ""
            await self.open()

    async def open(self) -> None:
        """Telegram answers: draw the events waiting, and send what the outbox kept."""
        if self.outbox is not None:
            await self.outbox.start()
        self._opened.set()

    async def _on_event(self, envelope: EventEnvelope) -> None:
        await self._opened.wait()
        await self.painter.on_event(envelope)

    async def close(self) -> None:
        if self.outbox is not None:
            await self.outbox.close()
        await self.sender.close()
        if self.keeper is not None:
            await self.keeper.close()

    # -- commands -----------------------------------------------------------------------

    async def command(self, game: str, actor: str, body: dict[str, Any], phase_id: int | None = None) -> str:
        await self._send_profile(actor)
        envelope = CommandEnvelope(game_id=game, actor=actor, channel="telegram", phase_id=phase_id, command=body)
        await self.bus.send_command(envelope)
        return envelope.message_id

    def remember_user(self, user) -> str:
        player = ids.player_id(user.id)
        name = user.first_name or user.username or str(user.id)
        self.memory.names[player] = name
        if user.language_code and player not in self.memory.languages:
            self.memory.languages[player] = user.language_code.split("-")[0]
        self._profile_due(player, user)
        return player

    def _profile_due(self, player: str, user) -> None:
        """When the name or language known of ``player`` is not what the engine was last sent, the
        next command of theirs is preceded by an ``update_profile`` (same bus, same queue: the
        engine names them in that command's events, and in every channel)."""
        language = self.memory.languages.get(player)
        profile = ((user.first_name or self.memory.names[player])[:64], language if language in LOCALES else None)
        if self._profiles_sent.get(player) != profile:
            self._profiles_due[player] = profile
        else:
            self._profiles_due.pop(player, None)

    async def _send_profile(self, player: str) -> None:
        profile = self._profiles_due.pop(player, None)
        if profile is None:
            return
        name, language = profile
        envelope = CommandEnvelope(game_id=f"profile:{player}", actor=player, channel="telegram",
                                   command={"type": "update_profile", "display_name": name, "language": language})
        try:
            await self.bus.send_command(envelope)
        except BaseException:
            self._profiles_due.setdefault(player, profile)  # sent with their next command, then
            raise
        self._profiles_sent[player] = profile

    # -- words --------------------------------------------------------------------------

    def language_of(self, player: str | None, memo: GameMemo | None = None) -> tuple[str, ...]:
        group = memo.language if memo else "en"
        if player is None:
            return (group,)
        return (self.memory.languages.get(player, group), group)

    def render(self, envelope: EventEnvelope, reader: str | None, memo: GameMemo | None) -> str:
        recipient = Recipient(reader, self.language_of(reader, memo))
        return self.narrator.render(envelope, recipient, "telegram", Context(self.memory.names)).html

    def reason(self, reader: str | None, memo: GameMemo | None, reason: str, **params: Any) -> str:
        """A rejection sentence for an alert, in the reader's language (plain text)."""
        from shared.narration.render import html_to_text, pick_locale, sentence

        locale = pick_locale(self.language_of(reader, memo))
        template = sentence(locale, reasons(locale)[reason])
        return html_to_text(template.render(p=params, names=self.memory.names, tz=None, tz_known=False))

    def template(self, name: str, memo: GameMemo | None, reader: str | None = None, **variables: Any) -> str:
        from shared.narration.render import pick_locale

        locale = pick_locale(self.language_of(reader, memo))
        return self.narrator.render_template(locale, name, Recipient(reader, (locale,)),
                                             Context(self.memory.names), **variables).html

    def ui(self, memo: GameMemo | None, reader: str | None, key: str, **params: Any) -> str:
        from shared.narration.render import pick_locale, ui_text

        return ui_text(pick_locale(self.language_of(reader, memo)), key, **params)

    def deep_link(self, game: str) -> str:
        return f"https://t.me/{self.bot_username}?start=join_{game}"

    # -- delivery -----------------------------------------------------------------------

    def private_text(self, player: str, text: str, memo: GameMemo | None = None) -> str:
        """What a player reads in private about game ``memo``: ``text``, under a line naming the
        game (the group's title, else the game's code) when the player is in more than one open
        game, so two role cards side by side say which game each belongs to."""
        if memo is None:
            return text
        open_games = {m.game_id for m in self.memory.games_of(player)} | {memo.game_id}
        if len(open_games) < 2:
            return text
        return self.ui(memo, player, "game_header", title=memo.title or memo.game_id) + "\n" + text

    async def answer(self, message, text: str, markup: InlineKeyboardMarkup | None = None, *,
                     reply: bool = False):
        """A message in the chat ``message`` came from (a reply to it with ``reply``), through the
        Sender's paced, retrying queue like every other message."""
        return await self.sender.send(message.chat.id, text, markup,
                                      reply_to=message.message_id if reply else None)

    async def _forbidden(self, chat_id: int) -> None:
        player = ids.player_id(chat_id)
        self.memory.reachable.discard(player)
        for memo in self.memory.games.values():
            if player in memo.players and not memo.over:
                name = self.memory.names.get(player, str(chat_id))
                link = self.deep_link(memo.game_id)
                self.sender.send_soon(memo.chat_id, self.ui(memo, None, "unreachable", name=name, link=link))

    def migrated(self, old: int, new: int) -> None:
        self.sender.migrated[old] = new
        self.memory.migrate(old, new)

    # -- the outbox: the wire for its rows, and the games' memory ---------------------------

    def game_blob(self, memo: GameMemo) -> bytes:
        """A game's memory as the outbox keeps it with each event: the memo and the offers made."""
        offers = {player: offer for (game, player), offer in self.memory.offers.items() if game == memo.game_id}
        return pickle.dumps((memo, offers), protocol=pickle.HIGHEST_PROTOCOL)

    async def stage(self, event_id: str, memo: GameMemo, messages: list) -> None:
        """An event's messages, committed with the mark that it is handled and the game's memory.
        Handled before (a redelivery): nothing is written and the drawing's changes are undone."""
        async with self._writing.setdefault(memo.game_id, asyncio.Lock()):
            blob = self.game_blob(memo)
            if await self.outbox.stage(event_id, memo.game_id, messages, blob):
                self._blobs[memo.game_id] = blob
                return
        self.forget_changes(memo.game_id)

    async def save_game(self, memo: GameMemo) -> None:
        """A game's memory changed by a player's update (the leader's picks), not by an event."""
        async with self._writing.setdefault(memo.game_id, asyncio.Lock()):
            blob = self.game_blob(memo)
            if blob != self._blobs.get(memo.game_id):
                await self.outbox.save_game(memo.game_id, blob)
                self._blobs[memo.game_id] = blob

    def forget_changes(self, game: str) -> None:
        """The game's memory as last committed: an event that failed to draw, or was drawn before,
        leaves no trace in it."""
        blob = self._blobs.get(game)
        if blob is None:  # nothing of it committed yet: drawn afresh from the event
            self._put_game(game, None, {})
        else:
            self._put_game(game, *pickle.loads(blob))  # noqa: S301 - our own

    def _put_game(self, game: str, memo: GameMemo | None, offers: dict) -> None:
        """A game's memo (None: forgotten) and the offers made in it, in place of what the memory had."""
        for key in [k for k in self.memory.offers if k[0] == game]:
            del self.memory.offers[key]
        if memo is None:
            self.memory.games.pop(game, None)
            return
        self.memory.games[game] = memo
        for player, offer in offers.items():
            self.memory.offers[(game, player)] = offer

    def _restore_games(self, blobs: dict) -> None:
        """Each game as last staged with an event or saved after an update. (A snapshot of the memory
        written before the games were kept apart holds them too: its own, where newer, stay.)"""
        snapshot_at = self.keeper.saved_at if self.keeper is not None else None
        for game, (blob, staged_at) in blobs.items():
            if snapshot_at is not None and staged_at <= snapshot_at and game in self.memory.games:
                continue
            try:
                memo, offers = pickle.loads(blob)  # noqa: S301 - our own rows
            except Exception:  # noqa: BLE001 - an unreadable row: the snapshot's memo stays
                log.exception("the saved memory of game %s could not be read", game)
                continue
            self._blobs[game] = blob
            self._put_game(game, memo, offers)
            if not memo.over:  # the group's open game (the most recently changed wins)
                self.memory.current[memo.chat_id] = game
            elif self.memory.current.get(memo.chat_id) == game:
                del self.memory.current[memo.chat_id]

    async def _deliver_row(self, row, slot_ref: str | None) -> str | None:
        from aiogram.types import InlineKeyboardMarkup

        from shared.delivery.outbox import Undeliverable

        body = row.body
        markup = InlineKeyboardMarkup.model_validate(body["markup"]) if body.get("markup") else None
        chat = self.sender.migrated.get(body["chat"], body["chat"])
        if body["op"] == "edit":
            message = int(slot_ref) if body.get("edit_slot") else body.get("edit_ref")
            if message is not None:  # (a message never sent has nothing to edit)
                await self.sender.edit(chat, message, body["text"], markup)
            return None
        sent = await self.sender.send(chat, body["text"], markup)
        if sent is None:
            raise Undeliverable(f"Telegram did not take the message for chat {chat} (see the log above)")
        return str(sent.message_id)

    async def _dead_row(self, row, error: str) -> None:
        """Tell the game's group that one of its messages is lost; when the group's own message is
        what failed, tell the host in private."""
        memo = self.memory.games.get(row.game_id)
        if memo is None:
            return
        if str(memo.chat_id) != row.recipient:
            self.sender.send_soon(memo.chat_id, self.ui(memo, None, "lost_message"))
        elif (host := ids.user_id(memo.host)) is not None:
            self.sender.send_soon(host, self.private_text(memo.host, self.ui(memo, memo.host, "lost_message"), memo))

    async def _failed(self, chat_id: int, text: str) -> None:
        log.error("could not deliver to %s after every retry: %r", chat_id, text[:200])
