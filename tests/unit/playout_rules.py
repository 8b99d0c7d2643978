"""The rules the playout tests check against, written from docs/rules.md, not from the engine.

Nothing here imports the engine's tables, ``knows`` or ``cast_for``: these are the
test's own copies of docs/rules.md sections 1, 2, 7, 8 and 9 (and the README's choices
where the rule texts are silent), so a wrong number in the engine shows up as a
disagreement instead of being checked against itself.
"""

from __future__ import annotations

from collections import Counter

from avalon.shared.game.model import Knowledge, Role, Team

R = Role
K = Knowledge

# -- docs/rules.md section 1 -------------------------------------------------

#: players -> (good, evil)
TEAM_SIZES = {5: (3, 2), 6: (4, 2), 7: (4, 3), 8: (5, 3), 9: (6, 3), 10: (6, 4), 11: (7, 4), 12: (8, 4)}

#: players -> team size of quests 1..5
QUEST_TEAM = {
    5: (2, 3, 2, 3, 3),
    6: (2, 3, 4, 3, 4),
    7: (2, 3, 3, 4, 4),
    8: (3, 4, 4, 5, 5),
    9: (3, 4, 4, 5, 5),
    10: (3, 4, 4, 5, 5),
    11: (3, 4, 4, 5, 5),
    12: (4, 5, 5, 6, 6),
}


def fails_to_fail(players: int, quest: int) -> int:
    """The starred quest 4 needs two fail cards from 7 players on; every other quest one."""
    return 2 if quest == 4 and players >= 7 else 1


# -- docs/rules.md section 2 and 8: roles, teams and the night ---------------

GOOD_ROLES = {R.MERLIN, R.PERCIVAL, R.LOYAL_SERVANT, R.GOOD_LANCELOT}
EVIL_ROLES = {R.ASSASSIN, R.MORGANA, R.MORDRED, R.OBERON, R.MINION, R.EVIL_LANCELOT}


def starting_team(role: Role) -> Team:
    return Team.GOOD if role in GOOD_ROLES else Team.EVIL


#: The evil players who know each other ("as Assassin"); Oberon and the evil
#: Lancelot are not among them.
_EVIL_CIRCLE = {R.ASSASSIN, R.MORGANA, R.MORDRED, R.MINION}


def night_sees(viewer: Role, other: Role, lancelot: str, oberon_known_to_evil: bool) -> Knowledge | None:
    """What ``viewer`` learns about ``other`` in the night. ``lancelot``: "none", "1", "2", "3"."""
    if viewer is R.MERLIN:
        # every evil player except Mordred; Oberon included; the evil Lancelot
        # is an evil player at the start (README).
        if other in EVIL_ROLES and other is not R.MORDRED:
            return K.EVIL
        return None
    if viewer is R.PERCIVAL:
        return K.MERLIN_OR_MORGANA if other in (R.MERLIN, R.MORGANA) else None
    if viewer in _EVIL_CIRCLE:
        if other in _EVIL_CIRCLE:
            return K.EVIL
        if other is R.OBERON:
            return K.EVIL if oberon_known_to_evil else None  # vi night script
        if other is R.EVIL_LANCELOT:
            return K.EVIL_LANCELOT  # variant 1 (and, per README, 2 and 3)
        return None
    if viewer is R.EVIL_LANCELOT:
        if lancelot != "3":
            return None  # variants 1 and 2: he knows nobody
        if other is R.GOOD_LANCELOT:
            return K.OTHER_LANCELOT
        if other in _EVIL_CIRCLE:
            return K.EVIL  # variant 3: he knows the evil team
        if other is R.OBERON and oberon_known_to_evil:
            return K.EVIL
        return None
    if viewer is R.GOOD_LANCELOT:
        return K.OTHER_LANCELOT if lancelot == "3" and other is R.EVIL_LANCELOT else None
    return None  # Loyal Servant, Oberon, Minion handled above


def expected_night(seats: tuple[str, ...], roles: tuple[Role, ...], lancelot: str,
                   oberon_known_to_evil: bool) -> dict[str, frozenset]:
    out = {}
    for p, mine in zip(seats, roles):
        known = set()
        for q, theirs in zip(seats, roles):
            if q != p:
                k = night_sees(mine, theirs, lancelot, oberon_known_to_evil)
                if k is not None:
                    known.add((q, k))
        out[p] = frozenset(known)
    return out


# -- docs/rules.md section 2: which cards are dealt ---------------------------

#: Recommended evil roles (ru/nl) for the standard set, Assassin included.
STANDARD_EVIL = {
    5: (R.ASSASSIN, R.MORGANA),
    6: (R.ASSASSIN, R.MORGANA),
    7: (R.ASSASSIN, R.MORGANA, R.MORDRED),
    8: (R.ASSASSIN, R.MORGANA, R.MORDRED),
    9: (R.ASSASSIN, R.MORGANA, R.MORDRED),
    10: (R.ASSASSIN, R.MORGANA, R.MORDRED, R.OBERON),
}

#: Who takes the shot when no Assassin card could be dealt (fa seed).
FALLBACK_SHOOTERS = (R.ASSASSIN, R.MORGANA, R.MORDRED)


def role_set_fits(roles: tuple[Role, ...] | None, players: int, lancelot: bool) -> bool:
    """Whether a host's selection is playable (docs/rules.md section 2)."""
    if roles is None:
        return True
    good_seats, evil_seats = TEAM_SIZES[players]
    good = 1 + (R.PERCIVAL in roles) + lancelot
    evil = sum(1 for r in roles if r in EVIL_ROLES) + lancelot
    if good > good_seats or evil > evil_seats:
        return False
    return evil < evil_seats or R.MORGANA in roles or R.MORDRED in roles


def expected_cast(roles: tuple[Role, ...] | None, players: int, lancelot: bool) -> Counter | None:
    """The exact multiset of role cards, or ``None`` where docs/rules.md leaves it open
    (the standard set with Lancelot, or for 11-12 players)."""
    good_seats, evil_seats = TEAM_SIZES[players]
    if roles is None:
        if lancelot or players not in STANDARD_EVIL:
            return None
        good = [R.MERLIN, R.PERCIVAL]
        evil = list(STANDARD_EVIL[players])
    else:
        good = [R.MERLIN] + [r for r in roles if r in GOOD_ROLES]
        evil = [r for r in roles if r in EVIL_ROLES]
        if lancelot:
            good.append(R.GOOD_LANCELOT)
            evil.append(R.EVIL_LANCELOT)
        if len(evil) < evil_seats:
            evil.append(R.ASSASSIN)
    good += [R.LOYAL_SERVANT] * (good_seats - len(good))
    evil += [R.MINION] * (evil_seats - len(evil))
    return Counter(good + evil)


def expected_shooter_role(dealt: tuple[Role, ...]) -> Role:
    return next(r for r in FALLBACK_SHOOTERS if r in dealt)


# -- docs/rules.md sections 3, 7, 9: what each preset does --------------------

HOUR = 3600

#: preset -> per-phase facts a player is told (docs/rules.md section 7 and 9)
FORUM_TIMERS = {"proposal": 48 * HOUR, "vote": 24 * HOUR, "quest": 24 * HOUR, "assassination": 48 * HOUR}

#: Lancelot variant 1 loyalty decks as (no change, switch): forum 3+2, boxed 5+2.
V1_DECK = {"forum": (3, 2), "classic": (5, 2), "online": (5, 2)}
V1_DRAW_QUESTS = (3, 4, 5)
LADY_AFTER_QUESTS = (2, 3, 4)
