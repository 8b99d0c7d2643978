"""Events from the engine drawn as Telegram messages: the group, the private chats, the buttons."""

from __future__ import annotations

import logging

from shared.narration.render import glossary, pick_locale
from shared.protocol import EventEnvelope

from . import ids, keyboards
from .memory import GameMemo

log = logging.getLogger(__name__)

#: Shown by editing a message in place rather than posting again.
QUIET = {"player_voted", "player_played_card"}


class EventPainter:
    def __init__(self, gw) -> None:
        self.gw = gw

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
        if envelope.seq:
            if envelope.seq <= memo.seen_seq:
                return  # delivered again: already shown
            memo.seen_seq = envelope.seq
        e = envelope.event
        kind = e.type
        handler = getattr(self, f"on_{kind}", None)
        if handler is not None and await handler(memo, envelope, e):
            return
        await self.deliver(memo, envelope)

    async def deliver(self, memo: GameMemo, envelope: EventEnvelope, markup=None):
        gw = self.gw
        if envelope.audience.kind.value == "public":
            return await gw.to_group(memo, gw.render(envelope, None, memo), markup)
        result = None
        for player in envelope.audience.players:
            result = await gw.to_player(player, gw.render(envelope, player, memo), markup)
        return result

    # -- the lobby -------------------------------------------------------------------------

    async def on_lobby_opened(self, memo, envelope, e) -> bool:
        memo.host, memo.options, memo.over = e.host, e.options, False
        self.gw.memory.current[memo.chat_id] = memo.game_id
        sent = await self.deliver(memo, envelope, keyboards.join(memo.game_id, self.gw.ui(memo, None, "join")))
        memo.lobby_message = getattr(sent, "message_id", None)
        return True

    async def on_player_joined(self, memo, envelope, e) -> bool:
        if e.player not in memo.players:
            memo.players.append(e.player)
        if e.player not in self.gw.memory.reachable:
            name = self.gw.memory.names.get(e.player, e.player)
            await self.gw.to_group(memo, self.gw.ui(memo, None, "need_private", name=name,
                                                    link=self.gw.deep_link(memo.game_id)))
        return False

    async def on_player_left(self, memo, envelope, e) -> bool:
        if e.player in memo.players:
            memo.players.remove(e.player)
        return False

    async def on_options_changed(self, memo, envelope, e) -> bool:
        memo.options = e.options
        message = self.gw.memory.settings_messages.get(memo.game_id)
        if message is not None:
            from .routers.settings import settings_keyboard, settings_text

            await self.gw.sender.edit(memo.chat_id, message, settings_text(self.gw, memo),
                                      settings_keyboard(self.gw, memo))
        return False

    async def on_conference_opened(self, memo, envelope, e) -> bool:
        memo.council = list(e.members)
        return False

    async def on_board_shown(self, memo, envelope, e) -> bool:
        chat = self.gw.memory.board_requests.pop(envelope.caused_by or "", None)
        if chat is None:
            return False
        reader = None if chat < 0 else ids.player_id(chat)
        await self.gw.sender.send(chat, self.gw.render(envelope, reader, memo))
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
            sent = await gw.to_group(memo, self._pick_text(memo), self._pick_keyboard(memo))
            memo.pick_message = getattr(sent, "message_id", None)
        elif memo.phase == "vote":
            words = glossary(pick_locale((memo.language,)))
            sent = await gw.to_group(memo, gw.ui(memo, None, "tally", voted=0, total=len(memo.players)),
                                     keyboards.vote(memo.game_id, memo.phase_id, words["approve"], words["reject"]))
            memo.vote_message = getattr(sent, "message_id", None)
        return True

    def _pick_text(self, memo: GameMemo) -> str:
        leader = self.gw.memory.names.get(memo.leader, memo.leader)
        return self.gw.ui(memo, None, "pick", leader=leader, size=memo.team_size, count=len(memo.picked))

    def _pick_keyboard(self, memo: GameMemo):
        return keyboards.pick(memo.game_id, memo.phase_id, memo.players, memo.picked, self.gw.memory.names,
                              self.gw.ui(memo, None, "confirm"))

    async def refresh_pick(self, memo: GameMemo) -> None:
        if memo.pick_message is not None:
            await self.gw.sender.edit(memo.chat_id, memo.pick_message, self._pick_text(memo),
                                      self._pick_keyboard(memo))

    async def on_player_voted(self, memo, envelope, e) -> bool:
        if e.player not in memo.voted:
            memo.voted.append(e.player)
        if memo.vote_message is not None:
            words = glossary(pick_locale((memo.language,)))
            await self.gw.sender.edit(
                memo.chat_id, memo.vote_message,
                self.gw.ui(memo, None, "tally", voted=len(memo.voted), total=len(memo.players)),
                keyboards.vote(memo.game_id, memo.phase_id, words["approve"], words["reject"]))
        return True

    async def on_votes_revealed(self, memo, envelope, e) -> bool:
        if memo.vote_message is not None:  # the buttons go; the tally stays
            await self.gw.sender.edit(memo.chat_id, memo.vote_message,
                                      self.gw.ui(memo, None, "tally", voted=len(memo.voted), total=len(memo.players)))
            memo.vote_message = None
        return False

    async def on_player_played_card(self, memo, envelope, e) -> bool:
        return True  # the quest result says it all; no message per card in the group

    async def on_choices_offered(self, memo, envelope, e) -> bool:
        self.gw.memory.offers[(memo.game_id, e.player)] = e
        kinds = {c.kind.value for c in e.choices}
        if kinds <= {"propose_team", "cast_vote"}:
            return True  # the team and the vote are chosen with the group's buttons
        locale = pick_locale(self.gw.language_of(e.player, memo))
        words = glossary(locale)
        markup = keyboards.choices(memo.game_id, e, self.gw.memory.names, words["cards"],
                                   self.gw.ui(memo, e.player, "sheathe"))
        await self.gw.to_player(e.player, self.gw.render(envelope, e.player, memo), markup)
        return True
