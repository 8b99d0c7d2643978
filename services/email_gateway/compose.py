"""The outgoing mail: headers that thread a game's mails per player and carry the reply token,
and the text + HTML body, as an ``EmailMessage`` ready for SMTP.

Message-IDs are ours: ``<avalon.GAME.PHASE.RANDOM@domain>`` where GAME is the game id with any
character outside ``[A-Za-z0-9_-]`` written ``=XX`` (a Message-ID may not hold ``:`` and its dots
separate the fields), so that a reply's ``In-Reply-To`` tells the gateway which game and phase it
answers. Every mail of a game to a player points at one stable thread root (``In-Reply-To`` and
first in ``References``) so mail programs keep one thread per game per player.
"""

from __future__ import annotations

import base64
import hashlib
import quopri
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from email import policy
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime
from urllib.parse import quote

_NO_GAME = "x"
_KEEP = re.compile(r"[A-Za-z0-9_-]")
_ESCAPED = re.compile(r"=([0-9A-F]{2})")
_OUR_ID = re.compile(r"avalon\.([A-Za-z0-9_=-]+)\.([0-9]{1,18})\.([a-z0-9]{1,64})@(.+)")
_HTML_TAG = re.compile(r"<html\b[^>]*>", re.IGNORECASE)
_DIR_ATTR = re.compile(r"\bdir\s*=", re.IGNORECASE)


@dataclass(frozen=True)
class Identity:
    """Who the narrator is on the wire."""

    address: str  # e.g. "narrator@example.org"
    name: str = "Avalon"  # the display name in From

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2]

    @property
    def local_part(self) -> str:
        return self.address.rpartition("@")[0]

    def reply_to(self, token: str) -> str:
        """``narrator+TOKEN@example.org``: where a player's reply goes, carrying the token."""
        return f"{self.local_part}+{token}@{self.domain}"


def _escape_game(game_id: str) -> str:
    if game_id == _NO_GAME:  # the spelling of "no game": a game really named so is escaped
        return "=78"
    return "".join(c if _KEEP.fullmatch(c) else "".join(f"={b:02X}" for b in c.encode()) for c in game_id)


def _unescape_game(text: str) -> str | None:
    try:
        return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text).encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None


def thread_root(identity: Identity, game_id: str, address: str) -> str:
    """The Message-ID (with <>) of the first mail of the thread of game ``game_id`` for ``address``:
    stable, so every mail of that game to that player references it and mail programs keep one
    thread per game per player."""
    digest = hashlib.sha256(f"{game_id}\x00{address.strip().lower()}".encode()).hexdigest()[:24]
    return f"<avalon-thread.{_escape_game(game_id)}.{digest}@{identity.domain}>"


def new_message_id(identity: Identity, game_id: str | None, phase_id: int | None) -> str:
    """<avalon.{game or 'x'}.{phase_id or 0}.{random}@domain>: our own id; the gateway reads the
    phase back."""
    game = _escape_game(game_id) if game_id else _NO_GAME
    return f"<avalon.{game}.{int(phase_id or 0)}.{secrets.token_hex(8)}@{identity.domain}>"


def phase_of_message_id(message_id: str, identity: Identity) -> tuple[str, int] | None:
    """(game_id, phase_id) from one of our Message-IDs (brackets optional), None if not ours."""
    if not isinstance(message_id, str):
        return None
    text = message_id.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1].strip()
    match = _OUR_ID.fullmatch(text)
    if match is None or match.group(4).lower() != identity.domain.lower():
        return None
    if match.group(1) == _NO_GAME:
        return None
    game_id = _unescape_game(match.group(1))
    if not game_id:
        return None
    return game_id, int(match.group(2))


def _one_line(value: str) -> str:
    return " ".join(value.split())


def _cte(text: str) -> str:
    """7bit for short ASCII lines; else the shorter of quoted-printable and base64 (so mail
    passes servers without 8BITMIME unchanged)."""
    lines = text.splitlines()
    if text.isascii() and all(len(line) <= 78 for line in lines):
        return "7bit"
    raw = text.encode("utf-8")
    qp = quopri.encodestring(raw)
    return "quoted-printable" if len(qp) <= len(base64.encodebytes(raw)) else "base64"


