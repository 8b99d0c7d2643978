"""Support for a game played across channels: the narrator as ``avalon run`` starts it with both
channels (engine, Telegram gateway against the fake Bot API, email gateway against the loopback
mail servers, one in-process bus, one SQLite database), scripted Telegram users who press what the
bot shows them, scripted mail players who type their answers in their own language, and what each
reader was told (the group, a Telegram private chat, a mailbox) as plain text."""

from __future__ import annotations

import asyncio
import random
import re
from email.message import EmailMessage

from aiogram.client.default import DefaultBotProperties

from avalon.services.email_gateway.wording import Intent, link_body, parse
from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.telegram_gateway.gateway import TelegramGateway
from avalon.services.telegram_gateway.sender import Limits
from tests.e2e.email_support import MailPlayer, Narrator, wait_until  # noqa: F401 - used by the mixed test

FAST = Limits(per_chat_interval=0.0, group_per_minute=10**6, global_per_second=10**6)


class MixedNarrator(Narrator):
    """The engine and both gateways in one process on one bus and one database; the channels
    subscribe before the engine publishes, as ``avalon run`` starts them."""

    def __init__(self, servers, fake, database_url: str) -> None:
        super().__init__(servers, database_url)
        self.fake = fake

    async def start(self) -> None:
        from avalon.services.engine.store import Store
        from avalon.shared.bus import InProcessBus

        self.store = Store(self.url)
        await self.store.migrate()
        self.bus = InProcessBus()
        await self.bus.start()
        await start_telegram(self)
        await self.start_gateway()
        self.engine = EngineService(self.store, self.bus, DeadlineScheduler(self.bus), channels=channel_map())
        await self.engine.start()

    async def stop(self) -> None:
        await stop_telegram(self)
        await super().stop()


async def start_telegram(narrator) -> None:
    """The Telegram gateway of ``narrator`` (its ``fake``, ``bus`` and ``url``), polling the fake Bot API."""
    narrator.bot = narrator.fake.make_bot(default=DefaultBotProperties(parse_mode="HTML"))
    narrator.telegram = TelegramGateway(narrator.bot, narrator.bus, limits=FAST, database_url=narrator.url)
    await narrator.telegram.start()
    narrator.dispatcher = narrator.telegram.dispatcher()
    narrator.poller = narrator.telegram.poller(narrator.dispatcher, timeout=1)
    narrator.poller.start()


async def stop_telegram(narrator) -> None:
    await narrator.poller.stop()
    await narrator.telegram.close()
    await narrator.bot.session.close()


class TypedMailPlayer(MailPlayer):
    """A mail player who types each command in their own language when replying (a click sends
    the link as it is)."""

    async def answer(self, message, body, url=None):
        if self.mode != "click" or url is None:
            players, seats = self.table() if self.table else ({}, ())
            intent = parse(body, players, seats)
            if isinstance(intent, Intent):
                body = link_body(self.language, intent.kind, [players[t] for t in intent.targets], intent.phase_id)
        await super().answer(message, body, url)


def mail_text(message: EmailMessage) -> str:
    """What a reader sees of a mail: its plain-text part."""
    part = message.get_body(("plain",))
    return part.get_content() if part is not None else ""


def flat(text: str) -> str:
    """Text with its whitespace runs as one space and the right-to-left isolates dropped: the
    same words whichever channel wrapped them."""
    return re.sub(r"\s+", " ", text.replace("\u2068", "").replace("\u2069", "")).strip()


def said(fake, chat) -> list[str]:
    """Every text the bot showed in a chat, earlier versions of edited messages included."""
    out = []
    for message in fake.messages(chat):
        out.extend(text for text, _markup in message.history)
        out.append(message.text)
    return out


class TelegramTable:
    """Telegram users at one group's game, pressing what the bot shows them: the leader picks a
    random team and confirms it, everyone approves three times in four, every private choice of
    the game takes a random button of the first kind offered."""

    def __init__(self, fake, group, users, rng: random.Random) -> None:
        self.fake, self.group, self.users, self.rng = fake, group, users, rng
        self.by_name = {u.first_name: u for u in users}
        self.acted: set[tuple] = set()
        self.presses: dict[str, int] = {u.first_name: 0 for u in users}

    async def press(self, user, message, data: str) -> None:
        await user.press(message, data)
        self.presses[user.first_name] += 1

    async def step(self, game: str) -> None:
        for message in self.fake.messages(self.group):
            data = [d for d in message.callback_data if d.split(":")[1:2] == [game]]
            key = (self.group.id, message.message_id, (message.text if data and data[0].startswith("p:") else "")
                   + ",".join(data))
            if not data or key in self.acted:
                continue
            self.acted.add(key)
            if data[0].startswith("p:"):  # the team picker of a Telegram leader, pressed again after each edit
                leader = self.by_name.get(re.match(r"👑 (\w+):", message.text).group(1))
                if leader is None:
                    continue
                size = int(re.search(r"pick (\d+)", message.text).group(1))
                picked = int(re.search(r"(\d+) selected", message.text).group(1))
                seats = [b for b in message.buttons if not b["callback_data"].endswith(":-1")]
                free = [b["callback_data"] for b in seats if not b["text"].startswith("✅")]
                await self.press(leader, message, self.rng.choice(free) if picked < size else data[-1])
            elif data[0].startswith("v:"):
                for user in self.users:
                    approve = self.rng.random() < 0.75
                    await self.press(user, message, data[0] if approve else data[-1])
        for user in self.users:
            for message in self.fake.messages(user.private_chat):
                data = [d for d in message.callback_data if d.split(":")[1:2] == [game]]
                key = (user.id, message.message_id, ",".join(data))
                if data and key not in self.acted:
                    self.acted.add(key)
                    await self.press(user, message, self.rng.choice(data))


def refusal_words(reason: str, by: str, names: dict[str, str], reader: str, language: str, channel: str) -> str:
    """The first line of the engine's refusal ``reason`` (``by``: who took the seat) as ``reader`` reads it,
    flattened."""
    from avalon.shared.narration.render import Context, Narrator as Narration, Recipient
    from avalon.shared.protocol import AudienceKind, AudienceModel, CommandRejected, EventEnvelope, utcnow

    envelope = EventEnvelope(message_id="x", game_id="g", seq=0, occurred_at=utcnow(),
                             audience=AudienceModel(kind=AudienceKind.PLAYERS, players=(reader,)),
                             event=CommandRejected(command_type="cast_vote", reason=reason, params={"player": by},
                                                   message=reason))
    text = Narration().render(envelope, Recipient(reader, (language,)), channel, Context(names, {"title": "g"})).text
    return flat(text.strip().split("\n")[0])
