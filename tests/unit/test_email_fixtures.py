"""Real replies, auto-replies and bounces, as mail programs wrote them (../shared/email_fixtures),
read by read_mail. In each reply the person's own text is replaced with a command of ours, in the
source message, and the whole message is read back: the command, and nothing else, must come out.
Where the person's text is in each fixture is our annotation (email_fixture_expectations.py).

The fixtures are not part of the repository: every test here skips with NO_FIXTURES when the
folder is not beside the clone."""

from __future__ import annotations

import csv
import html
import re
import tomllib
from email import message_from_bytes, policy
from email.message import EmailMessage
from functools import lru_cache
from pathlib import Path

import pytest

from avalon.services.email_gateway.reading import read_mail

from .email_fixture_expectations import BOUNCED, CANNOT_CARRY, FRESH, HTML_TWINS, Fresh

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO.parent / "shared" / "email_fixtures"
LOCALES = REPO / "shared" / "narration" / "locales"
NARRATOR = "narrator@example.org"
NO_FIXTURES = ("../shared/email_fixtures is not beside the clone: the reader is not checked against "
               "real mail programs' replies, auto-replies and bounces")
TEXT_CTES = ("7bit", "8bit", "quoted-printable", "base64")


def need_fixtures() -> None:
    if not (FIXTURES / "SOURCES.tsv").exists():
        pytest.skip(NO_FIXTURES)


@lru_cache(maxsize=1)
def sources() -> tuple[dict[str, str], ...]:
    if not (FIXTURES / "SOURCES.tsv").exists():
        return ()
    with open(FIXTURES / "SOURCES.tsv", encoding="utf-8", newline="") as handle:
        return tuple(csv.DictReader(handle, delimiter="\t"))


def files_of(kind: str) -> list:
    names = [row["file"] for row in sources() if row["kind"] == kind]
    return names or [pytest.param("-", marks=pytest.mark.skip(reason=NO_FIXTURES))]


@lru_cache(maxsize=1)
def commands() -> tuple[str, ...]:
    """Approve and Reject in the six languages, as the glossaries spell them."""
    words = []
    for key in ("approve", "reject"):
        for locale in ("en", "ru", "nl", "fr", "vi", "fa"):
            with open(LOCALES / locale / "glossary.toml", "rb") as handle:
                words.append(tomllib.load(handle)[key])
    return tuple(words)


def command_for(name: str) -> str:
    return commands()[sorted(FRESH).index(name) % len(commands())]


def normal(text: str) -> str:
    return " ".join(text.split())


def wrap(body: str, *, as_html: bool) -> bytes:
    """A body-only fixture as the message it came in: text/plain (or text/html) in UTF-8."""
    msg = EmailMessage()
    msg["From"] = "ann@example.org"
    msg["To"] = "narrator+tok12345678@example.org"
    msg["Subject"] = "Re: Avalon"
    msg.set_content(body, subtype="html" if as_html else "plain", charset="utf-8")
    return msg.as_bytes()


def span(text: str, fresh: Fresh) -> tuple[int, int]:
    start = text.index(fresh.first)
    return start, text.index(fresh.end, start) + len(fresh.end)


def text_parts(msg: EmailMessage) -> tuple[EmailMessage | None, EmailMessage | None]:
    plain = markup = None
    for part in msg.walk():
        if part.get_content_disposition() == "attachment":
            continue
        if part.get_content_type() == "text/plain" and plain is None:
            plain = part
        elif part.get_content_type() == "text/html" and markup is None:
            markup = part
    return plain, markup


def rewrite(part: EmailMessage, text: str) -> None:
    """``part`` with ``text``, in its own charset and transfer encoding when they can carry it."""
    subtype = part.get_content_subtype()
    charset = part.get_content_charset() or "us-ascii"
    cte = (part.get("Content-Transfer-Encoding") or "7bit").strip().lower()
    try:
        part.set_content(text, subtype=subtype, charset=charset, cte=cte if cte in TEXT_CTES else None)
    except (UnicodeError, ValueError, LookupError):
        part.set_content(text, subtype=subtype, charset="utf-8",
                         cte="base64" if cte == "base64" else "quoted-printable")


def source(name: str) -> tuple[str, EmailMessage | None]:
    """The text read_mail reads in fixture ``name`` and, for an .eml, the parsed message."""
    data = (FIXTURES / "raw" / name).read_bytes()
    if not name.endswith(".eml"):
        return data.decode("utf-8"), None
    msg = message_from_bytes(data, policy=policy.default)
    plain, markup = text_parts(msg)
    return (plain or markup).get_content(), msg


