"""A game's code: a short name for a game that people can read out and type (``7KQ2-M9XD``), shown at
the end of a game and in a group's history, and taken by ``avalon export``.

It is the game's id hashed (BLAKE2b, 40 bits) in Crockford's base 32: the same id always gives the
same code, on every floor, without asking the database. Two games share a code about once in 2.2
million pairs of games (50,000 finished games: about one pair); ``avalon export`` then names both ids.
Typed codes are read leniently: any case, with or without the dash, O for 0 and I or L for 1.
"""

from __future__ import annotations

import hashlib

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford: no I, L, O, U
_TYPED = str.maketrans({"O": "0", "I": "1", "L": "1"})


def game_code(game_id: str) -> str:
    number = int.from_bytes(hashlib.blake2b(game_id.encode(), digest_size=5).digest(), "big")
    chars = "".join(ALPHABET[(number >> shift) & 31] for shift in range(35, -1, -5))
    return f"{chars[:4]}-{chars[4:]}"


def read_code(text: str) -> str | None:
    """A code as typed, in its shown form; None when it cannot be one."""
    plain = text.strip().upper().replace("-", "").replace(" ", "").translate(_TYPED)
    if len(plain) != 8 or any(c not in ALPHABET for c in plain):
        return None
    return f"{plain[:4]}-{plain[4:]}"
