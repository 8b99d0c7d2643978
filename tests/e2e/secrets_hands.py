"""How a player of the security tests makes a move on their own channel, as a person would: on
Telegram by pressing the buttons the bot drew (the group's team picker and vote, the private
keyboards) or writing to the bot in private; by mail by sending what a ``mailto:`` link of the
newest mail offering that move says, or by typing a reply (a team, a word to the council, a last
word). Each move returns False while what it needs (the button, the mail) has not arrived yet:
the caller tries again."""

from __future__ import annotations

import urllib.parse

from avalon.services.email_gateway.compose import phase_of_message_id
from avalon.services.email_gateway.wording import Intent, link_body, parse

#: engine command -> (mail intent kind, Telegram private button kind)
TARGETED = {"use_excalibur": ("excalibur", "e"), "use_lady": ("lady", "l"), "assassinate": ("shoot", "a"),
            "accuse": ("accuse", "c"), "hand_shot": ("hand", "h")}


def mailto(url: str) -> tuple[str, str, str]:
    """(to, subject, body) of a mailto: link."""
    parts = urllib.parse.urlsplit(url)
    fields = urllib.parse.parse_qs(parts.query)
    return (urllib.parse.unquote(parts.path), fields.get("subject", [""])[0], fields.get("body", [""])[0])


class TelegramHands:
    def __init__(self, stack, group, users: dict[str, object], names: dict[str, str]) -> None:
        self.stack, self.fake, self.group = stack, stack.fake, group
        self.users, self.names = users, names  # player id -> FakeUser; player id -> display name
        self.pressed: dict[tuple, list[str]] = {}  # (game, phase) -> the names pressed on the picker

    def _find(self, chat, prefix: str):
        for message in reversed(self.fake.messages(chat)):
            if any(d.startswith(prefix) for d in message.callback_data):
                return message
        return None

    def _game(self, game: str):
        return self.stack.telegram.game(game)

    async def propose(self, game: str, phase: int, leader: str, seats: tuple, team: list[str],
                      sword: str | None) -> bool:
        picker = self._find(self.group, f"p:{game}:{phase}:")
        user = self.users[leader]
        if picker is not None and all(d.startswith(f"p:{game}:{phase}:") for d in picker.callback_data):
            ticked = {b["text"].removeprefix("✅ ") for b in picker.buttons
                      if b["text"].startswith("✅ ") and not b["callback_data"].endswith(":-1")}
            pressed = self.pressed.setdefault((game, phase), [])
            if ticked != {self.names[p] for p in pressed}:
                return False  # the last press is still on its way to the picker
            if len(pressed) < len(team):  # one name at a time: the picker is redrawn after each press
                player = team[len(pressed)]
                pressed.append(player)
                await user.press(picker, f"p:{game}:{phase}:{seats.index(player)}")
                return False
            await user.press(picker, f"p:{game}:{phase}:-1")
            return sword is None
        sword_message = self._find(self.group, f"t:{game}:{phase}:x:")
        if sword is None or sword_message is None:
            return False
        await user.press(sword_message, sword_message.button(self.names[sword])["callback_data"])
        return True

    async def vote(self, game: str, phase: int, player: str, approve: bool) -> bool:
        message = self._find(self.group, f"v:{game}:{phase}:")
        if message is None:
            return False
        await self.users[player].press(message, f"v:{game}:{phase}:{int(approve)}")
        return True

    async def card(self, game: str, phase: int, player: str, card: str) -> bool:
        user = self.users[player]
        message = self._find(user.private_chat, f"c:{game}:{phase}:")
        if message is None:
            return False
        await user.press(message, f"c:{game}:{phase}:{card}")
        return True

    async def target(self, game: str, phase: int, player: str, kind: str, target: str | None) -> bool:
        user = self.users[player]
        code = TARGETED[kind][1]
        message = self._find(user.private_chat, f"t:{game}:{phase}:{code}:")
        if message is None:
            return False
        if target is None:
            await user.press(message, f"t:{game}:{phase}:{code}:-1")
        else:
            button = next(b for b in message.buttons if b["text"] == self.names[target]
                          and b["callback_data"].startswith(f"t:{game}:{phase}:{code}:"))
            await user.press(message, button["callback_data"])
        return True

    async def say(self, game: str, phase: int, player: str, kind: str, text: str) -> bool:
        """A word to the council, or the last word: written to the bot in private, once the bot has
        shown the player the council (or asked for their last word)."""
        known = self._game(game)
        if known is None or known.table.turn.phase_id != phase:
            return False
        if kind == "confer" and player not in known.table.turn.council:
            return False
        offer = known.table.offer(player)
        if kind == "speak_last_word" and (offer is None or offer.phase_id != phase):
            return False
        await self.users[player].send(None, text)
        return True


class MailHands:
    def __init__(self, stack, seats: dict[str, object], names: dict[str, str]) -> None:
        self.stack = stack
        self.seats, self.names = seats, names  # player id -> Seat; player id -> display name

    def _mails(self, game: str, player: str, phase: int | None = None) -> list:
        out = []
        for message in self.stack.mails(self.seats[player].address):
            found = phase_of_message_id(message.message_id, self.stack.identity)
            if found and found[0] == game and (phase is None or found[1] == phase):
                out.append(message)
        return out

    async def send(self, player: str, to: str, subject: str, body: str, parent=None) -> None:
        seat = self.seats[player]
        await self.stack.mail_in(seat.address, seat.name, to, subject, body, in_reply_to=parent)

    async def click(self, game: str, phase: int, player: str, kind: str, targets: tuple = (),
                    seats: tuple = ()) -> bool:
        """Sends the link of the newest mail of this phase that makes this move."""
        for message in reversed(self._mails(game, player, phase)):
            for url in message.links:
                to, subject, body = mailto(url)
                intent = parse(body, self.names, seats)
                if isinstance(intent, Intent) and intent.kind == kind and intent.targets == tuple(targets) \
                        and intent.phase_id == phase:
                    await self.send(player, to, subject, body, message)
                    return True
        return False

    async def type(self, game: str, phase: int, player: str, kind: str, words: list[str]) -> bool:
        """A typed reply to the newest mail of this phase (the thread's Reply-To carries the token)."""
        mails = self._mails(game, player, phase)
        if not mails:
            return False
        latest = mails[-1]
        body = link_body(self.seats[player].language, kind, words, phase)
        await self.send(player, latest.reply_to, "Re: " + latest.subject, body, latest)
        return True

    async def reply_any(self, game: str, player: str, kind: str, words: list[str] = ()) -> bool:
        """A typed reply (``join``, ``start``) to the newest mail of the game, any phase."""
        mails = self._mails(game, player)
        if not mails:
            return False
        latest = mails[-1]
        body = link_body(self.seats[player].language, kind, list(words))
        await self.send(player, latest.reply_to, "Re: " + latest.subject, body, latest)
        return True
