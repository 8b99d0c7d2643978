"""Commands that are not moves of the game: the board, reminders, a person's profile, invitations."""

from __future__ import annotations

from shared.protocol import (
    BoardShown,
    CommandEnvelope,
    EventEnvelope,
    PhaseReminder,
    PlayerInvited,
    ProfileUpdated,
    QuestLine,
    audience_model,
    plausible_address,
    utcnow,
)
from services.engine.rules import Audience, Phase, Reason, pending_players, view
from shared.game import events as core_events
from shared.game.errors import reject

from .routing import channels_of, person_of
from .store import LoadedGame


def invitable(player: str) -> bool:
    """Whether an invitation can reach ``player``: an email player, ``mail:`` and a plausible,
    lower-cased address (the id the email gateway gives whoever writes from that address)."""
    address = player.removeprefix("mail:")
    return player.startswith("mail:") and plausible_address(address) and address == address.lower()


class SideCommands:
    """Mixed into EngineService: uses its _commit, _channels, _remember, _reply_rejected, _persons, _people,
    channels and store."""

    async def _show_board(self, env: CommandEnvelope, loaded: LoadedGame | None) -> None:
        if loaded is None:
            await self._reply_rejected(env, None, "unknown_game", {}, "There is no such game.")
            return
        v = view(loaded.state, None)
        body = BoardShown(
            phase=v.phase, phase_id=v.phase_id, players=v.players, leader=v.leader, quest=v.quest,
            vote_track=v.vote_track, quest_sizes=v.quest_sizes, fails_needed=v.fails_needed,
            quest_results=tuple(QuestLine(quest=r.quest, fails=r.fails, failed=r.failed) for r in v.quest_results),
            team=v.team, excalibur_holder=v.excalibur_holder, lady_holder=v.lady_holder, waiting_for=v.waiting_for,
            deadline_at=loaded.deadline_at)  # as decided, even if an earlier command of this batch moved it
        envelope = EventEnvelope(
            message_id=f"board:{env.message_id}", game_id=env.game_id, seq=0, occurred_at=utcnow(),
            audience=audience_model(Audience.to(env.actor)), caused_by=env.message_id, event=body)
        channels = tuple(sorted((channels_of(self.channels, env.actor) | {env.channel}) & self.channels.routed))
        await self._commit(game_id=env.game_id, message_id=env.message_id, outcome="accepted",
                           events=[(envelope, channels)])

    async def _remind(self, env: CommandEnvelope, loaded: LoadedGame | None) -> None:
        state = loaded.state if loaded else None
        if state is None or state.over or state.phase_id != env.phase_id:
            await self._commit(game_id=env.game_id, message_id=env.message_id, outcome="ignored", events=[])
            return
        seq = loaded.version + 1
        body = PhaseReminder(phase=state.phase, phase_id=state.phase_id, seconds_left=env.command.seconds_left,
                             waiting_for=pending_players(state))
        envelope = EventEnvelope(
            message_id=f"{env.game_id}:{seq}", game_id=env.game_id, seq=seq, occurred_at=utcnow(),
            audience=audience_model(core_events.PUBLIC), caused_by=env.message_id, readers=state.players,
            event=body)
        sent = dict(loaded.sent)
        await self._commit(
            game_id=env.game_id, message_id=env.message_id, outcome="accepted",
            events=[self._routed(envelope, loaded.origin_channel, sent)], state=state,
            expected_version=loaded.version)
        self._remember(env.game_id, LoadedGame(state, seq, loaded.seed, loaded.origin_channel, loaded.deadline_at,
                                               sent))

    async def _update_profile(self, env: CommandEnvelope) -> None:
        c = env.command
        row = await self.store.upsert_player(env.actor, display_name=c.display_name, language=c.language,
                                             telegram_chat_id=c.telegram_chat_id, email=c.email,
                                             time_zone=c.time_zone)
        extra = set()
        if row.telegram_chat_id is not None:
            extra.add("telegram")
        if row.email:
            extra.add("email")
        self._extra_channels[env.actor] = extra
        self._routes.clear()
        person = self._persons[env.actor] = person_of(row)  # named so in this game's and later batches' events
        body = ProfileUpdated(player=env.actor, display_name=row.display_name, language=row.language)
        envelope = EventEnvelope(
            message_id=f"profile:{env.message_id}", game_id=env.game_id, seq=0, occurred_at=utcnow(),
            audience=audience_model(Audience.to(env.actor)), caused_by=env.message_id,
            people={env.actor: person}, event=body)
        channels = tuple(sorted((channels_of(self.channels, env.actor) | extra) & self.channels.routed))
        await self._commit(game_id=env.game_id, message_id=env.message_id, outcome="accepted",
                                events=[(envelope, channels)])

    async def _invite(self, env: CommandEnvelope, loaded: LoadedGame | None) -> None:
        """The host invites someone to the lobby: both hear ``player_invited`` (outside the game's
        stream, not stored in it); the invitee's gateway asks them, and they join with ``join``."""
        if loaded is None:
            await self._reply_rejected(env, None, "unknown_game", {}, "There is no such game.")
            return
        invitee = env.command.player
        refusal = _invite_refusal(loaded.state, env.actor, invitee)
        if refusal is not None:
            await self._reply_rejected(env, loaded, *refusal)
            return
        readers = (env.actor, invitee)
        envelope = EventEnvelope(
            message_id=f"invite:{env.message_id}", game_id=env.game_id, seq=0, occurred_at=utcnow(),
            audience=audience_model(Audience.to(*readers)), caused_by=env.message_id, readers=readers,
            people=await self._people(readers), event=PlayerInvited(by=env.actor, player=invitee))
        channels = tuple(sorted((channels_of(self.channels, env.actor) | channels_of(self.channels, invitee)
                                 | {env.channel}) & self.channels.routed))
        await self._commit(game_id=env.game_id, message_id=env.message_id, outcome="accepted",
                           events=[(envelope, channels)])


def _invite_refusal(state, host: str, invitee: str) -> tuple[Reason | str, dict, str] | None:
    """Why ``host`` may not invite ``invitee`` now (reason, params, English sentence), if they may not."""
    if host != state.host:
        refusal = reject(Reason.NOT_HOST)
    elif state.phase is not Phase.LOBBY:
        refusal = reject(Reason.WRONG_PHASE, phase=state.phase)
    elif not invitable(invitee):
        return "malformed", {"player": invitee}, "Only an email player (mail:<lower-cased address>) can be invited."
    elif invitee in state.players:
        refusal = reject(Reason.ALREADY_JOINED, player=invitee)
    elif len(state.players) >= state.options.max_players:
        refusal = reject(Reason.LOBBY_FULL, max=state.options.max_players)
    else:
        return None
    return refusal.reason, refusal.params, refusal.message
