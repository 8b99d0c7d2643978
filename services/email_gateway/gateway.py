"""The email gateway: mail from players -> commands on the bus; events -> mail to each reader.

A channel on the delivery core: the roster says who reads each event, the painter renders it in
the reader's language and time zone and stages it in the durable outbox with the game's memory,
and the outbox sends what one batch of events brings a reader as one mail, through SMTP. Mail
comes in through the IMAP watcher; ``Inbound`` reads it. It never decides a rule."""

from __future__ import annotations

import logging
from typing import Any

from markupsafe import Markup

from shared.bus import Bus
from shared.delivery.outbox import Outbox, Outgoing, Unavailable, Undeliverable
from shared.delivery.roster import Roster
from shared.narration.render import LOCALES, RTL, Context, Narrator, Recipient, environment, pick_locale
from shared.protocol import CommandEnvelope

from . import links
from .compose import Identity, build_mail
from .inbound import Inbound
from .notes import MailGame
from .channel import PREFIX, Painter, address_of
from .smtp import PermanentFailure, server_down
from .store import MailStore
from .tokens import Tokens
from .words import email_words, problem_text

log = logging.getLogger(__name__)
CHANNEL = "email"
NO_GAME = "-"  # the outbox's game for mail outside any game (an answer to a stranger)


