"""Who sees whom in the night (docs/rules.md sections 2 and 8): one small table.

``knows(viewer, other, options)`` is what a player holding ``viewer`` learns
about a player holding ``other`` at the start, or ``None`` for nothing.
Knowledge is fixed at the deal; a later Lancelot switch does not change it.
"""

from __future__ import annotations

from avalon.shared.game.model import Knowledge, Lancelot, Role
from avalon.shared.game.options import Options

_EVIL_WHO_SEE_EACH_OTHER = frozenset({Role.ASSASSIN, Role.MORGANA, Role.MORDRED, Role.MINION})
_MERLIN_SEES = frozenset({Role.ASSASSIN, Role.MORGANA, Role.OBERON, Role.MINION, Role.EVIL_LANCELOT})


def knows(viewer: Role, other: Role, options: Options) -> Knowledge | None:
    variant = options.lancelot
    if viewer is Role.MERLIN:
        # every evil player but Mordred, Oberon and the evil Lancelot included
        return Knowledge.EVIL if other in _MERLIN_SEES else None
    if viewer is Role.PERCIVAL:
        return Knowledge.MERLIN_OR_MORGANA if other in (Role.MERLIN, Role.MORGANA) else None
    if viewer in _EVIL_WHO_SEE_EACH_OTHER:
        if other in _EVIL_WHO_SEE_EACH_OTHER:
            return Knowledge.EVIL
        if other is Role.OBERON:
            return Knowledge.EVIL if options.oberon_known_to_evil else None
        if other is Role.EVIL_LANCELOT:
            return Knowledge.EVIL_LANCELOT  # all three variants: evil knows its Lancelot
        return None
    if viewer is Role.EVIL_LANCELOT:
        if variant is not Lancelot.V3:
            return None  # variants 1 and 2: he knows nobody
        if other is Role.GOOD_LANCELOT:
            return Knowledge.OTHER_LANCELOT
        if other in _EVIL_WHO_SEE_EACH_OTHER:
            return Knowledge.EVIL
        if other is Role.OBERON and options.oberon_known_to_evil:
            return Knowledge.EVIL
        return None
    if viewer is Role.GOOD_LANCELOT:
        if variant is Lancelot.V3 and other is Role.EVIL_LANCELOT:
            return Knowledge.OTHER_LANCELOT
        return None
    return None  # loyal servants, Oberon


def night_knowledge(roles: tuple[Role, ...], seat: int, options: Options) -> tuple[tuple[int, Knowledge], ...]:
    """What the player in ``seat`` learned in the night, as (seat, knowledge) pairs."""
    mine = roles[seat]
    out = []
    for other_seat, other in enumerate(roles):
        if other_seat != seat:
            k = knows(mine, other, options)
            if k is not None:
                out.append((other_seat, k))
    return tuple(out)