def with_command(name: str, command: str) -> tuple[bytes, str]:
    """Fixture ``name`` with the person's text replaced by ``command``: (the message, what is left
    of the original text)."""
    text, msg = source(name)
    start, end = span(text, FRESH[name])
    is_html = name.endswith(".html") or (msg is not None and text_parts(msg)[0] is None)
    new = text[:start] + (html.escape(command) if is_html else command) + text[end:]
    if msg is None:
        return wrap(new, as_html=name.endswith(".html")), text[:start] + text[end:]
    plain, markup = text_parts(msg)
    rewrite(plain or markup, new)
    return msg.as_bytes(), text[:start] + text[end:]


def thread_lines(rest: str) -> list[str]:
    """The lines of what is left of the original (tags dropped), long enough to be recognised."""
    lines = (re.sub(r"<[^>]*>", " ", line).strip(" >|\t\xa0") for line in rest.splitlines())
    return [line for line in lines if len(line) >= 4]


# -- the fixtures are all there, and all annotated -----------------------------------------------

def test_the_fixtures_hold_69_replies_10_html_replies_9_auto_replies_and_7_bounces():
    need_fixtures()
    kinds = [row["kind"] for row in sources()]
    counts = [kinds.count(kind) for kind in ("reply", "html_only", "autoreply", "bounce")]
    assert counts == [69, 10, 9, 7]
    for row in sources():
        assert (FIXTURES / "raw" / row["file"]).exists(), row["file"]


def test_every_reply_fixture_has_its_persons_text_annotated_and_every_bounce_its_address():
    need_fixtures()
    replies = {row["file"] for row in sources() if row["kind"] in ("reply", "html_only")}
    assert replies == set(FRESH), "annotate (email_fixture_expectations.FRESH) exactly the reply fixtures"
    assert {row["file"] for row in sources() if row["kind"] == "bounce"} == set(BOUNCED)
    assert set(HTML_TWINS) <= replies and set(CANNOT_CARRY) <= replies


@pytest.mark.parametrize("name", sorted(FRESH))
def test_each_annotation_marks_text_that_is_in_its_fixture(name: str):
    need_fixtures()
    text, _ = source(name)
    start, end = span(text, FRESH[name])  # raises when the annotation is not found
    assert end > start


# -- replies -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FRESH))
def test_each_real_reply_reads_as_the_command_written_in_place_of_the_persons_text(name: str):
    need_fixtures()
    command = command_for(name)
    raw, rest = with_command(name, command)
    mail = read_mail(raw, NARRATOR)
    assert mail.kind == "person", name
    if name in CANNOT_CARRY:  # none so far; such a fixture must still not leak its thread
        assert not [line for line in thread_lines(rest) if line in mail.text], CANNOT_CARRY[name]
        return
    assert normal(mail.text) == normal(command), f"{name}: read {mail.text!r}"
    leaked = [line for line in thread_lines(rest) if line in mail.text]
    assert not leaked, f"{name}: the quoted thread leaked into the text: {leaked}"
    if not name.endswith(".eml"):
        assert mail.tokens == ("tok12345678",)


@pytest.mark.parametrize("name", sorted(FRESH))
def test_each_real_reply_as_it_was_reads_as_the_persons_own_text(name: str):
    need_fixtures()
    text, msg = source(name)
    start, end = span(text, FRESH[name])
    raw = msg.as_bytes() if msg is not None else wrap(text, as_html=name.endswith(".html"))
    mail = read_mail(raw, NARRATOR)
    assert mail.kind == "person", name
    assert normal(mail.text) == normal(text[start:end]), f"{name}: read {mail.text!r}"


@pytest.mark.parametrize("name", sorted(HTML_TWINS))
def test_each_real_reply_read_from_its_html_alone_gives_the_command(name: str):
    need_fixtures()
    _, msg = source(name)
    plain, markup = text_parts(msg)
    for part in msg.walk():  # take the text/plain alternative out
        if part.is_multipart() and plain in part.get_payload():
            part.get_payload().remove(plain)
    page = markup.get_content()
    start, end = span(page, HTML_TWINS[name])
    command = command_for(name)
    rewrite(markup, page[:start] + html.escape(command) + page[end:])
    mail = read_mail(msg.as_bytes(), NARRATOR)
    assert mail.kind == "person"
    assert normal(mail.text) == normal(command), f"{name} (HTML): read {mail.text!r}"


# -- auto-replies and bounces --------------------------------------------------------------------

@pytest.mark.parametrize("name", files_of("autoreply"))
def test_each_real_auto_reply_reads_as_an_auto_reply(name: str):
    need_fixtures()
    mail = read_mail((FIXTURES / "raw" / name).read_bytes(), NARRATOR)
    assert mail.kind == "auto_reply", name
    assert mail.bounced == ()


@pytest.mark.parametrize("name", files_of("bounce"))
def test_each_real_bounce_reads_as_a_bounce_naming_the_address_that_failed(name: str):
    need_fixtures()
    mail = read_mail((FIXTURES / "raw" / name).read_bytes(), NARRATOR)
    assert mail.kind == "bounce", name
    assert mail.bounced == BOUNCED[name]
