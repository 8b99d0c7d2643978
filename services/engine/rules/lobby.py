"""Lobby and setup: create, join, leave, settings, start (deal), cancel."""

from __future__ import annotations

import functools
import random

from avalon.shared.game import commands as cmd
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason, Rejection, reject
from .flow import Tx, start_quest
from .knowledge import night_knowledge
from avalon.shared.game.model import Lancelot, Role
from avalon.shared.game.options import Options, cast_for, check_options
from avalon.shared.game.numbers import LANCELOT_DECKS, LANCELOT_V2_DECK, MIN_PLAYERS, fails_needed, quest_size

MAX_ID_LENGTH = 200
_CARD_ORDER = {role: i for i, role in enumerate(Role)}


def _in_card_order(roles) -> tuple[Role, ...]:
    return tuple(sorted(roles, key=_CARD_ORDER.__getitem__))


def would_deal(options: Options, players: int) -> tuple[Role, ...]:
    """The role cards a start would deal with ``players`` in the lobby (docs/rules.md section 2).

    Counted as at least MIN_PLAYERS and at most ``max_players``, so a lobby still
    filling up shows the smallest table's cards; empty when the options cannot
    be dealt at that count (the start would be refused with the reason).
    """
    return _deals(options, min(max(players, MIN_PLAYERS), options.max_players))


@functools.lru_cache(maxsize=1024)  # every join asks again, nearly always with options seen before
def _deals(options: Options, players: int) -> tuple[Role, ...]:
    cast = cast_for(options, players)
    return () if isinstance(cast, Rejection) else _in_card_order(cast.roles)


def _valid_id(player: str) -> bool:
    """Player ids are the gateways' (``tg:42``); ``@`` ids are the engine's own (the scheduler)."""
    return bool(player) and len(player) <= MAX_ID_LENGTH and not player.startswith("@")


def create(tx: Tx, c: cmd.CreateGame) -> Rejection | None:
    if tx.s.phase is not None:
        return reject(Reason.GAME_ALREADY_CREATED)
    problem = check_options(c.options)
    if problem:
        return problem
    if not _valid_id(c.actor):
        return reject(Reason.UNKNOWN_PLAYER, player=c.actor)
    tx.emit(ev.GameCreated(game_id=c.game_id, host=c.actor, seed=c.seed, options=c.options, table=c.table))
    tx.emit(ev.LobbyOpened(host=c.actor, options=c.options, deals=would_deal(c.options, 0)))
    tx.emit(ev.PlayerJoined(player=c.actor, deals=would_deal(c.options, 1)))
    return None


def join(tx: Tx, c: cmd.Join) -> Rejection | None:
    s = tx.s
    if c.actor in s.players:
        return reject(Reason.ALREADY_JOINED)
    if not _valid_id(c.actor):
        return reject(Reason.UNKNOWN_PLAYER, player=c.actor)
    if len(s.players) >= s.options.max_players:
        return reject(Reason.LOBBY_FULL, max=s.options.max_players)
    tx.emit(ev.PlayerJoined(player=c.actor, deals=would_deal(s.options, len(s.players) + 1)))
    return None


def leave(tx: Tx, c: cmd.Leave) -> Rejection | None:
    s = tx.s
    if c.actor not in s.players:
        return reject(Reason.NOT_A_PLAYER)
    if c.actor == s.host:
        return reject(Reason.HOST_CANNOT_LEAVE)
    tx.emit(ev.PlayerLeft(player=c.actor, deals=would_deal(s.options, len(s.players) - 1)))
    return None


def change_options(tx: Tx, c: cmd.ChangeOptions) -> Rejection | None:
    s = tx.s
    if c.actor != s.host:
        return reject(Reason.NOT_HOST)
    problem = check_options(c.options)
    if problem:
        return problem
    if len(s.players) > c.options.max_players:
        return reject(Reason.TOO_MANY_PLAYERS, max=c.options.max_players, count=len(s.players))
    tx.emit(ev.OptionsChanged(options=c.options, deals=would_deal(c.options, len(s.players))))
    return None


def cancel(tx: Tx, c: cmd.CancelGame) -> Rejection | None:
    if c.actor != tx.s.host:
        return reject(Reason.NOT_HOST)
    tx.emit(ev.GameCancelled(by=c.actor))
    return None


def start(tx: Tx, c: cmd.StartGame) -> Rejection | None:
    s = tx.s
    if c.actor != s.host:
        return reject(Reason.NOT_HOST)
    options = s.options
    cast = cast_for(options, len(s.players))
    if isinstance(cast, Rejection):
        return cast
    # All chance lives here, drawn from the game's own seeded generator.
    rng = random.Random(s.seed)
    seats = list(s.players)
    rng.shuffle(seats)
    roles = list(cast.roles)
    rng.shuffle(roles)
    first_leader = rng.randrange(len(seats))
    deck: list[bool] = []
    if options.lancelot is Lancelot.V1:
        keep, switch = LANCELOT_DECKS[options.lancelot_deck.value]
        deck = [False] * keep + [True] * switch
        rng.shuffle(deck)
    elif options.lancelot is Lancelot.V2:
        keep, switch = LANCELOT_V2_DECK
        deck = [False] * keep + [True] * switch
        rng.shuffle(deck)
        deck = deck[:5]
    n = len(seats)
    shooter = seats[roles.index(cast.shooter_role)]
    tx.emit(ev.Dealt(seats=tuple(seats), roles=tuple(roles), first_leader=seats[first_leader],
                     shooter=shooter, lancelot_deck=tuple(deck)))
    s = tx.s
    tx.emit(ev.GameStarted(
        seats=s.players,
        first_leader=s.players[first_leader],
        roles_in_play=_in_card_order(cast.roles),
        lady_holder=s.players[s.lady_holder] if options.lady else None,
        options=options,
        quest_sizes=tuple(quest_size(n, q) for q in range(1, 6)),
        fails_needed=tuple(fails_needed(n, q) for q in range(1, 6)),
    ))
    role_tuple = s.roles
    for seat, player in enumerate(s.players):
        knowledge = night_knowledge(role_tuple, seat, options)
        tx.emit(ev.RoleAssigned(
            audience=ev.Audience.to(player),
            player=player,
            role=role_tuple[seat],
            team=role_tuple[seat].team,
            knowledge=tuple((s.players[o], k) for o, k in knowledge),
        ))
    if options.lancelot is Lancelot.V2:
        tx.emit(ev.LoyaltyScheduleRevealed(schedule=s.lancelot_deck))
    start_quest(tx, first_leader)
    return None
