"""The email channel on the delivery core (``shared.delivery.channel``): its address scheme
(``mail:<address>``), how it draws an event for its readers (one fragment per reader, in their
language and time zone, with the links of what they may do now), and its wire (a reader's waiting
fragments of one game sent as one mail over SMTP).

By mail, "X has voted" and "X played a card" are no mail of their own; a reminder goes only to
those who still have to act; a command sent by mail is confirmed by a receipt with the first event
it causes (unless that event already tells the player privately).

A host's standby list (``standby``: host id -> addresses) is told of the host's new game
(``lobby_opened``: reply "join") and of a seat opened in one of the host's games (``seat_opened``:
reply "take"; the seat is then offered to that address, ``MailNotes.offers``)."""

from __future__ import annotations

from typing import Awaitable, Callable

from markupsafe import Markup

from avalon.shared.delivery.channel import TALLIES, Game
from avalon.shared.delivery.outbox import Outgoing, Row, Unavailable, Undeliverable
from avalon.shared.delivery.photos import Photos, decode, encode
from avalon.shared.delivery.roster import Reader, Roster
from avalon.shared.narration.render import Context, Narrator, Recipient, environment, pick_locale
from avalon.shared.protocol import EventEnvelope

from . import links
from .compose import Identity, build_mail, picture_id, with_pictures
from .notes import MailNotes, Pending, title_of
from .pages import footer_key, game_body, merged, subject_of
from .smtp import PermanentFailure, server_down
from .tokens import Tokens
from .wording import link_body
from .words import email_words

#: Shown in the group on Telegram; by mail they would be a mail each for nothing (a profile change
#: is confirmed by the gateway's own answer to the mail that asked for it).
QUIET = TALLIES | {"profile_updated"}
SCHEME = "mail"
PREFIX = SCHEME + ":"
NO_GAME = "-"  # the outbox's game for mail outside any game (an answer to a stranger)


def address_of(player: str) -> str:
    return player[len(PREFIX):]


