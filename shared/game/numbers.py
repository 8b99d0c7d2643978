"""The rules' numbers in one place (docs/rules.md sections 1, 2 and 7).

Nothing else in the core hard-codes a team size, an evil count or the
two-fail quest: it asks this table.
"""

from __future__ import annotations

from .model import Role

MIN_PLAYERS = 5
MAX_PLAYERS = 12

#: players -> (good, evil)
TEAMS: dict[int, tuple[int, int]] = {
    5: (3, 2),
    6: (4, 2),
    7: (4, 3),
    8: (5, 3),
    9: (6, 3),
    10: (6, 4),
    11: (7, 4),
    12: (8, 4),
}

#: players -> team size of quests 1..5
QUEST_SIZES: dict[int, tuple[int, int, int, int, int]] = {
    5: (2, 3, 2, 3, 3),
    6: (2, 3, 4, 3, 4),
    7: (2, 3, 3, 4, 4),
    8: (3, 4, 4, 5, 5),
    9: (3, 4, 4, 5, 5),
    10: (3, 4, 4, 5, 5),
    11: (3, 4, 4, 5, 5),
    12: (4, 5, 5, 6, 6),
}

#: The starred quest: quest 4 needs two fail cards from this many players on.
TWO_FAIL_QUEST = 4
TWO_FAIL_MIN_PLAYERS = 7

QUESTS_TO_WIN = 3
PROPOSALS_PER_QUEST = 5  # the fifth rejection (or proposal) is the hammer

#: Lady of the Lake is used after these quests (at most three uses).
LADY_QUESTS = (2, 3, 4)
#: Lancelot variant 1 draws a loyalty card at the start of these quests.
LANCELOT_DRAW_QUESTS = (3, 4, 5)
#: Loyalty decks as (no change, switch).
LANCELOT_DECKS = {"forum": (3, 2), "boxed": (5, 2)}
LANCELOT_V2_DECK = (5, 2)

#: Recommended special evil roles besides the Assassin (ru/nl table; 11-12
#: extend the 10-player set, as the fr seed has no table of its own).
STANDARD_EVIL: dict[int, tuple[Role, ...]] = {
    5: (Role.MORGANA,),
    6: (Role.MORGANA,),
    7: (Role.MORGANA, Role.MORDRED),
    8: (Role.MORGANA, Role.MORDRED),
    9: (Role.MORGANA, Role.MORDRED),
    10: (Role.MORGANA, Role.MORDRED, Role.OBERON),
    11: (Role.MORGANA, Role.MORDRED, Role.OBERON),
    12: (Role.MORGANA, Role.MORDRED, Role.OBERON),
}
STANDARD_GOOD: tuple[Role, ...] = (Role.PERCIVAL,)

#: Who takes the shot when no Assassin card could be dealt (fa seed).
SHOOTER_ORDER = (Role.ASSASSIN, Role.MORGANA, Role.MORDRED)

#: Deadlines, in seconds.
MIN_TIMER = 30
MAX_TIMER = 14 * 24 * 3600
HOUR = 3600
MINUTE = 60


def quest_size(players: int, quest: int) -> int:
    return QUEST_SIZES[players][quest - 1]


def fails_needed(players: int, quest: int) -> int:
    """How many fail cards make quest number ``quest`` fail."""
    if quest == TWO_FAIL_QUEST and players >= TWO_FAIL_MIN_PLAYERS:
        return 2
    return 1

#: Bounds of the options about absent players.
MAX_SEAT_OPENS_AFTER = 10
MAX_EXCUSED_ABSENCES = 10
#: At most this many spectators follow one game.
MAX_SPECTATORS = 50
#: A resumed phase has at least this long (a phase paused in its last seconds).
MIN_RESUMED_SECONDS = 30
