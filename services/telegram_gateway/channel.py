"""The Telegram channel on the delivery core (``shared.delivery.channel``): its address scheme
(``tg:<user id>``), how it draws an event (public events once in the game's group, private ones in
each player's private chat, with the buttons of what the engine offers), and its wire (the paced
``Sender``). The shared pipeline folds each event into the game's table first, and commits what is
drawn here with the game in the outbox.

A message edited in place as the game goes (the lobby, the leader's picker, the vote's tally) is
staged under a slot name; the outbox remembers the sent message's id by that name, so an edit drawn
before the message has left still finds it."""

from __future__ import annotations

from typing import Callable

from aiogram.types import InlineKeyboardMarkup

from avalon.shared.delivery.channel import GROUP_CHOICES, Game
from avalon.shared.delivery.outbox import Outgoing, Row, Undeliverable
from avalon.shared.delivery.photos import Photos, decode, encode
from avalon.shared.delivery.roster import Reader
from avalon.shared.narration.render import glossary
from avalon.shared.protocol import EventEnvelope
from avalon.shared.protocol_records import RECORD_COMMANDS

from . import ids, keyboards
from .memory import GroupGame, Memory
from .sender import Sender
from .settings_screen import settings_keyboard, settings_text
from .speech import Speech

def markup_json(markup: InlineKeyboardMarkup | None):
    return None if markup is None else markup.model_dump(mode="json", exclude_none=True)


def send(chat: int, text: str, markup=None, *, slot: str | None = None) -> Outgoing:
    return Outgoing(str(chat), {"op": "send", "chat": chat, "text": text, "markup": markup_json(markup), "slot": slot})


#: Telegram's longest caption (in UTF-16 units, as it counts them); a longer text goes beside the photo
MAX_CAPTION = 1024


def photo(chat: int, png: bytes, text: str) -> list[Outgoing]:
    """A picture with its text kept for those who cannot see it: as its caption when it fits, else
    the photo and then the text as a message of its own."""
    if len(text.encode("utf-16-le")) // 2 <= MAX_CAPTION:
        return [Outgoing(str(chat), {"op": "photo", "chat": chat, "photo": encode(png), "caption": text})]
    return [Outgoing(str(chat), {"op": "photo", "chat": chat, "photo": encode(png), "caption": None}),
            send(chat, text)]


def edit(chat: int, message, text: str, markup=None) -> Outgoing:
    """An edit of a message sent before: ``message`` is its id, or the slot it was staged under."""
    body = {"op": "edit", "chat": chat, "text": text, "markup": markup_json(markup)}
    body["edit_slot" if isinstance(message, str) else "edit_ref"] = message
    return Outgoing(str(chat), body)


