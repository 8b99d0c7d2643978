"""Events from the engine drawn as Telegram messages: the group, the private chats, the buttons."""

from __future__ import annotations

import logging
from contextvars import ContextVar

from shared.bus.base import EVENT_REDELIVERED
from shared.delivery.chain import check_chain
from shared.delivery.outbox import Outgoing
from shared.narration.render import glossary, pick_locale
from shared.protocol import EventEnvelope

from . import ids, keyboards
from .memory import GameMemo

log = logging.getLogger(__name__)

#: Shown by editing a message in place rather than posting again.
QUIET = {"player_voted", "player_played_card"}


#: Tries at rendering one event before it is given up as dead (the bus would try a few more).
RENDER_ATTEMPTS = 3

#: The messages of the event this task is drawing, staged when it is drawn; None: sent at once. Per task:
#: the bus hands different games' events to the painter side by side.
_OUT: ContextVar[list | None] = ContextVar("telegram_out", default=None)


class EventPainter:
    """Draws each event as messages. With the gateway's outbox (a database), what an event asks to
    send is staged: committed with the mark that the event is handled and the game's memory, then
    sent by the outbox; the bus's message is acknowledged only after that commit. Without one
    (tests of the drawing alone), messages are sent at once."""

    def __init__(self, gw) -> None:
        self.gw = gw
        self._failures: dict[str, int] = {}

    @property
    def outbox(self):
        return self.gw.outbox

    def memo(self, envelope: EventEnvelope) -> GameMemo | None:
        memory = self.gw.memory
        memo = memory.games.get(envelope.game_id)
        if memo is None:
            chat = ids.chat_of(envelope.game_id)
            if chat is None:
                return None
            memo = memory.games[envelope.game_id] = GameMemo(
                envelope.game_id, chat, language=memory.chat_languages.get(chat, "en"),
                title=memory.titles.get(chat, ""))
        return memo

    async def on_event(self, envelope: EventEnvelope) -> None:
        memo = self.memo(envelope)
        if memo is None:
            return
        self.learn_names(envelope)
        if self.outbox is None:
            if envelope.seq:
                if envelope.seq <= memo.seen_seq:
                    return  # delivered again: already shown
                memo.seen_seq = envelope.seq
            await self._draw(memo, envelope)
            return
        if EVENT_REDELIVERED.get() and await self.outbox.handled(envelope.message_id):
            return  # delivered again: its messages are in the outbox already
        check_chain(envelope, "telegram", memo.seen_seq)
        out: list = []
        _OUT.set(out)
        try:
            await self._draw(memo, envelope)
        except Exception as error:  # noqa: BLE001 - tried again by the bus, then given up visibly
            self.gw.forget_changes(envelope.game_id)  # as if this event had not come
            if self._give_up(envelope, error):
                await self._dead_event(self.memo(envelope), envelope, error)
                return
            raise
        finally:
            _OUT.set(None)
        memo.seen_seq = max(memo.seen_seq, envelope.seq)
        await self.gw.stage(envelope.message_id, memo, out)
        self._failures.pop(envelope.message_id, None)

    def learn_names(self, envelope: EventEnvelope) -> None:
        """Names the engine sends along (docs/protocol.md, ``people``): how players of other channels
        are called here. A Telegram user this gateway knows keeps the name Telegram gives."""
        names = self.gw.memory.names
        for player, person in envelope.people.items():
            if person.display_name and (player not in names or ids.user_id(player) is None):
                names[player] = person.display_name

    def _give_up(self, envelope: EventEnvelope, error: Exception) -> bool:
        tries = self._failures[envelope.message_id] = self._failures.get(envelope.message_id, 0) + 1
        log.warning("could not draw %s (%s, attempt %d of %d): %s", envelope.message_id, envelope.event.type, tries,
                    RENDER_ATTEMPTS, error)
        if tries < RENDER_ATTEMPTS:
            return False
        del self._failures[envelope.message_id]
        return True

    async def _dead_event(self, memo: GameMemo, envelope: EventEnvelope, error: Exception) -> None:
        """An event that cannot be drawn: recorded dead (log, count, the group told), and the game goes on."""
        readers = "group" if envelope.audience.kind.value == "public" else ",".join(envelope.audience.players)
        await self.outbox.record_dead(envelope.message_id, envelope.game_id, readers,
                                      f"could not render {envelope.event.type}: {type(error).__name__}: {error}")
        self.gw.sender.send_soon(memo.chat_id, self.gw.ui(memo, None, "lost_message"))

    async def _draw(self, memo: GameMemo, envelope: EventEnvelope) -> None:
        e = envelope.event
        handler = getattr(self, f"on_{e.type}", None)
        if handler is not None and await handler(memo, envelope, e):
            return
        await self.deliver(memo, envelope)

    # -- sending: staged in the outbox, or at once ----------------------------------------------

    async def send(self, chat: int, text: str, markup=None, *, slot: str | None = None):
        """A message to a chat. Staged: returns ``slot`` (the name a later edit uses); at once:
        the sent message's id."""
        out = _OUT.get()
        if out is None:
            sent = await self.gw.sender.send(chat, text, markup)
            return getattr(sent, "message_id", None)
        out.append(Outgoing(str(chat), {"op": "send", "chat": chat, "text": text, "markup": _markup(markup),
                                              "slot": slot}))
        return slot

    async def edit(self, chat: int, message, text: str, markup=None) -> None:
        """Edit a message sent before: ``message`` is its id, or the slot it was staged under."""
        if message is None:
            return
        out = _OUT.get()
        if out is None:
            ref = self.resolve(message)
            if ref is not None:
                await self.gw.sender.edit(chat, ref, text, markup)
            return
        body = {"op": "edit", "chat": chat, "text": text, "markup": _markup(markup)}
        body["edit_slot" if isinstance(message, str) else "edit_ref"] = message
        out.append(Outgoing(str(chat), body))

    def resolve(self, message) -> int | None:
        """A message's id in its chat, from its id or its slot (None if it was never sent)."""
        if isinstance(message, str):
            ref = self.outbox.slot(message) if self.outbox is not None else None
            return int(ref) if ref is not None else None
        return message

    async def to_group(self, memo: GameMemo, text: str, markup=None, *, slot: str | None = None):
        return await self.send(memo.chat_id, text, markup, slot=slot)

    async def to_player(self, player: str, text: str, markup=None, memo: GameMemo | None = None):
        user = ids.user_id(player)
        if user is None:
            return None
        return await self.send(user, self.gw.private_text(player, text, memo), markup)

    async def deliver(self, memo: GameMemo, envelope: EventEnvelope, markup=None, *, slot: str | None = None):
        gw = self.gw
        if envelope.audience.kind.value == "public":
            return await self.to_group(memo, gw.render(envelope, None, memo), markup, slot=slot)
        result = None
        for player in envelope.audience.players:
            result = await self.to_player(player, gw.render(envelope, player, memo), markup, memo)
        return result

    # -- the lobby -------------------------------------------------------------------------

    async def on_lobby_opened(self, memo, envelope, e) -> bool:
        memo.host, memo.options, memo.over = e.host, e.options, False
        self.gw.memory.current[memo.chat_id] = memo.game_id
        memo.lobby_message = await self.deliver(memo, envelope,
                                                keyboards.join(memo.game_id, self.gw.ui(memo, None, "join")),
                                                slot=f"lobby:{memo.game_id}")
        return True

    async def on_player_joined(self, memo, envelope, e) -> bool:
        if e.player not in memo.players:
            memo.players.append(e.player)
        if ids.user_id(e.player) is not None and e.player not in self.gw.memory.reachable:
            name = self.gw.memory.names.get(e.player, e.player)
            await self.to_group(memo, self.gw.ui(memo, None, "need_private", name=name,
                                                 link=self.gw.deep_link(memo.game_id)))
        return False

    async def on_player_invited(self, memo, envelope, e) -> bool:
        """To the host and the invitee: one line in the game's group (the invitee reads their mail)."""
        await self.to_group(memo, self.gw.render(envelope, None, memo))
        return True

    async def on_player_left(self, memo, envelope, e) -> bool:
        if e.player in memo.players:
            memo.players.remove(e.player)
        return False

    async def on_options_changed(self, memo, envelope, e) -> bool:
        memo.options = e.options
        if memo.options_wanted == e.options:  # the host's latest press is in: the next builds on this
            memo.options_wanted = None
        message = self.gw.memory.settings_messages.get(memo.game_id)
        if message is not None:
            from .routers.settings import settings_keyboard, settings_text

            await self.edit(memo.chat_id, message, settings_text(self.gw, memo), settings_keyboard(self.gw, memo))
        return False

    async def on_conference_opened(self, memo, envelope, e) -> bool:
        memo.council = list(e.members)
        return False

    async def on_board_shown(self, memo, envelope, e) -> bool:
        chat = self.gw.memory.board_requests.pop(envelope.caused_by or "", None)
        if chat is None:
            return False
        reader = None if chat < 0 else ids.player_id(chat)
        text = self.gw.render(envelope, reader, memo)
        await self.send(chat, self.gw.private_text(reader, text, memo) if reader else text)
        return True

    async def on_game_started(self, memo, envelope, e) -> bool:
        memo.players, memo.options = list(e.seats), e.options
        return False

    async def on_game_cancelled(self, memo, envelope, e) -> bool:
        self._over(memo)
        return False

    async def on_game_ended(self, memo, envelope, e) -> bool:
        self._over(memo)
        return False

    def _over(self, memo: GameMemo) -> None:
        memo.over = True
        if self.gw.memory.current.get(memo.chat_id) == memo.game_id:
            del self.gw.memory.current[memo.chat_id]

    # -- phases ------------------------------------------------------------------------------

    async def on_phase_opened(self, memo, envelope, e) -> bool:
        memo.phase, memo.phase_id, memo.leader, memo.team_size = e.phase.value, e.phase_id, e.leader, e.team_size
        memo.picked, memo.sword, memo.voted = [], None, []
        await self.deliver(memo, envelope)
        gw = self.gw
        if memo.phase == "proposal":
            memo.pick_message = await self.to_group(memo, self._pick_text(memo), self._pick_keyboard(memo),
                                                    slot=f"pick:{memo.game_id}:{memo.phase_id}")
        elif memo.phase == "vote":
            words = glossary(pick_locale((memo.language,)))
            memo.vote_message = await self.to_group(
                memo, gw.ui(memo, None, "tally", voted=0, total=len(memo.players)),
                keyboards.vote(memo.game_id, memo.phase_id, words["approve"], words["reject"]),
                slot=f"vote:{memo.game_id}:{memo.phase_id}")
        return True

    def _pick_text(self, memo: GameMemo) -> str:
        leader = self.gw.memory.names.get(memo.leader, memo.leader)
        return self.gw.ui(memo, None, "pick", leader=leader, size=memo.team_size, count=len(memo.picked))

    def _pick_keyboard(self, memo: GameMemo):
        return keyboards.pick(memo.game_id, memo.phase_id, memo.players, memo.picked, self.gw.memory.names,
                              self.gw.ui(memo, None, "confirm"))

    async def refresh_pick(self, memo: GameMemo) -> None:
        """The leader's picker, redrawn as they pick (from the buttons, not an event: at once)."""
        message = memo.pick_message
        ref = self.resolve(message)
        if ref is not None:
            await self.gw.sender.edit(memo.chat_id, ref, self._pick_text(memo), self._pick_keyboard(memo))
        elif isinstance(message, str) and self.outbox is not None:  # the picker is still on its way out
            await self.outbox.post(memo.game_id, Outgoing(str(memo.chat_id), {
                "op": "edit", "chat": memo.chat_id, "text": self._pick_text(memo),
                "markup": _markup(self._pick_keyboard(memo)), "edit_slot": message}), f"pick:{memo.game_id}")

    async def on_player_voted(self, memo, envelope, e) -> bool:
        if e.player not in memo.voted:
            memo.voted.append(e.player)
        if memo.vote_message is not None:
            words = glossary(pick_locale((memo.language,)))
            await self.edit(
                memo.chat_id, memo.vote_message,
                self.gw.ui(memo, None, "tally", voted=len(memo.voted), total=len(memo.players)),
                keyboards.vote(memo.game_id, memo.phase_id, words["approve"], words["reject"]))
        return True

    async def on_votes_revealed(self, memo, envelope, e) -> bool:
        if memo.vote_message is not None:  # the buttons go; the tally stays
            await self.edit(memo.chat_id, memo.vote_message,
                            self.gw.ui(memo, None, "tally", voted=len(memo.voted), total=len(memo.players)))
            memo.vote_message = None
        return False

    async def on_player_played_card(self, memo, envelope, e) -> bool:
        return True  # the quest result says it all; no message per card in the group

    async def on_command_rejected(self, memo, envelope, e) -> bool:
        if e.command_type == "change_options":  # the host's presses build on the game's options again
            memo.options_wanted = None
        return False

    async def on_choices_offered(self, memo, envelope, e) -> bool:
        self.gw.memory.offers[(memo.game_id, e.player)] = e
        kinds = {c.kind.value for c in e.choices}
        if kinds <= {"propose_team", "cast_vote"}:
            return True  # the team and the vote are chosen with the group's buttons
        locale = pick_locale(self.gw.language_of(e.player, memo))
        words = glossary(locale)
        markup = keyboards.choices(memo.game_id, e, self.gw.memory.names, words["cards"],
                                   self.gw.ui(memo, e.player, "sheathe"))
        await self.to_player(e.player, self.gw.render(envelope, e.player, memo), markup, memo)
        return True


def _markup(markup):
    return None if markup is None else markup.model_dump(mode="json", exclude_none=True)
