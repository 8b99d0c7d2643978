"""Helpers of the impersonation tests: a table of five on both channels and lobbies of their own,
the sentence a refusal reads in a reader's language, what a game's log looks like (to show an
attempt changed nothing), waiting for what a player is shown, and a tally of the attempts made."""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter

from sqlalchemy import select

from avalon.services.email_gateway.rows import SeenMailRow
from avalon.services.email_gateway.words import email_words
from avalon.services.engine.rules import Options, Preset
from avalon.shared.game.events import Audience
from avalon.shared.narration.render import Context, Narrator, Recipient
from avalon.shared.protocol import CommandRejected, EventEnvelope, audience_model, utcnow

from .mixed_support import flat
from .secrets_spec import GameSpec, Seat
from .secrets_table import Table

#: Ann hosts on Telegram; Bob and Cleo on Telegram, Mira and Olaf by mail; each in their own language.
TABLE = [("Annzz", "telegram", "en"), ("Bobzz", "telegram", "fr"), ("Cleozz", "telegram", "ru"),
         ("Mirazz", "email", "nl"), ("Olafzz", "email", "fa")]


def five(index: int = 90, seats=TABLE) -> GameSpec:
    spec = GameSpec(index, 0, Preset.CLASSIC, [Seat(name, channel, language, tg_id=900_000 + index * 10 + i)
                                               for i, (name, channel, language) in enumerate(seats)])
    spec.options = Options()
    return spec


def refusal(locale: str, reason: str, channel: str = "telegram", **params) -> str:
    """The engine's refusal ``reason`` as a reader in ``locale`` reads it (a private message or mail)."""
    body = CommandRejected(command_type=None, reason=reason, params=params, message="")
    envelope = EventEnvelope(message_id="m", game_id="g", seq=0, occurred_at=utcnow(),
                             audience=audience_model(Audience.to("x")), event=body)
    text = Narrator().render_in(locale, envelope, Recipient("x", (locale,)), channel, Context()).text
    return flat(text.replace("⚠️", ""))


def mail_refusal(locale: str, key: str) -> str:
    """One of the email gateway's own refusals (``not_your_token``...) in ``locale``."""
    return flat(email_words(locale, key))


async def log_of(stack, game: str) -> list[tuple[int, str]]:
    return [(e.seq, e.event.type) for e in await stack.store.event_log(game, include_internal=True)]


async def eventually(predicate, what: str, timeout: float = 30.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        await asyncio.sleep(0.1)


class Attempts(Counter):
    """How many attempts of each kind a test made (printed with the test's output)."""

    def report(self, title: str) -> None:
        print(f"{title}: {sum(self.values())} attempts, all refused or acting as the sender only")
        for kind, count in sorted(self.items()):
            print(f"  {count:3d}  {kind}")


async def answer_to(fake, query: dict):
    """The bot's answer (alert) to one button press."""
    return await eventually(lambda: next((a for a in fake.callback_answers if a.query_id == query["id"]), None),
                            f"an answer to the button {query['data']!r}", 15)


async def mailed(stack, address: str, sentence: str, what: str):
    """A mail to ``address`` that says ``sentence``."""
    return await eventually(lambda: next((m for m in stack.mails(address) if sentence in flat(m.text)), None),
                            what, 20)


# -- a table, lobbies, and waiting for what a player sees ------------------------------------------

async def state_of(stack, game: str):
    loaded = await stack.store.load(game)
    return loaded.state if loaded is not None else None


async def open_table(stack) -> Table:
    table = Table(stack, five())
    await table.open(lambda game: state_of(stack, game))
    return table


async def move(table: Table, player: str, what: tuple, phase: str) -> None:
    """``player`` makes ``what`` through their own channel once the game is in ``phase``."""
    for _ in range(300):
        s = await state_of(table.stack, table.game)
        if s.phase.value == phase and await table.make(s, player, what):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{table.names[player]} could not make {what} in {phase}")


async def settle(stack) -> None:
    await stack.fake.wait_delivered()
    await asyncio.sleep(1.0)
    await stack.idle(30)


async def outcome(stack, message_id: str) -> str:
    async with stack.store.engine.connect() as conn:
        row = (await conn.execute(select(SeenMailRow.outcome).where(
            SeenMailRow.message_id == message_id.strip("<>")))).first()
    return row[0] if row else ""


def forward(fake, user, chat, text: str, origin) -> None:
    """``user`` forwards to ``chat`` a message ``origin`` wrote (Telegram says who wrote it first)."""
    entities = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}] if text.startswith("/") else []
    fake._enqueue("message", {"message_id": 70_000 + len(fake.updates_log), "date": 1, "chat": chat.json(),
                              "from": user.json(), "text": text, "entities": entities,
                              "forward_origin": {"type": "user", "date": 1, "sender_user": origin.json()}})


async def lobby(stack, index: int, host_name: str, language: str, others=()):
    """A Telegram group's lobby: (group, host, the other users, who joined, game id, the lobby message)."""
    fake = stack.fake
    host = fake.user(950_000 + index * 10, host_name, language_code=language)
    users = [fake.user(950_000 + index * 10 + 1 + i, name, language_code=lang) for i, (name, lang) in enumerate(others)]
    group = fake.group(-(300_000 + index), f"Lobby {index}", members=[host, *users])
    for user in (host, *users):
        await user.start_private()
    await host.send(group, "/newgame")
    opened = await fake.wait_for_message(group, timeout=20,
                                         where=lambda m: any(d.startswith("j:") for d in m.callback_data))
    game = opened.callback_data[0].split(":", 1)[1]
    for user in users:
        await user.press(opened, f"j:{game}")
    return group, host, users, game, opened


async def wait_phase(stack, game: str, phase: str):
    async def opened():
        s = await state_of(stack, game)
        return s if s.phase.value == phase else None
    return await eventually(opened, f"the {phase} of {game}")


async def mail_of(table: Table, player: str, phase: int):
    """The newest mail of ``phase`` to a mail player of ``table``."""
    found = await eventually(lambda: table.mail._mails(table.game, player, phase), f"{player}'s mail of phase {phase}")
    return found[-1]


async def eventually_mail(stack, address: str, game: str):
    """The newest mail to ``address`` about ``game`` (a game's mails carry its id in their Message-ID)."""
    found = await eventually(lambda: [m for m in stack.mails(address) if game in m.message_id], f"mail of {game}")
    return found[-1]


async def eventually_count(fake, chat, sentence: str, n: int) -> None:
    """(Announcements waiting for one chat may go out as one message: the sentences are counted.)"""
    await eventually(lambda: sum(flat(m.text).count(sentence) for m in fake.messages(chat)) >= n,
                     f"{n} messages saying {sentence!r} in {chat}")


async def players_are(stack, game: str, n: int) -> bool:
    s = await state_of(stack, game)
    return s is not None and len(s.players) == n


async def eventually_count_mail(stack, address: str, sentence: str, n: int) -> None:
    """(A reader's answers of one moment come as one mail: the sentences are counted, not the mails.)"""
    await eventually(lambda: sum(flat(x.text).count(sentence) for x in stack.mails(address)) >= n,
                     f"{n} answers to {address} saying {sentence!r}")
