"""Commands that are not moves of the game: the board, reminders, a person's profile, invitations,
and a player's own role card and open choices sent to them again.

Each is a handler in ``SideCommands.handlers``, keyed by its command type. The board, a profile, an
invitation, a role card and the choices asked for again are answered outside the game's stream
(``seq`` 0), to the one who asked alone; a reminder is one of the game's events.
"""

from __future__ import annotations

from avalon.shared.protocol import (
    EVENT_MODELS,
    BoardShown,
    CommandEnvelope,
    PhaseReminder,
    PlayerInvited,
    ProfileUpdated,
    QuestLine,
    audience_model,
    plausible_address,
    utcnow,
)
from avalon.services.engine.rules import Audience, Phase, Reason, night_knowledge, view
from avalon.shared.game import events as core_events
from avalon.shared.game.errors import reject

from .batcher import StagedBatch
from .cache import GameCache
from .envelopes import Envelopes
from .moves import UNKNOWN_GAME
from .people import People, person_of
from .record_commands import RecordCommands
from .routing import choices_for
from .store import LoadedGame, Store


def invitable(player: str) -> bool:
    """Whether an invitation can reach ``player``: an email player, ``mail:`` and a plausible,
    lower-cased address (the id the email gateway gives whoever writes from that address)."""
    address = player.removeprefix("mail:")
    return player.startswith("mail:") and plausible_address(address) and address == address.lower()


