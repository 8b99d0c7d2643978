"""Events drawn as mail: who reads each event (the delivery core's roster), in their language and
time zone, one fragment per reader staged in the durable outbox with the game's memory. The
outbox sends a reader's fragments of one batch as one mail (``EmailGateway.deliver_mails``).

By mail, "X has voted" and "X played a card" are no mail of their own; a reminder goes only to
those who still have to act; a command sent by mail is confirmed by a receipt with the first event
it causes (unless that event already tells the player privately)."""

from __future__ import annotations

import copy
import logging
from typing import Any

from shared.delivery.chain import check_chain
from shared.delivery.outbox import Outgoing
from shared.delivery.roster import Reader
from shared.narration.render import RTL, Context, Recipient, pick_locale
from shared.protocol import EventEnvelope

from . import links
from .notes import MailGame, Pending

log = logging.getLogger(__name__)

#: Shown in the group on Telegram; by mail they would be a mail each for nothing (a profile change
#: is confirmed by the gateway's own answer to the mail that asked for it).
QUIET = {"player_voted", "player_played_card", "profile_updated"}
PREFIX = "mail:"
RENDER_ATTEMPTS = 3


def address_of(player: str) -> str:
    return player[len(PREFIX):]


class Painter:
    def __init__(self, gw) -> None:
        self.gw = gw
        self._failures: dict[str, int] = {}

    # -- the game's memory ---------------------------------------------------------------

    def game(self, game_id: str) -> MailGame:
        games = self.gw.games
        if game_id not in games:
            games[game_id] = MailGame(game_id, title=game_id)
        return games[game_id]

    def learn(self, game: MailGame, envelope: EventEnvelope) -> None:
        e = envelope.event
        kind = e.type
        if kind == "lobby_opened":
            game.host, game.over, game.phase, game.options = e.host, False, "lobby", e.options
        elif kind == "options_changed":
            game.options = e.options
        elif kind == "player_joined":
            if e.player not in game.players:
                game.players.append(e.player)
            if e.player in game.invited:
                game.invited.remove(e.player)
        elif kind == "player_left":
            if e.player in game.players:
                game.players.remove(e.player)
        elif kind == "player_invited":
            if e.player not in game.invited and e.player not in game.players:
                game.invited.append(e.player)
            game.host = game.host or e.by
        elif kind == "game_started":
            game.players, game.options = list(e.seats), e.options
        elif kind == "phase_opened":
            game.phase, game.phase_id, game.leader, game.team_size = e.phase.value, e.phase_id, e.leader, e.team_size
            game.draft, game.draft_excalibur = [], None
            game.offers = {}
        elif kind == "choices_offered":
            game.offers[e.player] = e.model_dump(mode="json")
        elif kind in ("game_ended", "game_cancelled"):
            game.over, game.offers = True, {}
        if envelope.people:  # kept with the game: after a restart the roster learns them back
            self.gw.roster.learn(envelope)
            game.people.update({p: self.gw.roster.people[p] for p in envelope.people})
        if envelope.seq:
            game.seen_seq = max(game.seen_seq, envelope.seq)

    # -- drawing ---------------------------------------------------------------------------

    async def on_event(self, envelope: EventEnvelope) -> None:
        outbox = self.gw.outbox
        if await outbox.handled(envelope.message_id):
            return  # delivered again: its mail is in the outbox already
        game = self.game(envelope.game_id)
        check_chain(envelope, "email", game.seen_seq)
        before = copy.deepcopy(game)
        try:
            self.learn(game, envelope)
            out = self.draw(game, envelope)
        except Exception as error:  # noqa: BLE001 - tried again by the bus, then given up visibly
            self.gw.games[envelope.game_id] = before
            tries = self._failures[envelope.message_id] = self._failures.get(envelope.message_id, 0) + 1
            log.warning("could not draw %s (%s, attempt %d of %d): %s", envelope.message_id, envelope.event.type,
                        tries, RENDER_ATTEMPTS, error)
            if tries < RENDER_ATTEMPTS:
                raise
            del self._failures[envelope.message_id]
            readers = ",".join(r for r in envelope.readers or envelope.audience.players if r.startswith(PREFIX))
            await outbox.record_dead(envelope.message_id, envelope.game_id, readers or "-",
                                     f"could not render {envelope.event.type}: {type(error).__name__}: {error}")
            return
        await outbox.stage(envelope.message_id, envelope.game_id, out, game.blob())

    def readers(self, game: MailGame, envelope: EventEnvelope) -> list[Reader]:
        gw = self.gw
        readers = gw.roster.recipients(envelope, gw.fallback_languages)
        e = envelope.event
        if e.type in QUIET:
            return []
        if e.type == "phase_reminder":  # only those who still have to act
            waiting = set(e.waiting_for)
            readers = [r for r in readers if r.player in waiting]
        if e.type == "choices_offered":
            readers = [r for r in readers if r.player == e.player]
            offer_kinds = {c.kind.value for c in e.choices}
            if not offer_kinds:
                return []
        return readers

    def draw(self, game: MailGame, envelope: EventEnvelope) -> list[Outgoing]:
        out: list[Outgoing] = []
        e = envelope.event
        receipt = game.pending.pop(envelope.caused_by, None) if envelope.caused_by else None
        readers = self.readers(game, envelope)
        if receipt is not None and e.type != "command_rejected" and receipt.player.startswith(PREFIX):
            told_privately = envelope.audience.kind.value == "players" and envelope.audience.players == (receipt.player,)
            if not told_privately:
                out.append(self.receipt(game, receipt))
        for reader in readers:
            out.append(self.fragment(game, envelope, reader))
        return out

    def recipient(self, reader: Reader) -> Recipient:
        zone = reader.time_zone or self.gw.default_time_zone
        return Recipient(reader.player, reader.languages, None if zone == "UTC" else zone)  # None: "... UTC"

    def context(self, game: MailGame) -> Context:
        return Context(self.gw.roster.names(), {"title": game.title or game.game_id})

    def fragment(self, game: MailGame, envelope: EventEnvelope, reader: Reader) -> Outgoing:
        gw = self.gw
        recipient = self.recipient(reader)
        rendered = gw.narrator.render(envelope, recipient, "email", self.context(game))
        locale = rendered.locale
        html, text = rendered.html, rendered.text
        e = envelope.event
        extra_html, extra_text = "", ""
        if e.type == "choices_offered":
            extra_html, extra_text = links.choices_block(gw, game, locale, reader.player, e)
        elif e.type == "command_rejected":
            offer = game.offer(reader.player)
            if offer is not None:
                block_html, block_text = links.choices_block(gw, game, locale, reader.player, offer)
                still = gw.words(locale, "choices_still_open")
                extra_html, extra_text = f"<p>{still}</p>{block_html}", f"{still}\n{block_text}"
        elif e.type == "player_invited" and reader.player == e.player:
            extra_html, extra_text = links.join_block(gw, game, locale, reader.player)
        elif e.type == "lobby_opened" and reader.player == e.host:
            line = gw.words(locale, "game_created", code=game.title or game.game_id)
            extra_html, extra_text = f"<p>{links.esc(line)}</p>", line
        if extra_text:
            html, text = f"{html}\n{extra_html}", f"{text}\n\n{extra_text}"
        return Outgoing(address_of(reader.player), self.body(game, envelope_phase(envelope, game), locale,
                                                              rendered.subject, html, text,
                                                              name=gw.roster.names().get(reader.player)))

    def receipt(self, game: MailGame, pending: Pending) -> Outgoing:
        gw = self.gw
        reader = gw.roster.reader(pending.player, gw.fallback_languages)
        locale = pick_locale(reader.languages)
        what = gw.words(locale, pending.what, names=pending.names, text=pending.text)
        line = gw.words(locale, "receipt", what=what)
        return Outgoing(address_of(pending.player), self.body(game, game.phase_id, locale,
                                                               self.subject(game, locale), f"<p>{links.esc(line)}</p>",
                                                               line, name=gw.roster.names().get(pending.player)))

    def subject(self, game: MailGame, locale: str) -> str:
        from shared.narration.render import environment, html_to_text

        env = environment(locale)
        return html_to_text(env.get_template("email/_subject.html").render(
            game={"title": game.title or game.game_id}, envelope=None, names={}, tz=None, tz_known=False)).strip()

    @staticmethod
    def body(game: MailGame, phase_id: int | None, locale: str, subject: str | None, html: str,
             text: str, name: str | None = None) -> dict[str, Any]:
        return {"kind": "game", "game": game.game_id, "phase_id": phase_id, "locale": locale, "rtl": locale in RTL,
                "subject": subject or game.game_id, "html": html, "text": text, "name": name}


def envelope_phase(envelope: EventEnvelope, game: MailGame) -> int | None:
    phase_id = getattr(envelope.event, "phase_id", None)
    return phase_id if isinstance(phase_id, int) else game.phase_id
