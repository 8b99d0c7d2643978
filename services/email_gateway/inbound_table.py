"""What a mail may ask of the people around a game: take a seat offered by mail, offer a seat to
addresses (``invite ADDRESS seat NAME``), follow a game (``watch CODE``), keep a host's standby list.
Part of ``Inbound`` (a mixin: it reads ``self.gw``), kept apart by concept."""

from __future__ import annotations

import hashlib
import re

from avalon.shared.delivery.channel import Game
from avalon.shared.game.codes import game_code, read_code
from avalon.shared.protocol import CommandEnvelope

from .notes import MailNotes, Pending, title_of
from .reading import IncomingMail
from .wording import Intent, Problem

PREFIX = "mail:"
ADDRESS = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}")
#: a game named in a mail (``watch CODE``) that the gateway has not seen yet
GAME_ID = re.compile(r"(?:mail|tg)-[A-Za-z0-9_\-]{1,60}")


class TableMail:
    gw: object

    @staticmethod
    def offered(game: Game, address: str, intent: Intent) -> str | None:
        """The holder of the seat ``address`` may take: one offered to it by mail and still open (the
        one named, or else the one offered last)."""
        notes: MailNotes = game.own
        if not intent.targets:
            return notes.offered(address)
        holder = intent.targets[0]
        offered = holder in notes.open_seats and (address, holder) in notes.offers
        return holder if offered else None

    async def offer_seat(self, mail: IncomingMail, key: str, player: str, game: Game, intent: Intent) -> str:
        """``invite ADDRESS seat NAME``: the host offers NAME's seat to each address (the seat opened for
        a substitute first, when it is not open yet); the first to reply "take" sits there."""
        gw = self.gw
        table = game.table
        if player != table.seats.host:
            await gw.say(mail.sender, game, "only_host", mail=mail, language=intent.language)
            return "refused: only the host offers a seat"
        holder = intent.targets[0]
        addresses = [a for a in intent.text.split() if ADDRESS.fullmatch(a) and PREFIX + a not in table.seats.players
                     and a != gw.identity.address]
        if not addresses:
            await gw.problem(game, player, Problem("no_address", intent.language), mail)
            return "problem: no address"
        await gw.ensure_profile(player, mail, intent.language, key)
        if holder not in game.own.open_seats:
            await gw.send(CommandEnvelope(message_id=f"{key_id(key)}:o", game_id=table.game_id, actor=player,
                                          channel="email", command={"type": "open_seat", "player": holder}))
        for address in addresses:
            game.own.offer(address, holder)
        await gw.save_game(game)
        for address in addresses:
            await gw.offer_seat(game, address, holder)
        display = gw.roster.names()
        await gw.say(mail.sender, game, "seat_offered", mail=mail, language=intent.language,
                     params={"name": display.get(holder) or holder.split(":", 1)[-1], "names": ", ".join(addresses)})
        return f"offered a seat to {len(addresses)}"

    def game_named(self, code: str) -> Game | None:
        """The game a typed code names: its id, its title, or its shown code (``7KQ2-M9XD``); one under way first."""
        if not code:
            return None
        typed = read_code(code)
        found = [g for g in self.gw.games.values()
                 if code.casefold() in (g.table.game_id.casefold(), title_of(g).casefold())
                 or (typed is not None and game_code(g.table.game_id) == typed)]
        return min(found, key=lambda g: g.table.over, default=None)

    async def watch(self, mail: IncomingMail, key: str, player: str, intent: Intent) -> str:
        """``watch CODE``: follow that game as a spectator (the engine says whether it may be watched)."""
        gw = self.gw
        game = self.game_named(intent.text)
        game_id = game.table.game_id if game is not None else intent.text if GAME_ID.fullmatch(intent.text) else None
        if game_id is None:
            await gw.say(mail.sender, None, "unknown_game", mail=mail, language=intent.language,
                         params={"word": intent.text})
            return "refused: unknown game"
        await gw.ensure_profile(player, mail, intent.language, key)
        command_id = f"{key_id(key)}:0"
        if game is not None:
            game.own.pending[command_id] = Pending(player, "what_watch")
            await gw.save_game(game)
        await gw.send(CommandEnvelope(message_id=command_id, game_id=game_id, actor=player, channel="email",
                                      command={"type": "watch"}))
        return "sent watch"

    async def standby(self, mail: IncomingMail, player: str, intent: Intent) -> str:
        """``standby ADDRESS …`` (``standby remove ADDRESS …``): the sender's standby list, as a host; the
        list as it is now is the answer (the word alone: only the list)."""
        gw = self.gw
        addresses = [a for a in intent.text.split()
                     if ADDRESS.fullmatch(a) and a not in (mail.sender, gw.identity.address)]
        add, remove = (addresses, []) if intent.kind == "standby" else ([], addresses)
        listed = await gw.set_standby(player, add, remove)
        await gw.say(mail.sender, None, "standby_list", mail=mail, language=intent.language,
                     params={"names": ", ".join(listed)})
        return f"standby: {len(listed)}"


def key_id(key: str) -> str:
    """A short command id from a mail's Message-ID: the same mail always gives the same commands."""
    return "mail-" + hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:24]
