"""Reply tokens: what lets a mail from a player be tied to a game without trusting its From.

Every mail to a player of a game carries a token made for that (game, player address): in
``Reply-To: narrator+TOKEN@domain`` and in ``References``. A reply carries it back; the gateway
reads the game from it and checks it was minted for the address the reply comes from.

A token is ``<game id in base32, lower case, no padding>-<16 base32 chars of HMAC-SHA256>``:
only ``[a-z2-7-]``, so it survives mail systems that lower-case local parts (it is read back
case-insensitively). The MAC is 80 bits, keyed with ``EMAIL_SECRET``, over the game id and the
lower-cased address. Note: a local part is limited to 64 characters by RFC 5321; with the
``narrator+`` prefix that holds game ids up to 23 characters (``tg-1001234567_42`` is 16). Most
servers accept longer local parts, and a token stays under 113 characters for a 60-character id.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re

MAC_CHARS = 16  # 80 bits of base32
_MAC_BYTES = MAC_CHARS * 5 // 8
_GAME_ID = re.compile(r"[A-Za-z0-9_:\-.]{1,64}")
_B32 = re.compile(r"[a-z2-7]+")
_CONTEXT = b"avalon-reply-token\x00"


def _encode_game(game_id: str) -> str:
    return base64.b32encode(game_id.encode("ascii")).decode("ascii").rstrip("=").lower()


def _decode_game(part: str) -> str | None:
    if not _B32.fullmatch(part):
        return None
    try:
        raw = base64.b32decode(part.upper() + "=" * (-len(part) % 8))
        game_id = raw.decode("ascii")
    except (binascii.Error, ValueError):
        return None
    if not _GAME_ID.fullmatch(game_id):
        return None
    # Only the one canonical spelling: another one (different unused bits in the last character)
    # would decode to the same game, so a flipped character could go unnoticed.
    if _encode_game(game_id) != part:
        return None
    return game_id


def _normal_address(address: str) -> bytes:
    return address.strip().lower().encode("utf-8", "surrogatepass")


class Tokens:
    """Makes and checks reply tokens with one secret (``EMAIL_SECRET``, at least 16 bytes)."""

    def __init__(self, secret: str | bytes) -> None:
        key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if len(key) < 16:
            raise ValueError("the email secret must be at least 16 bytes long")
        self._key = key

    def _mac(self, game_id: str, address: str) -> str:
        message = _CONTEXT + game_id.encode("ascii") + b"\x00" + _normal_address(address)
        digest = hmac.new(self._key, message, hashlib.sha256).digest()[:_MAC_BYTES]
        return base64.b32encode(digest).decode("ascii").lower()

    def make(self, game_id: str, address: str) -> str:
        """The token for ``game_id`` and the player at ``address`` (compared lower-cased)."""
        if not _GAME_ID.fullmatch(game_id):
            raise ValueError(f"not a game id a token can carry: {game_id!r}")
        return f"{_encode_game(game_id)}-{self._mac(game_id, address)}"

    def game_of(self, token: str) -> str | None:
        """The game id the token names, None when it is malformed. The MAC is not checked."""
        parsed = self._split(token)
        return parsed[0] if parsed else None

    def check(self, token: str, address: str) -> str | None:
        """The game id iff the token was made for (that game, ``address``), else None."""
        parsed = self._split(token)
        if parsed is None or not isinstance(address, str):
            return None
        game_id, mac = parsed
        if not hmac.compare_digest(self._mac(game_id, address), mac):
            return None
        return game_id

    @staticmethod
    def _split(token: str) -> tuple[str, str] | None:
        if not isinstance(token, str) or len(token) > 200:
            return None
        game_part, dash, mac = token.strip().lower().rpartition("-")
        if not dash or len(mac) != MAC_CHARS or not _B32.fullmatch(mac):
            return None
        game_id = _decode_game(game_part)
        return (game_id, mac) if game_id is not None else None