def _with_direction(html: str) -> str:
    """The page with ``dir="rtl"`` on its <html> element (or, for a fragment, around it)."""
    tag = _HTML_TAG.search(html)
    if tag is None:
        return f'<div dir="rtl">{html}</div>'
    if _DIR_ATTR.search(tag.group(0)):
        return html
    opened = tag.group(0)[:-1].rstrip("/ ") + ' dir="rtl">'
    return html[: tag.start()] + opened + html[tag.end():]


def build_mail(identity: Identity, *, to: str, to_name: str | None, subject: str, text: str,
               html: str | None, token: str | None, game_id: str | None, phase_id: int | None = None,
               locale: str = "en", rtl: bool = False,
               extra_headers: dict[str, str] | None = None) -> EmailMessage:
    """One mail from the narrator to ``to``: text/plain (and text/html when given) in UTF-8.

    A game mail (``token`` and ``game_id``) gets ``Reply-To`` with the token, ``In-Reply-To`` the
    thread root and ``References: <root> <tok.TOKEN@domain>``. ``extra_headers`` are set last
    (replacing ours); an ``In-Reply-To`` there is also appended to ``References`` unless that is
    given.
    """
    message = EmailMessage(policy=policy.SMTP)
    message["From"] = Address(display_name=_one_line(identity.name), addr_spec=identity.address)
    message["To"] = Address(display_name=_one_line(to_name or ""), addr_spec=to)
    message["Subject"] = _one_line(subject)
    message["Date"] = format_datetime(datetime.now(timezone.utc))
    message["Message-ID"] = new_message_id(identity, game_id, phase_id)
    message["Auto-Submitted"] = "auto-generated"
    message["X-Avalon-Narrator"] = "1"
    if token and game_id:
        root = thread_root(identity, game_id, to)
        message["Reply-To"] = identity.reply_to(token)
        message["In-Reply-To"] = root
        message["References"] = f"{root} <tok.{token}@{identity.domain}>"
    extra = {"Content-Language": locale}  # after the content: setting the content clears Content-*
    extra |= {name: _one_line(value) for name, value in (extra_headers or {}).items()}
    given = {name.lower(): value for name, value in extra.items()}
    if "in-reply-to" in given and "references" not in given:  # the parent ends the chain
        ours = message["References"]
        extra["References"] = f"{ours} {given['in-reply-to']}" if ours else given["in-reply-to"]

    message.set_content(text, subtype="plain", charset="utf-8", cte=_cte(text))
    if html is not None:
        page = _with_direction(html) if rtl else html
        message.add_alternative(page, subtype="html", charset="utf-8", cte=_cte(page))
    for name, value in extra.items():
        del message[name]
        message[name] = value
    return message


def picture_id(identity: Identity, png: bytes) -> str:
    """The Content-ID (without <>) the HTML part shows a picture by: named by its bytes, so the same
    picture twice in one mail is one part, and two pictures are never confused."""
    return f"picture.{hashlib.sha256(png).hexdigest()[:24]}@{identity.domain}"


def with_pictures(message: EmailMessage, identity: Identity, pictures: list[bytes]) -> EmailMessage:
    """The PNGs the HTML part shows (``cid:``) carried inline beside it: the HTML part becomes a
    multipart/related of the page and its images; the text/plain part is left as it is."""
    page = message.get_body(("html",)) if pictures else None
    if page is None:
        return message
    seen = set()
    for png in pictures:
        cid = picture_id(identity, png)
        if cid not in seen:
            seen.add(cid)
            page.add_related(png, maintype="image", subtype="png", cid=f"<{cid}>", disposition="inline",
                             filename=f"avalon-{len(seen)}.png")
    return message


def mailto(identity: Identity, token: str | None, subject: str, body: str) -> str:
    """A ``mailto:`` URL to the narrator (with the token) that fills in ``subject`` and ``body``,
    percent-encoded as RFC 6068 asks (UTF-8; line breaks as %0D%0A)."""
    to = identity.reply_to(token) if token else identity.address
    crlf = re.sub(r"\r\n|\r|\n", "\r\n", body)
    return f"mailto:{to}?subject={quote(subject, safe='')}&body={quote(crlf, safe='')}"