class EmailChannel:
    name = "email"
    scheme = SCHEME
    has_group = False

    def __init__(self, identity: Identity, tokens: Tokens, smtp, roster: Roster, *,
                 languages: tuple[str, ...] = ("en",), default_time_zone: str = "UTC",
                 on_failing: Callable[[str, str], Awaitable[None]] | None = None, photos: Photos | None = None) -> None:
        self.identity = identity
        self.tokens = tokens
        self.smtp = smtp
        self.roster = roster
        self.links = links.Links(identity, tokens, roster)
        self.narrator = Narrator()
        self.languages = languages  # whom the engine knows no language of reads these
        self.default_time_zone = default_time_zone
        self.on_failing = on_failing  # (address, error): mail to it is given up on
        self.sent = 0  # mails handed to SMTP (the benchmark reads it)
        self.photos = photos or Photos()  # the board's and the end's pictures, drawn once per language
        self.standby: dict[str, tuple[str, ...]] = {}  # each host's standby list (the gateway's store keeps it)

    # -- the delivery core's questions ---------------------------------------------------------

    def own_part(self, game_id: str) -> MailNotes:
        return MailNotes(title=game_id)

    def group_languages(self, game: Game) -> tuple[str, ...]:
        return self.languages

    def draw(self, game: Game, envelope: EventEnvelope, readers: list[Reader]) -> list[Outgoing]:
        out: list[Outgoing] = []
        e = envelope.event
        notes: MailNotes = game.own
        receipt = notes.pending.pop(envelope.caused_by, None) if envelope.caused_by else None
        if receipt is not None and e.type != "command_rejected" and receipt.player.startswith(PREFIX):
            told_privately = envelope.audience.kind.value == "players" and envelope.audience.players == (receipt.player,)
            if not told_privately:
                out.append(self.receipt(game, receipt))
        for reader in self._readers(envelope, readers):
            out.append(self.fragment(game, envelope, reader))
        self._seats(notes, e)
        if e.type in ("lobby_opened", "seat_opened"):
            out += self.tell_standby(game, envelope, {r.player for r in readers})
        return out

    @staticmethod
    def _seats(notes: MailNotes, e) -> None:
        """The seats open for a substitute, as the table's events say."""
        if e.type == "seat_opened" and e.player not in notes.open_seats:
            notes.open_seats = (*notes.open_seats, e.player)
        elif e.type == "seat_taken":
            notes.open_seats = tuple(p for p in notes.open_seats if p != e.previous)
            notes.offers = tuple((to, holder) for to, holder in notes.offers if holder != e.previous)
        elif e.type == "player_invited" and e.seat and e.player.startswith(PREFIX):
            # a host of another channel offers an open seat to this address (the engine checked it is open)
            if e.seat not in notes.open_seats:
                notes.open_seats = (*notes.open_seats, e.seat)
            notes.offer(e.player[len(PREFIX):], e.seat)

    def tell_standby(self, game: Game, envelope: EventEnvelope, readers: set[str]) -> list[Outgoing]:
        """The host's standby list told of a new game (reply "join") or of an open seat (reply "take"):
        each address not at the table already, in its language, in the game's thread (its reply token)."""
        e = envelope.event
        table = game.table
        host = e.host if e.type == "lobby_opened" else table.seats.host
        out = []
        for address in self.standby.get(host, ()):
            player = PREFIX + address
            if player == host or player in readers or player in table.seats.players or player in table.spectators:
                continue
            locale = pick_locale(self.roster.reader(player, self.languages).languages)
            names = self.roster.names()
            params = {"host": names.get(host) or address_of(host), "code": title_of(game)}
            if e.type == "lobby_opened":
                line = email_words(locale, "standby_lobby", **params)
                block = self.links.join_block(game, locale, player)
            else:
                game.own.offer(address, e.player)
                line = email_words(locale, "standby_seat", name=names.get(e.player) or e.player.split(":", 1)[-1],
                                   **params)
                block = self.links.typed_block(locale, link_body(locale, "take"))
            subject = subject_of(title_of(game), locale)
            html = f"<p>{links.esc(line)}</p>"
            out.append(Outgoing(address, game_body(game, table.turn.phase_id, locale, subject, html, line,
                                                   name=names.get(player), block=block)))
        return out

    def _readers(self, envelope: EventEnvelope, readers: list[Reader]) -> list[Reader]:
        e = envelope.event
        if e.type in QUIET:
            return []
        if e.type == "phase_reminder":  # only those who still have to act
            waiting = set(e.waiting_for)
            return [r for r in readers if r.player in waiting]
        if e.type == "choices_offered":
            return [r for r in readers if r.player == e.player] if e.choices else []
        return readers

    async def on_dead(self, row: Row, error: str) -> None:
        """A mail given up on: its address is marked failing and the hosts told (``on_failing``)."""
        if row.game_id != NO_GAME and row.recipient and self.on_failing is not None:
            await self.on_failing(row.recipient, error)

    async def on_lost(self, game: Game, envelope: EventEnvelope, error: Exception) -> None:
        """Nothing more to say by mail: the dead row is logged and counted."""

    # -- drawing ---------------------------------------------------------------------------------

    def recipient(self, reader: Reader) -> Recipient:
        zone = reader.time_zone or self.default_time_zone
        return Recipient(reader.player, reader.languages, None if zone == "UTC" else zone)  # None: "... UTC"

    def fragment(self, game: Game, envelope: EventEnvelope, reader: Reader) -> Outgoing:
        names = self.roster.names()
        rendered = self.narrator.render(envelope, self.recipient(reader), "email",
                                        Context(names, {"title": title_of(game)}))
        locale = rendered.locale
        html, text = rendered.html, rendered.text
        e = envelope.event
        if e.type == "lobby_opened" and reader.player == e.host:  # the new game's code, for its host
            line = email_words(locale, "game_created", code=title_of(game))
            html, text = f"{html}\n<p>{links.esc(line)}</p>", f"{text}\n\n{line}"
        block = self._block(game, envelope, reader, locale)
        phase_id = getattr(envelope.event, "phase_id", None)
        phase_id = phase_id if isinstance(phase_id, int) else game.table.turn.phase_id
        png = self.photos.of(game.table, envelope, names, locale)
        if png is not None:  # shown inline under the words (the text part says the same: alt="")
            html = f'{html}\n<p><img src="cid:{picture_id(self.identity, png)}" alt=""></p>'
        body = game_body(game, phase_id, locale, rendered.subject, html, text, name=names.get(reader.player),
                         block=block)
        if png is not None:
            body["picture"] = encode(png)
        return Outgoing(address_of(reader.player), body)

    def _block(self, game: Game, envelope: EventEnvelope, reader: Reader, locale: str) -> tuple[str, str]:
        """What a reader may do now, under the event's own words: their choices' links, an invitation's
        join link (a mail shows only its newest fragment's)."""
        e = envelope.event
        if e.type == "choices_offered":
            return self.links.choices_block(game, locale, reader.player, e)
        if e.type == "command_rejected":
            offer = game.table.offer(reader.player)
            if offer is not None:
                block_html, block_text = self.links.choices_block(game, locale, reader.player, offer)
                still = email_words(locale, "choices_still_open")
                return f"<p>{still}</p>{block_html}", f"{still}\n{block_text}"
        elif e.type == "player_invited" and reader.player == e.player:
            if e.seat:  # an open seat: taken by replying "take"
                return self.links.typed_block(locale, link_body(locale, "take"))
            return self.links.join_block(game, locale, reader.player)
        return "", ""

    def receipt(self, game: Game, pending: Pending) -> Outgoing:
        reader = self.roster.reader(pending.player, self.languages)
        locale = pick_locale(reader.languages)
        what = email_words(locale, pending.what, names=pending.names, text=pending.text)
        line = email_words(locale, "receipt", what=what)
        return Outgoing(address_of(pending.player), game_body(
            game, game.table.turn.phase_id, locale, subject_of(title_of(game), locale), f"<p>{links.esc(line)}</p>",
            line, name=self.roster.names().get(pending.player)))

    # -- the wire ----------------------------------------------------------------------------------

    async def deliver(self, row: Row, slot_ref: str | None) -> None:  # the outbox always merges for mail
        await self.deliver_mails([row])

    async def deliver_mails(self, rows: list[Row]) -> None:
        """A reader's waiting fragments of one game, as one mail."""
        first = rows[0].body
        locale = first.get("locale", "en")
        rtl = bool(first.get("rtl"))
        game_id = first.get("game")
        address = rows[0].recipient
        texts, htmls = merged([r.body for r in rows])
        footer = email_words(locale, footer_key(rows[-1].body))
        text = "\n\n".join(texts) + f"\n\n-- \n{footer}\n"
        fragment = "\n<hr>\n".join(htmls) + f'\n<hr>\n<p style="color:#777">{links.esc(footer)}</p>'
        page = environment(locale).get_template("email/_page.html").render(
            body=Markup(fragment), subject=first["subject"], locale=locale, rtl=rtl)
        phase_ids = [r.body.get("phase_id") for r in rows if isinstance(r.body.get("phase_id"), int)]
        token = self.tokens.make(game_id, address) if game_id else None
        extra = {}
        if first.get("in_reply_to"):
            extra = {"In-Reply-To": f"<{first['in_reply_to']}>", "References": f"<{first['in_reply_to']}>"}
        message = build_mail(self.identity, to=address, to_name=first.get("name"), subject=first["subject"],
                             text=text, html=page, token=token, game_id=game_id,
                             phase_id=phase_ids[-1] if phase_ids else None, locale=locale, rtl=rtl,
                             extra_headers=extra or None)
        with_pictures(message, self.identity, [decode(r.body["picture"]) for r in rows if r.body.get("picture")])
        try:
            await self.smtp.send(message)
        except PermanentFailure as refused:
            raise Undeliverable(f"the SMTP server refused mail to {address}: {refused}") from None
        except Exception as error:
            if server_down(error):  # the mail waits in the outbox until the server is back
                raise Unavailable(f"{type(error).__name__}: {error}") from error
            raise
        self.sent += 1