class SideCommands:
    def __init__(self, store: Store, games: GameCache, people: People, envelopes: Envelopes) -> None:
        self.store = store
        self.games = games
        self.people = people
        self.envelopes = envelopes
        self.handlers = {"show_board": self.show_board, "remind_phase": self.remind,
                         "update_profile": self.update_profile, "invite": self.invite,
                         "show_role": self.show_role, "show_choices": self.show_choices,
                         **RecordCommands(store, people, envelopes).handlers}  # the record's: record_commands.py

    async def show_board(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        if loaded is None:
            batch.reject(env, self.envelopes.rejection(env, *UNKNOWN_GAME))
            return
        state = loaded.state
        v = view(state, None)
        body = BoardShown(
            phase=v.phase, phase_id=v.phase_id, players=v.players, leader=v.leader, quest=v.quest,
            vote_track=v.vote_track, quest_sizes=v.quest_sizes, fails_needed=v.fails_needed,
            quest_results=tuple(QuestLine(quest=r.quest, fails=r.fails, failed=r.failed) for r in v.quest_results),
            team=v.team, excalibur_holder=v.excalibur_holder, lady_holder=v.lady_holder, waiting_for=v.waiting_for,
            deadline_at=loaded.deadline_at,  # as decided, even if an earlier command of this batch moved it
            missed=state.missed, open_seats=tuple(state.players[i] for i in sorted(state.open_seats)),
            paused=state.paused)
        channels = self.envelopes.router.to(env.actor, via=env.channel)
        batch.accept(env, [self.envelopes.reply(env, "board", body, audience_model(Audience.to(env.actor)),
                                                channels)])

    async def show_role(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        """A seated player's role card again (``role_assigned`` as dealt), to them alone: they lost it, or
        were unreachable when it was dealt. Anyone else is refused; nobody else reads it."""
        refusal = _seated_refusal(loaded, env.actor)
        if refusal is not None:
            batch.reject(env, self.envelopes.rejection(env, *refusal))
            return
        state = loaded.state
        seat = state.seat_of[env.actor]
        knowledge = night_knowledge(state.roles, seat, state.options)
        role = state.roles[seat]
        body = EVENT_MODELS["role_assigned"](player=env.actor, role=role, team=role.team,
                                             knowledge=tuple((state.players[o], k) for o, k in knowledge))
        self._to_actor(env, batch, "role", body)

    async def show_choices(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        """What is open for the player now (``choices_offered`` of the open phase), to them alone: the
        offer they were sent while unreachable is lost. Nothing waiting for them: no answer."""
        refusal = _seated_refusal(loaded, env.actor)
        if refusal is not None:
            batch.reject(env, self.envelopes.rejection(env, *refusal))
            return
        offer = choices_for(loaded.state, env.actor)
        if not offer.choices:
            batch.ignore(env)
            return
        self._to_actor(env, batch, "choices", offer)

    def _to_actor(self, env: CommandEnvelope, batch: StagedBatch, kind: str, body) -> None:
        channels = self.envelopes.router.to(env.actor, via=env.channel)
        batch.accept(env, [self.envelopes.reply(env, kind, body, audience_model(Audience.to(env.actor)), channels)])

    async def remind(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        state = loaded.state if loaded else None
        if state is None or state.over or state.phase_id != env.phase_id:
            batch.ignore(env)
            return
        seq = loaded.version + 1
        body = PhaseReminder(phase=state.phase, phase_id=state.phase_id, seconds_left=env.command.seconds_left,
                             waiting_for=view(state, None).waiting_for)  # as the table may know it
        sent = dict(loaded.sent)
        event = self.envelopes.in_stream(env, loaded, sent, seq, body, audience_model(core_events.PUBLIC),
                                         state.players, at=utcnow())
        batch.accept(env, [event], state=state, expected_version=loaded.version)
        self.games.remember(env.game_id, LoadedGame(state, seq, loaded.seed, loaded.origin_channel,
                                                    loaded.deadline_at, sent))

    async def update_profile(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        c = env.command
        row = await self.store.upsert_player(env.actor, display_name=c.display_name, language=c.language,
                                             time_zone=c.time_zone, addresses=c.all_addresses())
        channels = self.envelopes.router.reach(env.actor, row.addresses)
        person = person_of(row)
        self.people.remember(env.actor, person)  # named so in this game's and later batches' events
        body = ProfileUpdated(player=env.actor, display_name=row.display_name, language=row.language)
        batch.accept(env, [self.envelopes.reply(env, "profile", body, audience_model(Audience.to(env.actor)),
                                                channels, people={env.actor: person})])

    async def invite(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        """The host invites someone to the lobby: both hear ``player_invited`` (outside the game's
        stream, not stored in it); the invitee's gateway asks them, and they join with ``join``."""
        if loaded is None:
            batch.reject(env, self.envelopes.rejection(env, *UNKNOWN_GAME))
            return
        invitee, seat = env.command.player, env.command.seat
        refusal = _invite_refusal(loaded.state, env.actor, invitee, seat)
        if refusal is not None:
            batch.reject(env, self.envelopes.rejection(env, *refusal))
            return
        readers = (env.actor, invitee)
        channels = self.envelopes.router.to(env.actor, invitee, via=env.channel)
        batch.accept(env, [self.envelopes.reply(
            env, "invite", PlayerInvited(by=env.actor, player=invitee, table=env.command.table,
                                                seat=seat), audience_model(Audience.to(*readers)),
            channels, readers=readers, people=await self.people.of(readers))])


def _seated_refusal(loaded: LoadedGame | None, actor: str) -> tuple[Reason | str, dict, str] | None:
    """Why ``actor`` has no role card or choices to be sent again in this game, if they have none."""
    if loaded is None:
        return UNKNOWN_GAME
    state = loaded.state
    if state.over:
        refusal = reject(Reason.GAME_OVER)
    elif not state.started:
        refusal = reject(Reason.WRONG_PHASE, phase=state.phase)
    elif actor not in state.seat_of:
        refusal = reject(Reason.NOT_A_PLAYER)
    else:
        return None
    return refusal.reason, refusal.params, refusal.message


def _invite_refusal(state, host: str, invitee: str, seat: str = "") -> tuple[Reason | str, dict, str] | None:
    """Why ``host`` may not invite ``invitee`` now (reason, params, English sentence), if they may not:
    to the lobby, or (``seat``) to take that player's open seat in a game under way."""
    if host != state.host:
        refusal = reject(Reason.NOT_HOST)
    elif state.over:
        refusal = reject(Reason.GAME_OVER)
    elif seat and not state.started:
        refusal = reject(Reason.NOT_STARTED)
    elif not seat and state.phase is not Phase.LOBBY:
        refusal = reject(Reason.WRONG_PHASE, phase=state.phase)
    elif not invitable(invitee):
        return "malformed", {"player": invitee}, "Only an email player (mail:<lower-cased address>) can be invited."
    elif seat and state.seat_of.get(seat) not in state.open_seats:
        refusal = reject(Reason.SEAT_NOT_OPEN, player=seat)
    elif seat and invitee in state.seat_of:
        refusal = reject(Reason.ALREADY_SEATED)
    elif seat:
        return None
    elif invitee in state.players:
        refusal = reject(Reason.ALREADY_JOINED, player=invitee)
    elif len(state.players) >= state.options.max_players:
        refusal = reject(Reason.LOBBY_FULL, max=state.options.max_players)
    else:
        return None
    return refusal.reason, refusal.params, refusal.message
