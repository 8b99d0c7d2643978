"""An incoming mail (raw RFC 822 bytes from IMAP) read as the person meant it: who wrote, to which
game's reply address, what kind of mail it is, and their own new words.

Never raises: broken encodings become replacement characters, unknown charsets are read as UTF-8,
a body over 1 MB is cut to its first 64 KB before parsing (and of a part at most 256 K characters
and 5,000 lines are searched for the person's words), and a message nothing can be made of
reads as a person's mail with no sender and no text (which the gateway ignores). The kind of mail
(ours, a bounce, an auto-reply) is told in kinds.py, the person's words in quotes.py.
"""

from __future__ import annotations

import codecs
import logging
import quopri
import re
from dataclasses import dataclass
from email import message_from_bytes
from email.header import decode_header
from email.message import Message
from email.policy import compat32
from email.utils import getaddresses, parseaddr
from typing import Literal

from .html_text import html_to_text
from .kinds import auth_failure, bounced_addresses, kind_of, referenced_tokens
from .quotes import fresh_text

log = logging.getLogger(__name__)

Kind = Literal["person", "auto_reply", "bounce", "own"]

MAX_BODY = 1 << 20  # a body longer than this ...
CUT_BODY = 64 << 10  # ... is cut to this before parsing
MAX_TEXT = 256 << 10  # characters of a decoded part read for the person's words
MAX_PARTS = 200
RECIPIENT_HEADERS = ("to", "cc", "delivered-to", "x-original-to", "envelope-to")
TOKEN = re.compile(r"[a-z0-9-]{8,120}")
_MSG_ID = re.compile(r"<([^<>\s]+)>")
_FOLD = re.compile(r"\r?\n[ \t]+")
_CONTROLS = dict.fromkeys([*range(0x09), 0x0b, 0x0c, *range(0x0e, 0x20), 0x7f])  # NUL: not for a database


@dataclass(frozen=True)
class IncomingMail:
    message_id: str | None  # the Message-ID header, with angle brackets stripped, or None
    sender: str | None  # the From address, lower-cased (None if unparsable)
    sender_name: str  # the From display name, decoded (RFC 2047), '' if none
    return_path: str | None  # Return-Path / envelope sender address, lower-cased; '' for the null sender <>
    recipients: tuple[str, ...]  # lower-cased addresses from To, Cc, Delivered-To, X-Original-To, Envelope-To
    tokens: tuple[str, ...]  # reply tokens found, in order found, no duplicates
    in_reply_to: tuple[str, ...]  # message ids from In-Reply-To then References, brackets stripped
    subject: str  # decoded subject
    kind: Kind
    auth_failure: str | None  # e.g. "dmarc=fail" (see kinds.auth_failure), None otherwise
    text: str  # the person's own new words (see quotes.py)
    bounced: tuple[str, ...]  # for a bounce: the failed recipient addresses, lower-cased
    language: str | None  # a guess at the writer's language (en fa ru vi nl fr) from ``text``, or None
    quoted_tokens: tuple[str, ...] = ()  # for a bounce: the reply tokens of our mail it quotes


GARBAGE = IncomingMail(None, None, "", None, (), (), (), "", "person", None, "", (), None)


def read_mail(raw: bytes, narrator: str) -> IncomingMail:
    """``narrator`` is the narrator's own address, e.g. ``narrator@example.org``."""
    try:
        return _read(bytes(raw) if not isinstance(raw, str) else raw.encode("utf-8", "replace"), narrator)
    except Exception:  # noqa: BLE001 - a mail must never stop the gateway
        log.warning("a mail could not be read; treated as empty", exc_info=True)
        return GARBAGE


def _read(raw: bytes, narrator: str) -> IncomingMail:
    msg = message_from_bytes(cap_body(raw), policy=compat32)
    headers = Headers(msg)
    narrator = (narrator or "").strip().lower()
    name, sender = headers.address("from")
    message_id = first_id(headers.first("message-id"))
    return_path = headers.return_path()
    recipients = headers.recipients()
    in_reply_to = tuple(dict.fromkeys(headers.ids("in-reply-to") + headers.ids("references")))
    subject = headers.text("subject")
    plain, html = body_parts(msg)
    text = fresh_text(plain) if plain.strip() else fresh_text(html_to_text(html)) if html.strip() else ""
    kind = kind_of(msg, headers, sender=sender, sender_name=name, message_id=message_id,
                   return_path=return_path, subject=subject, narrator=narrator)
    return IncomingMail(
        message_id=message_id, sender=sender, sender_name=name, return_path=return_path,
        recipients=recipients, tokens=tokens_of(recipients, in_reply_to, narrator),
        in_reply_to=in_reply_to, subject=subject, kind=kind, auth_failure=auth_failure(headers),
        text=text, bounced=bounced_addresses(msg, headers, plain) if kind == "bounce" else (),
        language=guess_language(text),
        quoted_tokens=referenced_tokens(msg, raw, narrator) if kind == "bounce" else ())