class TelegramChannel:
    name = "telegram"
    scheme = "tg"
    has_group = True

    def __init__(self, memory: Memory, speech: Speech, sender: Sender, *, deep_link: Callable[[str], str],
                 game_of: Callable[[str], Game | None], open_games_of: Callable[[str], set[str]],
                 slot_of: Callable[[str], str | None], photos: Photos | None = None) -> None:
        self.memory = memory
        self.speech = speech
        self.sender = sender
        self.deep_link = deep_link  # game -> the link that opens the bot's private chat and joins it
        self.game_of = game_of  # game id -> the game as the gateway keeps it
        self.open_games_of = open_games_of  # player -> the games not over they sit in
        self.slot_of = slot_of  # slot name -> the sent message's id, once sent (the outbox's)
        self.photos = photos or Photos()  # the board's and the end's pictures, drawn once per language

    # -- the delivery core's questions ---------------------------------------------------------

    def own_part(self, game_id: str) -> GroupGame | None:
        """A game of a Telegram group (its id names the group); any other game is not ours."""
        chat = ids.chat_of(game_id)
        if chat is None:
            return None
        memory = self.memory
        return GroupGame(chat, language=memory.chat_languages.get(chat, "en"), title=memory.titles.get(chat, ""))

    def group_languages(self, game: Game) -> tuple[str, ...]:
        return (game.own.language,)

    def draw(self, game: Game, envelope: EventEnvelope, readers: list[Reader]) -> list[Outgoing]:
        self._learn_names(envelope)
        out: list[Outgoing] = []
        e = envelope.event
        handler = getattr(self, f"_on_{e.type}", None)
        if handler is None or not handler(game, envelope, e, out):
            self.deliver_event(game, envelope, readers, out)
        return out

    def _learn_names(self, envelope: EventEnvelope) -> None:
        """Names the engine sends along (``people``): how players of other channels are called here.
        A Telegram user this gateway knows keeps the name Telegram gives."""
        names = self.memory.names
        for player, person in envelope.people.items():
            if person.display_name and (player not in names or ids.user_id(player) is None):
                names[player] = person.display_name

    def deliver_event(self, game: Game, envelope: EventEnvelope, readers: list[Reader], out: list[Outgoing],
                      markup=None, *, slot: str | None = None) -> str | None:
        """The event rendered for each reader: the group (a public event), or each player in private."""
        if envelope.audience.kind.value == "public":
            out.append(send(game.own.chat_id, self.speech.render(envelope, None, game), markup, slot=slot))
            return slot
        for reader in readers:
            self.to_player(game, reader.player, self.speech.render(envelope, reader.player, game), out, markup)
        return None

    def to_player(self, game: Game, player: str, text: str, out: list[Outgoing], markup=None) -> None:
        user = ids.user_id(player)
        if user is not None:
            out.append(send(user, self.speech.private_text(player, text, game, self.open_games_of(player)), markup))

    def to_group(self, game: Game, text: str, out: list[Outgoing], markup=None, *, slot: str | None = None) -> str | None:
        out.append(send(game.own.chat_id, text, markup, slot=slot))
        return slot

    # -- the lobby -----------------------------------------------------------------------------

    def _on_lobby_opened(self, game, envelope, e, out) -> bool:
        own = game.own
        self.memory.current[own.chat_id] = game.table.game_id
        own.lobby_message = self.deliver_event(game, envelope, [], out, keyboards.join(
            game.table.game_id, self.speech.ui(game, None, "join")), slot=f"lobby:{game.table.game_id}")
        self._tell_next_game(game, e.host, out)
        return True

    def _tell_next_game(self, game: Game, host: str, out: list[Outgoing]) -> None:
        """Who asked with /nextgame in this group hears in private that a lobby opened (once: they are
        told so, and ask again for the one after)."""
        title = game.own.title or str(game.own.chat_id)
        for player in self.memory.next_game.pop(game.own.chat_id, ()):
            if player != host:
                self.to_player(game, player, self.speech.ui(game, player, "next_game_opened", title=title), out)

    def _on_player_joined(self, game, envelope, e, out) -> bool:
        if ids.user_id(e.player) is not None and e.player not in self.memory.reachable:
            self.to_group(game, self.speech.ui(game, None, "need_private", name=self.speech.name(e.player),
                                               link=self.deep_link(game.table.game_id)), out)
        return False

    def _on_player_invited(self, game, envelope, e, out) -> bool:
        """To the host and the invitee: one line in the game's group (the invitee reads their mail)."""
        self.to_group(game, self.speech.render(envelope, None, game), out)
        return True

    def _on_options_changed(self, game, envelope, e, out) -> bool:
        own = game.own
        if own.options_wanted == e.options:  # the host's latest press is in: the next builds on this
            own.options_wanted = None
        message = self.memory.settings_messages.get(game.table.game_id)
        if message is not None:
            out.append(edit(own.chat_id, message, settings_text(self.speech, game),
                            settings_keyboard(self.speech, game)))
        return False

    def _on_board_shown(self, game, envelope, e, out) -> bool:
        chat = self.memory.board_requests.pop(envelope.caused_by or "", None)
        if chat is None:
            return False
        reader = None if chat < 0 else ids.player_id(chat)
        text = self.speech.render(envelope, reader, game)
        if reader is not None:
            text = self.speech.private_text(reader, text, game, self.open_games_of(reader))
        self.with_picture(game, envelope, reader, chat, text, out)
        return True

    def with_picture(self, game: Game, envelope: EventEnvelope, reader: str | None, chat: int, text: str,
                     out: list[Outgoing]) -> None:
        """``text`` to ``chat``, with the picture the event brings (drawn in the reader's language) if any."""
        png = self.photos.of(game.table, envelope, self.memory.names, self.speech.locale(reader, game))
        out.extend([send(chat, text)] if png is None else photo(chat, png, text))

    # -- the record of finished games (routers/records.py asked, under tg<chat>_records) -----------

    def _on_records(self, game, envelope, e, out) -> bool:
        """The answer said in the chat the question was asked in; stats their owner hid never in a group
        (to the owner in private then, like an answer whose chat is not known: an engine's redelivery)."""
        chat = self.memory.board_requests.pop(envelope.caused_by or "", None)
        if chat is None or (chat < 0 and getattr(e, "hidden", False) and e.type == "stats_shown"):
            return False
        reader = None if chat < 0 else ids.player_id(chat)
        out.append(send(chat, self.speech.render(envelope, reader, game)))
        return True

    _on_stats_shown = _on_leaderboard_shown = _on_history_shown = _on_records
    _on_stats_hidden = _on_records_forgotten = _on_records

    def _on_game_cancelled(self, game, envelope, e, out) -> bool:
        self._over(game)
        return False

    def _on_game_voided(self, game, envelope, e, out) -> bool:
        self._over(game)
        return False

    def _on_game_ended(self, game, envelope, e, out) -> bool:
        self._over(game)
        self.with_picture(game, envelope, None, game.own.chat_id, self.speech.render(envelope, None, game), out)
        return True

    def _over(self, game: Game) -> None:
        if self.memory.current.get(game.own.chat_id) == game.table.game_id:
            del self.memory.current[game.own.chat_id]

    def _on_command_rejected(self, game, envelope, e, out) -> bool:
        if e.command_type == "change_options":  # the host's presses build on the game's options again
            game.own.options_wanted = None
        if e.command_type in RECORD_COMMANDS:  # "no record of them", "hidden": where it was asked
            return self._on_records(game, envelope, e, out)
        return False

    # -- the people around the table -----------------------------------------------------------

    def _on_seat_opened(self, game, envelope, e, out) -> bool:
        """Told in the group with a button anyone outside the game may press to take the seat."""
        own = game.own
        slot = f"seat:{game.table.game_id}:{e.seat}:{envelope.seq}"
        self.deliver_event(game, envelope, [], out, keyboards.take_seat(
            game.table.game_id, e.seat, self.speech.ui(game, None, "take_seat")), slot=slot)
        own.open_seats = tuple(o for o in own.open_seats if o[0] != e.seat) + ((e.seat, slot),)
        return True

    def _on_seat_taken(self, game, envelope, e, out) -> bool:
        """The seat's button goes; the one replaced is remembered, so their old buttons say why they
        no longer work."""
        own = game.own
        for seat, slot in own.open_seats:
            if seat == e.seat:
                out.append(edit(own.chat_id, slot, None))
        own.open_seats = tuple(o for o in own.open_seats if o[0] != e.seat)
        former = {was: (e.player if now == e.previous else now) for was, now in own.former if was != e.player}
        former[e.previous] = e.player
        own.former = tuple(former.items())
        return False

    def _on_game_resumed(self, game, envelope, e, out) -> bool:
        """The phase goes on under a new id: the group's picker and vote buttons of before the pause
        lose their buttons, and are drawn again with the choices offered again."""
        own = game.own
        for message in (own.pick_message, own.vote_message):
            if message is not None:
                out.append(edit(own.chat_id, message, None))
        own.pick_message = own.vote_message = None
        own.choosing_holder = False
        return False

    # -- a round -------------------------------------------------------------------------------

    def _on_phase_opened(self, game, envelope, e, out) -> bool:
        own = game.own
        own.pick_message = own.vote_message = None
        own.choosing_holder = False
        return False

    def _on_choices_offered(self, game, envelope, e, out) -> bool:
        """What a player may do now. The team and the vote are chosen with the group's buttons (the
        leader's picker, drawn from the leader's offer; the vote's, with its first voter's offer);
        every other choice with buttons in the player's private chat."""
        kinds = {c.kind.value for c in e.choices}
        own = game.own
        if not envelope.seq:  # sent again to this player alone (show_choices): the group's buttons are there
            kinds -= GROUP_CHOICES
            if not kinds:
                return True
        if "propose_team" in kinds:
            own.pick_message = self.to_group(game, self.pick_text(game), out, self.pick_keyboard(game),
                                             slot=f"pick:{game.table.game_id}:{e.phase_id}")
        if "cast_vote" in kinds and own.vote_message is None:
            own.vote_message = self.to_group(game, self.tally(game), out, self.vote_keyboard(game),
                                             slot=f"vote:{game.table.game_id}:{e.phase_id}")
        if kinds <= GROUP_CHOICES:
            return True
        words = glossary(self.speech.locale(e.player, game))
        markup = keyboards.choices(game.table.game_id, e, self.memory.names, words["cards"],
                                   self.speech.ui(game, e.player, "sheathe"))
        self.to_player(game, e.player, self.speech.render(envelope, e.player, game), out, markup)
        return True

    def _on_player_voted(self, game, envelope, e, out) -> bool:
        own = game.own
        if own.vote_message is not None:
            out.append(edit(own.chat_id, own.vote_message, self.tally(game), self.vote_keyboard(game)))
        return True

    def _on_votes_revealed(self, game, envelope, e, out) -> bool:
        own = game.own
        if own.vote_message is not None:  # the buttons go; the tally stays
            out.append(edit(own.chat_id, own.vote_message, self.tally(game)))
            own.vote_message = None
        return False

    def _on_player_played_card(self, game, envelope, e, out) -> bool:
        return True  # the quest result says it all; no message per card in the group

    # -- the group's buttons -------------------------------------------------------------------

    def proposal_choice(self, game: Game):
        """The leader's ``propose_team`` offer (the team's candidates, its size, whether Excalibur is
        handed with it), or None."""
        leader = game.table.turn.leader
        offer = game.table.offer(leader) if leader else None
        return next((c for c in offer.choices if c.kind.value == "propose_team"), None) if offer else None

    def pick_text(self, game: Game) -> str:
        choice = self.proposal_choice(game)
        size = choice.count if choice is not None else game.table.turn.team_size
        return self.speech.ui(game, None, "pick", leader=self.speech.name(game.table.turn.leader), size=size,
                              count=len(game.table.draft.picks))

    def pick_keyboard(self, game: Game):
        choice = self.proposal_choice(game)
        candidates = list(choice.targets) if choice is not None else list(game.table.seats.players)
        return keyboards.pick(game.table.game_id, game.table.turn.phase_id, candidates, game.table.draft.picks,
                              self.memory.names, self.speech.ui(game, None, "confirm"))

    def tally(self, game: Game) -> str:
        return self.speech.ui(game, None, "tally", voted=len(game.table.turn.voted),
                              total=len(game.table.seats.players))

    def vote_keyboard(self, game: Game):
        words = glossary(self.speech.locale(None, game))
        return keyboards.vote(game.table.game_id, game.table.turn.phase_id, words["approve"], words["reject"])

    def resolve(self, message) -> int | None:
        """A message's id in its chat, from its id or its slot (None if it was never sent)."""
        if isinstance(message, str):
            ref = self.slot_of(message)
            return int(ref) if ref is not None else None
        return message

    # -- the wire --------------------------------------------------------------------------------

    async def deliver(self, row: Row, slot_ref: str | None) -> str | None:
        body = row.body
        markup = InlineKeyboardMarkup.model_validate(body["markup"]) if body.get("markup") else None
        chat = self.sender.migrated.get(body["chat"], body["chat"])
        if body["op"] == "edit":
            message = int(slot_ref) if body.get("edit_slot") else body.get("edit_ref")
            if message is not None:  # (a message never sent has nothing to edit)
                await self.sender.edit(chat, message, body["text"], markup)
            return None
        if body["op"] == "photo":
            sent = await self.sender.send_photo(chat, decode(body["photo"]), body.get("caption"))
        else:
            sent = await self.sender.send(chat, body["text"], markup)
        if sent is None:
            raise Undeliverable(f"Telegram did not take the message for chat {chat} (see the log above)")
        return str(sent.message_id)

    async def on_dead(self, row: Row, error: str) -> None:
        """Tell the game's group that one of its messages is lost; when the group's own message is
        what failed, tell the host in private."""
        game = self.game_of(row.game_id)
        if game is None:
            return
        own, host = game.own, game.table.seats.host
        if str(own.chat_id) != row.recipient:
            self.sender.send_soon(own.chat_id, self.speech.ui(game, None, "lost_message"))
        elif (user := ids.user_id(host)) is not None:
            text = self.speech.ui(game, host, "lost_message")
            self.sender.send_soon(user, self.speech.private_text(host, text, game, self.open_games_of(host)))

    async def on_lost(self, game: Game, envelope: EventEnvelope, error: Exception) -> None:
        self.sender.send_soon(game.own.chat_id, self.speech.ui(game, None, "lost_message"))
