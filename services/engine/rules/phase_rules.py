"""What one phase's entry in the phase table holds (``phases.PHASES``).

Like a phase in boardgame.io's game config, an entry keeps together everything
that is the phase's own: the commands it accepts, who it waits for, what each
player may do in it, its timer, and what a missed deadline does. ``decide``,
``legal_commands``, ``pending_players``, ``open_phase`` and ``timed_out`` read
the entry; none of them knows a phase by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from avalon.shared.game.model import Card, CommandKind, MissedRule
from .state import GameState

K = CommandKind

#: Taken in every phase of a started game: the host may cancel, the scheduler may say time is up.
IN_GAME = frozenset({K.CANCEL_GAME, K.PHASE_TIMED_OUT})


@dataclass(frozen=True, slots=True)
class Legal:
    """One command a player may send now, with the choices it takes.

    ``targets``: the players that may be picked; ``count``: how many (a team);
    ``cards``: the quest cards allowed; ``excalibur``: the proposal must also
    hand Excalibur to a team member other than the leader; ``optional``: the
    command may name no target (leave Excalibur sheathed).
    """

    kind: CommandKind
    targets: tuple[str, ...] = ()
    count: int = 0
    cards: tuple[Card, ...] = ()
    excalibur: bool = False
    optional: bool = False


CANCEL = Legal(K.CANCEL_GAME)

#: The seats a phase waits for, given the state and the leader it opens (or opened) with.
Actors = Callable[[GameState, int], tuple[int, ...]]
#: What a player (by id) may do now.
Offers = Callable[[GameState, str], tuple[Legal, ...]]
#: What one seated player may do now, besides the host's cancel.
SeatOffers = Callable[[GameState, int], tuple[Legal, ...]]
#: The missed-deadline rule the phase announces when it opens.
MissedRuleOf = Callable[[GameState], MissedRule]
#: What a missed deadline does, given the open transaction (``flow.Tx``, which reads this table,
#: so it is not imported here) and the seats that had not acted.
OnTimeout = Callable[[Any, tuple[int, ...]], None]


def nobody(s: GameState, leader: int) -> tuple[int, ...]:
    return ()


def never(s: GameState) -> bool:
    return False


def always(rule: MissedRule) -> MissedRuleOf:
    """A phase whose missed deadline does the same whatever the options."""
    return lambda s: rule


def in_game(offers_to_seat: SeatOffers) -> Offers:
    """A started game's offers: the host may always cancel; a seated player gets the phase's own."""

    def offers(s: GameState, player: str) -> tuple[Legal, ...]:
        seat = s.seat_of.get(player)
        own = offers_to_seat(s, seat) if seat is not None else ()
        return (CANCEL, *own) if player == s.host else own

    return offers


@dataclass(frozen=True, slots=True)
class PhaseRules:
    """One phase's rules.

    ``accepts``: the command kinds ``decide`` lets through (a handler may still
    refuse one); ``actors``: who the phase waits for (the leader, every player
    once, each team member once...); ``actors_hidden``: whether that must stay
    secret from the table; ``offers``: what a player may do now, from which the
    gateways draw their buttons; ``timer``: the ``Timers`` field of its
    deadline (``None``: no deadline); ``missed_rule``: what a missed deadline
    will do, announced when the phase opens; ``on_timeout``: doing it, once the
    deadline has been reported missed (``None``: nothing to do).
    """

    accepts: frozenset[CommandKind]
    offers: Offers
    actors: Actors = nobody
    actors_hidden: Callable[[GameState], bool] = never
    timer: str | None = None
    missed_rule: MissedRuleOf = always(MissedRule.NONE)
    on_timeout: OnTimeout | None = None