def cap_body(raw: bytes) -> bytes:
    """``raw`` with a body over 1 MB cut to its first 64 KB (headers kept)."""
    if len(raw) <= MAX_BODY:
        return raw
    end = re.search(rb"\r?\n\r?\n", raw[:MAX_BODY])
    if end is None:
        return raw[:CUT_BODY]
    head, body = raw[:end.end()], raw[end.end():]
    return head + (body[:CUT_BODY] if len(body) > MAX_BODY else body)


# -- headers ---------------------------------------------------------------------------------------

def unraw(value: str) -> str:
    """A raw header value as text: 8-bit bytes read as UTF-8 (replacement characters otherwise),
    folding undone."""
    text = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _FOLD.sub(" ", text).replace("\r", "").replace("\n", " ").translate(_CONTROLS)


def text_codec(charset: str | None) -> str:
    """The codec for a declared charset: UTF-8 when it is missing, unknown or not a text encoding."""
    name = (charset or "").strip().strip("\"'").lower()
    try:
        info = codecs.lookup(name)
    except Exception:  # noqa: BLE001 - LookupError, or ValueError for a NUL in the name
        return "utf-8"
    return info.name if getattr(info, "_is_text_encoding", True) else "utf-8"


def decode_bytes(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(text_codec(charset), "replace")
    except Exception:  # noqa: BLE001 - a codec refusing bytes it was given
        return data.decode("utf-8", "replace")


def decode_words(value: str) -> str:
    """RFC 2047 encoded words decoded; anything undecodable left as it was."""
    try:
        parts = decode_header(value)
    except Exception:  # noqa: BLE001
        return value
    out = []
    for part, charset in parts:
        if isinstance(part, str):
            out.append(part)
        elif charset is None:
            out.append(part.decode("raw-unicode-escape", "replace"))
        else:
            out.append(decode_bytes(part, charset))
    return "".join(out)


class Headers:
    """The headers of a message, read without trusting them to be well-formed."""

    def __init__(self, msg: Message) -> None:
        self.items: list[tuple[str, str]] = []
        for name, value in msg.raw_items():
            if isinstance(name, str) and isinstance(value, str):
                self.items.append((name.strip().lower(), unraw(value)))

    def all(self, name: str) -> list[str]:
        return [value for key, value in self.items if key == name]

    def first(self, name: str) -> str | None:
        values = self.all(name)
        return values[0] if values else None

    def has(self, name: str) -> bool:
        return any(key == name for key, _ in self.items)

    def text(self, name: str) -> str:
        value = self.first(name)
        return decode_words(value).translate(_CONTROLS).strip() if value else ""

    def address(self, name: str) -> tuple[str, str | None]:
        """(decoded display name, lower-cased address or None) of the first ``name`` header."""
        value = self.first(name)
        if not value:
            return "", None
        display, address = parseaddr(value)
        address = address.strip().lower()
        return decode_words(display).translate(_CONTROLS).strip(), address if "@" in address.strip("@") else None

    def return_path(self) -> str | None:
        for name in ("return-path", "x-envelope-from", "envelope-from"):
            value = self.first(name)
            if value is None:
                continue
            if value.strip().strip("<>").strip() == "":
                return ""
            address = parseaddr(value)[1].strip().lower()
            return address if "@" in address else None
        return None

    def recipients(self) -> tuple[str, ...]:
        values = [value for key, value in self.items if key in RECIPIENT_HEADERS]
        found = (address.strip().lower() for _, address in getaddresses(values))
        return tuple(dict.fromkeys(a for a in found if "@" in a.strip("@")))

    def ids(self, name: str) -> list[str]:
        out: list[str] = []
        for value in self.all(name):
            found = _MSG_ID.findall(value)
            out += found if found else [part for part in value.split() if "@" in part]
        return out


def first_id(value: str | None) -> str | None:
    if not value:
        return None
    found = _MSG_ID.search(value)
    text = found.group(1) if found else value.strip().strip("<>").strip()
    return text or None


def tokens_of(recipients: tuple[str, ...], ids: tuple[str, ...], narrator: str) -> tuple[str, ...]:
    """Reply tokens: ``narrator+TOKEN@domain`` among the recipients, then ``tok.TOKEN@domain`` ids."""
    local, _, domain = narrator.rpartition("@")
    base = local.split("+", 1)[0]
    found: list[str] = []
    for address in recipients:
        their_local, _, their_domain = address.rpartition("@")
        if their_domain == domain and their_local.startswith(base + "+"):
            found.append(their_local[len(base) + 1:])
    for message_id in ids:
        their_local, _, their_domain = message_id.lower().rpartition("@")
        if their_domain == domain and their_local.startswith("tok."):
            found.append(their_local[4:])
    return tuple(dict.fromkeys(token for token in found if TOKEN.fullmatch(token)))


# -- body ------------------------------------------------------------------------------------------

def body_parts(msg: Message) -> tuple[str, str]:
    """(the first text/plain, the first text/html) that is not an attachment, decoded; the parts of
    an attached message (message/rfc822, a bounce's copy) are not read."""
    plain = html = None
    stack, seen = [msg], 0
    while stack and seen < MAX_PARTS and (plain is None or html is None):
        part = stack.pop()
        seen += 1
        ctype = part.get_content_type()
        if part.is_multipart():
            if ctype.startswith("multipart/"):
                payload = part.get_payload()
                stack.extend(reversed(payload if isinstance(payload, list) else []))
            continue
        if ctype not in ("text/plain", "text/html") or (part.get_content_disposition() or "") == "attachment":
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        try:
            charset = part.get_content_charset()
        except Exception:  # noqa: BLE001
            charset = None
        data = undo_stray_quoted_printable(data, charset)
        text = decode_bytes(data, charset)[:MAX_TEXT]
        if ctype == "text/plain" and plain is None:
            plain = text
        elif ctype == "text/html" and html is None:
            html = text
    return plain or "", html or ""


_QP_SOFT_BREAK = re.compile(rb"=\r?\n")
_QP_ESCAPE = re.compile(rb"=[0-9A-F]{2}")


def undo_stray_quoted_printable(data: bytes, charset: str | None) -> bytes:
    """A body still quoted-printable encoded once its transfer encoding is undone (soft line breaks
    ``=`` and escapes such as ``=E2=80=AF``: encoded twice, or not declared) decoded; else as it was."""
    if not (_QP_SOFT_BREAK.search(data) and _QP_ESCAPE.search(data)):
        return data
    decoded = quopri.decodestring(data)
    try:
        decoded.decode(text_codec(charset))
    except Exception:  # noqa: BLE001 - not text in its charset once decoded: it was not QP
        return data
    return decoded


# -- language --------------------------------------------------------------------------------------

_WORDS = {
    "en": frozenset("the and you yes no approve reject is it to of in vote team agree okay fine join start thanks "
                    "please what how quest leader success fail none pick play this that my me".split()),
    "nl": frozenset("ik je jij het een de en ja nee niet goedkeuren afkeuren is van dat wat hoe doe mee graag "
                    "bedankt alsjeblieft ook stemming queeste geen faal kies mijn".split()),
    "fr": frozenset("je tu oui non pour contre le la les et est un une de des du pas merci vote équipe quête "
                    "succès échec aucun avec moi rejoindre commencer mon".split()),
}
_VIETNAMESE = re.compile(r"[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]", re.I)
_WORD = re.compile(r"[^\W\d_]+")


def guess_language(text: str) -> str | None:
    """en fa ru vi nl fr from the script and common words of ``text``; None when unsure."""
    letters = [c for c in text[:4000] if c.isalpha()]
    if not letters:
        return None
    arabic = sum(1 for c in letters if "\u0600" <= c <= "\u06ff" or "\ufb50" <= c <= "\ufeff")
    cyrillic = sum(1 for c in letters if "\u0400" <= c <= "\u04ff")
    if arabic * 2 > len(letters):
        return "fa"
    if cyrillic * 2 > len(letters):
        return "ru"
    if len(_VIETNAMESE.findall(text[:4000])) >= 2 or (_VIETNAMESE.search(text) and len(letters) < 12):
        return "vi"
    words = [w.lower() for w in _WORD.findall(text[:4000])]
    scores = {lang: sum(1 for w in words if w in vocab) for lang, vocab in _WORDS.items()}
    if any(c in "éèêàçùûôîïœ" for c in text.lower()):
        scores["fr"] += 1
    (best, score), (_, second) = sorted(scores.items(), key=lambda item: -item[1])[:2]
    if score == second or score < max(1, len(words) / 5):
        return None
    return best
