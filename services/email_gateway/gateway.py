"""The email gateway: mail from players -> commands on the bus; events -> mail to each reader.

A channel on the delivery core: the email channel (``channel.EmailChannel``) draws each event for
its readers and sends mail over SMTP; the shared pipeline (``shared.delivery.pipeline``) folds the
event into the game's table, stages the fragments in the durable outbox with the game, and the
outbox sends what one batch of events brings a reader as one mail. Mail comes in through the IMAP
watcher; ``Inbound`` reads it. It never decides a rule."""

from __future__ import annotations

from typing import Any

from avalon.shared.bus import Bus
from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.games import GameBook
from avalon.shared.delivery.outbox import Outbox
from avalon.shared.delivery.pipeline import Pipeline
from avalon.shared.delivery.roster import Roster
from avalon.shared.narration.render import LOCALES
from avalon.shared.protocol import CommandEnvelope

from . import legacy
from .channel import PREFIX, EmailChannel, address_of
from .compose import Identity
from .inbound import Inbound, key_id
from .replies import Replies
from .store import MailStore
from .tokens import Tokens


class EmailGateway:
    def __init__(self, bus: Bus, engine, *, identity: Identity, tokens: Tokens, smtp, default_time_zone: str = "UTC",
                 languages: tuple[str, ...] = ("en",), linger: float = 1.0, attempts: int = 8,
                 first_delay: float = 1.0, max_delay: float = 300.0, throttle=None) -> None:
        self.bus = bus
        self.identity = identity
        self.tokens = tokens
        self.store = MailStore(engine)  # engine: the project's database (shared.db.make_engine)
        self.roster = Roster(PREFIX)
        self.channel = EmailChannel(identity, tokens, smtp, self.roster, languages=languages,
                                    default_time_zone=default_time_zone, on_failing=self._failing)
        self.outbox = Outbox(engine, self.channel.name, self.channel.deliver, deliver_merged=self.channel.deliver_mails,
                             linger=linger, attempts=attempts, first_delay=first_delay, max_delay=max_delay,
                             on_dead=self.channel.on_dead)
        self.book = GameBook(self.outbox, self.channel.own_part, upgrade=legacy.upgrade)
        self.pipeline = Pipeline(self.channel, self.book, self.roster)
        self.replies = Replies(self.outbox, self.roster, self.channel.links, self.book, languages=languages)
        self.inbound = Inbound(self, throttle)  # throttle: each sender's flood bucket (none: off)
        self.profiles: dict[str, bool] = {}  # players whose profile the engine has from us

    @property
    def games(self) -> dict[str, Game]:
        return self.book.games

    @property
    def sent(self) -> int:
        return self.channel.sent

    @property
    def smtp(self):
        return self.channel.smtp

    # -- start and stop -----------------------------------------------------------------------

    async def start(self) -> None:
        """Load the games, subscribe to the events (before the engine publishes), and send what the
        outbox kept from before a restart. Each game's events are handled one at a time, in order;
        different games' side by side (``by_game``), their commits grouped by the outbox's staging."""
        await self.book.load()
        self.channel.standby = await self.store.standby()
        for game in self.book.values():  # names: the newest game's last
            self.roster.people.update(game.table.seats.people)
        await self.bus.subscribe_events(self.channel.name, f"{self.channel.name}.#", self.pipeline.on_event,
                                      by_game=True)
        await self.outbox.start()

    async def close(self) -> None:
        await self.outbox.close()
        await self.smtp.close()

    async def on_mail(self, uid: int, raw: bytes) -> None:
        await self.inbound.on_mail(uid, raw)

    # -- commands -------------------------------------------------------------------------------

    async def send(self, envelope: CommandEnvelope) -> None:
        await self.bus.send_command(envelope)

    async def ensure_profile(self, player: str, mail, language: str | None, key: str) -> None:
        """Before a player's first command: their name (from their From header) and address, and
        the language they wrote in when the engine knows none, so every channel names them."""
        if self.profiles.get(player):
            return
        known = self.roster.people.get(player)
        body: dict[str, Any] = {"type": "update_profile", "email": address_of(player)}
        if not (known and known.display_name):
            body["display_name"] = (mail.sender_name or address_of(player).split("@")[0])[:64]
        if not (known and known.language) and language in LOCALES:
            body["language"] = language
        await self.send(CommandEnvelope(message_id=f"{key_id(key)}:p0", game_id=f"profile:{player}", actor=player,
                                        channel=self.channel.name, command=body))
        self.profiles[player] = True

    async def save_game(self, game: Game) -> None:
        await self.book.save(game)

    # -- the gateway's own mails ------------------------------------------------------------------

    async def say(self, address: str, game: Game | None, key: str, **kwargs) -> None:
        await self.replies.say(address, game, key, **kwargs)

    async def problem(self, game: Game | None, player: str, problem, mail) -> None:
        await self.replies.problem(game, player, problem, mail)

    async def offer_seat(self, game: Game, address: str, holder: str) -> None:
        await self.replies.offer_seat(game, address, holder)

    async def set_standby(self, host: str, add: list[str], remove: list[str]) -> tuple[str, ...]:
        """``host``'s standby list with ``add`` on it and ``remove`` off it: kept in the store, and by the
        channel that tells it of the host's new games and open seats."""
        if add:
            await self.store.add_standby(host, add)
        if remove:
            await self.store.remove_standby(host, remove)
        self.channel.standby = await self.store.standby()
        return self.channel.standby.get(host, ())

    async def tell_draft(self, game: Game, player: str) -> None:
        await self.replies.tell_draft(game, player)

    async def address_failing(self, player: str) -> None:
        await self.replies.address_failing(player)

    async def address_working(self, player: str) -> None:
        await self.replies.address_failing(player, "address_working")

    async def _failing(self, address: str, error: str) -> None:
        """A mail given up on: the address is marked failing and the game's host told."""
        if await self.store.mark_failing(address, error):
            await self.replies.address_failing(PREFIX + address)
