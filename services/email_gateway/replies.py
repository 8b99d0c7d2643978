"""The email gateway's own mails, which no event asks for: help, the rules, why a mail could not be
read, the leader's team draft, the host told that mail to a player is failing (or works again), a seat
offered to an address by the host, and the host's standby list.
Each goes through the outbox like any other mail (in the game's thread when it is about a game)."""

from __future__ import annotations

import logging

from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.outbox import Outbox, Outgoing
from avalon.shared.delivery.roster import Roster
from avalon.shared.game import MissedRule, Options
from avalon.shared.narration.render import LOCALES, RTL, Context, Narrator, Recipient, pick_locale

from . import links
from .notes import title_of
from .pages import game_body, subject_of
from .wording import link_body
from .words import REFUSALS, WARNING, email_words, problem_text

log = logging.getLogger(__name__)
PREFIX = "mail:"
NO_GAME = "-"  # the outbox's game for mail outside any game (an answer to a stranger)


class Replies:
    def __init__(self, outbox: Outbox, roster: Roster, mail_links: links.Links, games, *,
                 languages: tuple[str, ...] = ("en",)) -> None:
        self.outbox = outbox
        self.roster = roster
        self.links = mail_links
        self.games = games  # the gateway's GameBook
        self.languages = languages
        self.narrator = Narrator()

    def locale_of(self, player: str | None, hint: str | None = None) -> str:
        if player is not None:
            person = self.roster.people.get(player)
            if person and person.language in LOCALES:
                return person.language
        return pick_locale(((hint,) if hint else ()) + self.languages)

    async def say(self, address: str, game: Game | None, key: str, *, mail=None, language: str | None = None,
                  params: dict | None = None) -> None:
        """A mail of the gateway's own (help, rules, a refusal, an introduction) to ``address``."""
        player = PREFIX + address
        locale = self.locale_of(player, language) if key != "language_set" else pick_locale((language or "en",))
        if key == "rules":
            options = game.table.options if game and game.table.options else Options()
            rendered = self.narrator.render_template(locale, "rules.html", Recipient(player, (locale,)),
                                                     Context(self.roster.names()), options=options,
                                                     rules=list(MissedRule)[1:])
            html, text = rendered.html, rendered.text
        else:
            text = (WARNING if key in REFUSALS else "") + email_words(locale, key, **(params or {}))
            if key == "help":  # the people around the table: pauses, seats, spectators, the standby list
                text = f"{text.rstrip()}\n\n{email_words(locale, 'help_table')}"
            html = "<p>" + links.esc(text).replace("\n", "<br>") + "</p>"
        if game is not None and game.table.concerns(player):
            offer = game.table.offer(player)
            block = ("", "")
            if offer is not None and key not in ("help", "rules"):
                block_html, block_text = self.links.choices_block(game, locale, player, offer)
                still = email_words(locale, "choices_still_open")
                block = f"<p>{links.esc(still)}</p>{block_html}", f"{still}\n{block_text}"
            body = game_body(game, game.table.turn.phase_id, locale, subject_of(title_of(game), locale), html, text,
                             name=self.roster.names().get(player), block=block)
            await self.outbox.post(game.table.game_id, Outgoing(address, body), f"say:{key}")
            return
        subject = (mail.subject if mail is not None and mail.subject else "Avalon")
        subject = subject if subject.lower().startswith("re:") else f"Re: {subject}"
        body = {"kind": "plain", "game": None, "phase_id": None, "locale": locale, "rtl": locale in RTL,
                "subject": subject, "html": html, "text": text, "name": None,
                "in_reply_to": mail.message_id if mail is not None else None}
        await self.outbox.post(NO_GAME, Outgoing(address, body), f"say:{key}")

    async def problem(self, game: Game | None, player: str, problem, mail) -> None:
        locale = self.locale_of(player, problem.language)
        text = problem_text(self.roster, locale, problem)
        await self.say(player[len(PREFIX):], game, "_text", mail=mail, language=locale, params={"text": text})

    async def offer_seat(self, game: Game, address: str, holder: str) -> None:
        """The host offers ``holder``'s seat to ``address``: a mail in the game's thread (its reply token is
        the address's), answered with "take"."""
        player = PREFIX + address
        locale = self.locale_of(player)
        names = self.roster.names()
        host = game.table.seats.host
        line = email_words(locale, "seat_offer", host=names.get(host) or host.split(":", 1)[-1],
                           name=names.get(holder) or holder.split(":", 1)[-1], code=title_of(game))
        body = game_body(game, game.table.turn.phase_id, locale, subject_of(title_of(game), locale),
                         f"<p>{links.esc(line)}</p>", line, name=names.get(player),
                         block=self.links.typed_block(locale, link_body(locale, "take")))
        await self.outbox.post(game.table.game_id, Outgoing(address, body), "offer")

    async def tell_draft(self, game: Game, player: str) -> None:
        locale = self.locale_of(player)
        (html, text), block = self.links.draft_block(game, locale, player)
        body = game_body(game, game.table.turn.phase_id, locale, subject_of(title_of(game), locale), html, text,
                         name=self.roster.names().get(player), block=block, part="draft")
        await self.outbox.post(game.table.game_id, Outgoing(player[len(PREFIX):], body), "draft")

    async def address_failing(self, player: str, key: str = "address_failing") -> None:
        """Mail to ``player`` bounces (``address_working``: works again, its owner wrote): the host of
        each of their open games is told (by mail, when the host plays by mail; the log says it in any case)."""
        address = player[len(PREFIX):]
        name = self.roster.names().get(player, address)
        for game in list(self.games.values()):
            table = game.table
            if table.over or player not in table.seats.players + table.seats.invited:
                continue
            log.log(logging.WARNING if key == "address_failing" else logging.INFO, "mail to %s (game %s) is %s",
                    address, table.game_id, "failing" if key == "address_failing" else "working again")
            host = table.seats.host
            if host.startswith(PREFIX) and host != player:
                await self.say(host[len(PREFIX):], game, key, params={"name": name, "address": address})