class EmailGateway:
    def __init__(self, bus: Bus, engine, *, identity: Identity, tokens: Tokens, smtp, default_time_zone: str = "UTC",
                 languages: tuple[str, ...] = ("en",), linger: float = 1.0, attempts: int = 8,
                 first_delay: float = 1.0, max_delay: float = 300.0, throttle=None) -> None:
        self.bus = bus
        self.engine = engine  # the project's database (shared.db.make_engine)
        self.identity = identity
        self.tokens = tokens
        self.smtp = smtp
        self.default_time_zone = default_time_zone
        self.fallback_languages = languages
        self.narrator = Narrator()
        self.roster = Roster(PREFIX)
        self.store = MailStore(engine)
        self.games: dict[str, MailGame] = {}
        self.profiles: dict[str, bool] = {}  # players whose profile the engine has from us
        self.painter = Painter(self)
        self.inbound = Inbound(self, throttle)  # throttle: each sender's flood bucket (none: off)
        self.outbox = Outbox(engine, CHANNEL, self._deliver_one, deliver_merged=self.deliver_mails, linger=linger,
                             attempts=attempts, first_delay=first_delay, max_delay=max_delay,
                             on_dead=self._dead_row)
        self.sent = 0  # mails handed to SMTP (the benchmark reads it)

    # -- start and stop -----------------------------------------------------------------------

    async def start(self) -> None:
        """Load the games' memory, subscribe to the events (before the engine publishes), and send
        what the outbox kept from before a restart."""
        for game_id, (blob, _at) in (await self.outbox.games()).items():
            try:
                self.games[game_id] = MailGame.load(blob)
            except Exception:  # noqa: BLE001 - an unreadable row: that game is rebuilt from its next events
                log.exception("the saved memory of game %s could not be read", game_id)
                continue
            self.roster.people.update(self.games[game_id].people)  # names: the newest game's last
        await self.bus.subscribe_events(CHANNEL, f"{CHANNEL}.#", self.painter.on_event)
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
        from .inbound import key_id

        await self.send(CommandEnvelope(message_id=f"{key_id(key)}:p0", game_id=f"profile:{player}", actor=player,
                                        channel=CHANNEL, command=body))
        self.profiles[player] = True

    async def save_game(self, game: MailGame) -> None:
        await self.outbox.save_game(game.game_id, game.blob())

    # -- words ----------------------------------------------------------------------------------

    def locale_of(self, player: str | None, hint: str | None = None) -> str:
        if player is not None:
            person = self.roster.people.get(player)
            if person and person.language in LOCALES:
                return person.language
        return pick_locale(((hint,) if hint else ()) + self.fallback_languages)

    def words(self, locale: str, key: str, **params: Any) -> str:
        return email_words(locale, key, **params)

    async def say(self, address: str, game: MailGame | None, key: str, *, mail=None, language: str | None = None,
                  params: dict | None = None) -> None:
        """A mail of the gateway's own (help, rules, a refusal, an introduction) to ``address``."""
        player = PREFIX + address
        locale = self.locale_of(player, language) if key != "language_set" else pick_locale((language or "en",))
        if key == "rules":
            from shared.game import Options
            from shared.game.model import MissedRule

            options = game.options if game and game.options else Options()
            rendered = self.narrator.render_template(locale, "rules.html", Recipient(player, (locale,)),
                                                     Context(self.roster.names()), options=options,
                                                     rules=list(MissedRule)[1:])
            html, text = rendered.html, rendered.text
        else:
            text = self.words(locale, key, **(params or {}))
            html = "<p>" + links.esc(text).replace("\n", "<br>") + "</p>"
        if game is not None and player in game.players + game.invited + [game.host]:
            offer = game.offer(player)
            if offer is not None and key not in ("help", "rules"):
                block_html, block_text = links.choices_block(self, game, locale, player, offer)
                still = self.words(locale, "choices_still_open")
                html, text = f"{html}<p>{links.esc(still)}</p>{block_html}", f"{text}\n\n{still}\n{block_text}"
            body = self.painter.body(game, game.phase_id, locale, self.painter.subject(game, locale),
                                     html, text, name=self.roster.names().get(player))
            await self.outbox.post(game.game_id, Outgoing(address, body), f"say:{key}")
            return
        subject = (mail.subject if mail is not None and mail.subject else "Avalon")
        subject = subject if subject.lower().startswith("re:") else f"Re: {subject}"
        body = {"kind": "plain", "game": None, "phase_id": None, "locale": locale, "rtl": locale in RTL,
                "subject": subject, "html": html, "text": text, "name": None,
                "in_reply_to": mail.message_id if mail is not None else None}
        await self.outbox.post(NO_GAME, Outgoing(address, body), f"say:{key}")

    async def problem(self, game: MailGame | None, player: str, problem, mail) -> None:
        locale = self.locale_of(player, problem.language)
        text = problem_text(self, locale, problem)
        await self.say(address_of(player), game, "_text", mail=mail, language=locale, params={"text": text})

    async def tell_draft(self, game: MailGame, player: str) -> None:
        locale = self.locale_of(player)
        html, text = links.draft_block(self, game, locale, player)
        body = self.painter.body(game, game.phase_id, locale, self.painter.subject(game, locale),
                                 html, text, name=self.roster.names().get(player))
        await self.outbox.post(game.game_id, Outgoing(address_of(player), body), "draft")

    async def address_failing(self, player: str) -> None:
        """Mail to ``player`` bounces: the host of each of their open games is told (by mail, when
        the host plays by mail; the log says it in any case)."""
        name = self.roster.names().get(player, address_of(player))
        for game in self.games.values():
            if game.over or player not in game.players + game.invited:
                continue
            log.warning("mail to %s (game %s) is failing", address_of(player), game.game_id)
            if game.host.startswith(PREFIX) and game.host != player:
                await self.say(address_of(game.host), game, "address_failing",
                               params={"name": name, "address": address_of(player)})

    # -- the wire ---------------------------------------------------------------------------------

    async def _deliver_one(self, row, slot_ref):  # the outbox always merges for this channel
        await self.deliver_mails([row])

    async def deliver_mails(self, rows) -> None:
        """A reader's waiting fragments of one game, as one mail."""
        first = rows[0].body
        locale = first.get("locale", "en")
        rtl = bool(first.get("rtl"))
        game_id = first.get("game")
        address = rows[0].recipient
        texts = [r.body.get("text", "") for r in rows if r.body.get("text")]
        htmls = [r.body.get("html", "") for r in rows if r.body.get("html")]
        footer = self.words(locale, "footer")
        text = "\n\n".join(texts) + f"\n\n-- \n{footer}\n"
        fragment = "\n<hr>\n".join(htmls) + f'\n<hr>\n<p style="color:#777">{links.esc(footer)}</p>'
        env = environment(locale)
        page = env.get_template("email/_page.html").render(body=Markup(fragment), subject=first["subject"],
                                                           locale=locale, rtl=rtl)
        phase_ids = [r.body.get("phase_id") for r in rows if isinstance(r.body.get("phase_id"), int)]
        token = self.tokens.make(game_id, address) if game_id else None
        extra = {}
        if first.get("in_reply_to"):
            extra = {"In-Reply-To": f"<{first['in_reply_to']}>", "References": f"<{first['in_reply_to']}>"}
        message = build_mail(self.identity, to=address, to_name=first.get("name"), subject=first["subject"],
                             text=text, html=page, token=token, game_id=game_id,
                             phase_id=phase_ids[-1] if phase_ids else None, locale=locale, rtl=rtl,
                             extra_headers=extra or None)
        try:
            await self.smtp.send(message)
        except PermanentFailure as refused:
            raise Undeliverable(f"the SMTP server refused mail to {address}: {refused}") from None
        except Exception as error:
            if server_down(error):  # the mail waits in the outbox until the server is back
                raise Unavailable(f"{type(error).__name__}: {error}") from error
            raise
        self.sent += 1

    async def _dead_row(self, row, error: str) -> None:
        """A mail given up on: the address is marked failing and the game's host told."""
        if row.game_id == NO_GAME or not row.recipient:
            return
        if await self.store.mark_failing(row.recipient, error):
            await self.address_failing(PREFIX + row.recipient)
