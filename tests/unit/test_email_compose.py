"""The outgoing mail, read back as a mail program reads it: headers, threading, both parts in
every language, and the mailto links of the buttons."""

from __future__ import annotations

import email
import email.policy
from datetime import datetime, timedelta, timezone
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from urllib.parse import parse_qsl, urlsplit

import pytest

from avalon.services.email_gateway.compose import (Identity, build_mail, mailto, new_message_id,
                                            phase_of_message_id, thread_root)
from avalon.services.email_gateway.tokens import Tokens

NARRATOR = Identity("narrator@example.org", "Avalon")
TOKENS = Tokens("a secret long enough for tests")
GAME = "tg-1001234567_42"

# (locale, rtl, player's name, subject, text, html body): in each language's own words
SAMPLES = [
    ("en", False, "Arthur Pendragon", "Avalon: vote on the team for quest 2",
     "Arthur is the leader.\nApprove or Reject?", "<p>Arthur is the <b>leader</b>.</p>"),
    ("fa", True, "مریم رضایی", "آوالون: رأی‌گیری برای تیم ماموریت ۲",
     "رهبر: مریم\nموافق یا مخالف؟", "<p>رهبر: <b>مریم</b></p>"),
    ("ru", False, "Фёдор Достоевский", "Авалон: голосование за команду, задание 2",
     "Лидер — Фёдор.\nЗа или Против?", "<p>Лидер — <b>Фёдор</b>.</p>"),
    ("vi", False, "Nguyễn Thị Hồng Nhung", "Avalon: bầu chọn đội cho nhiệm vụ 2",
     "Chỉ huy là Nhung.\nĐồng ý hay Không đồng ý?", "<p>Chỉ huy là <b>Nhung</b>.</p>"),
    ("nl", False, "Geërte van der Meulen", "Avalon: de stemming over het team voor queeste 2",
     "De Leader is Geërte.\nGoedkeuren of Afkeuren?", "<p>De Leader is <b>Geërte</b>.</p>"),
    ("fr", False, "Hélène Lefèvre", "Avalon : le vote sur l'équipe de la quête 2",
     "Le leader est Hélène.\nPour ou Contre ?", "<p>Le leader est <b>Hélène</b>.</p>"),
]


def page(locale: str, body: str) -> str:
    return f'<!DOCTYPE html>\n<html lang="{locale}">\n<head><meta charset="utf-8"></head>\n<body>{body}</body>\n</html>'


def read_back(message: EmailMessage) -> EmailMessage:
    """What the receiving mail program sees: the bytes on the wire, parsed."""
    return email.message_from_bytes(bytes(message), policy=email.policy.default)


def msg_id(header) -> str:
    """A message-id header's value: a long one is folded, and unfolding keeps the space before it."""
    return str(header).strip()


def decoded(part: EmailMessage) -> str:
    return part.get_content().replace("\r\n", "\n")


def game_mail(**overrides) -> EmailMessage:
    arguments = dict(to="maryam@example.net", to_name="Maryam", subject="Avalon", text="Hello",
                     html=page("en", "<p>Hello</p>"), token=TOKENS.make(GAME, "maryam@example.net"),
                     game_id=GAME, phase_id=7)
    return build_mail(NARRATOR, **(arguments | overrides))


@pytest.mark.parametrize("locale, rtl, name, subject, text, html", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_a_game_mail_reads_back_with_every_header_and_both_parts(locale, rtl, name, subject, text, html) -> None:
    token = TOKENS.make(GAME, "player@example.net")
    sent = build_mail(NARRATOR, to="player@example.net", to_name=name, subject=subject, text=text,
                      html=page(locale, html), token=token, game_id=GAME, phase_id=12, locale=locale, rtl=rtl)
    wire = bytes(sent)
    assert wire.isascii()  # passes any server, with or without 8BITMIME
    got = read_back(sent)

    assert got["From"].addresses[0].display_name == "Avalon"
    assert got["From"].addresses[0].addr_spec == "narrator@example.org"
    assert got["To"].addresses[0].display_name == name
    assert got["To"].addresses[0].addr_spec == "player@example.net"
    assert str(got["Subject"]) == subject
    sent_at = parsedate_to_datetime(str(got["Date"]))
    assert sent_at.utcoffset() == timedelta(0)
    assert abs(datetime.now(timezone.utc) - sent_at) < timedelta(minutes=1)
    assert phase_of_message_id(str(got["Message-ID"]), NARRATOR) == (GAME, 12)
    assert got["Auto-Submitted"] == "auto-generated"
    assert got["X-Avalon-Narrator"] == "1"
    assert got["Content-Language"] == locale
    assert got["Reply-To"].addresses[0].addr_spec == f"narrator+{token}@example.org"
    root = thread_root(NARRATOR, GAME, "player@example.net")
    assert msg_id(got["In-Reply-To"]) == root
    assert str(got["References"]).split() == [root, f"<tok.{token}@example.org>"]

    assert got.get_content_type() == "multipart/alternative"
    plain, rich = got.iter_parts()
    assert plain.get_content_type() == "text/plain" and plain.get_content_charset() == "utf-8"
    assert rich.get_content_type() == "text/html" and rich.get_content_charset() == "utf-8"
    assert decoded(plain) == text + "\n"
    assert html in decoded(rich)
    assert (' dir="rtl"' in decoded(rich)) == rtl


def test_a_mail_without_html_is_plain_text_only() -> None:
    got = read_back(game_mail(html=None, text="Только текст, без HTML."))
    assert got.get_content_type() == "text/plain"
    assert not got.is_multipart()
    assert decoded(got) == "Только текст, без HTML.\n"
    assert got["Content-Language"] == "en"


def test_a_right_to_left_page_declares_its_direction_on_the_html_element() -> None:
    got = read_back(game_mail(html=page("fa", "<p>سلام</p>"), locale="fa", rtl=True))
    html = decoded(list(got.iter_parts())[1])
    assert '<html lang="fa" dir="rtl">' in html
    assert html.count("dir=") == 1


def test_a_right_to_left_fragment_is_wrapped_in_a_right_to_left_block() -> None:
    got = read_back(game_mail(html="<p>سلام</p>", locale="fa", rtl=True))
    assert decoded(list(got.iter_parts())[1]).startswith('<div dir="rtl"><p>سلام</p></div>')


def test_a_page_that_already_has_a_direction_is_left_as_it_is() -> None:
    already = '<html dir="rtl" lang="fa"><body>سلام</body></html>'
    got = read_back(game_mail(html=already, locale="fa", rtl=True))
    assert decoded(list(got.iter_parts())[1]) == already + "\n"


def test_a_left_to_right_page_is_not_touched() -> None:
    got = read_back(game_mail(html=page("fr", "<p>Bonjour</p>"), locale="fr"))
    assert decoded(list(got.iter_parts())[1]) == page("fr", "<p>Bonjour</p>") + "\n"


def test_a_mail_to_a_stranger_has_no_reply_token_and_no_thread() -> None:
    got = read_back(build_mail(NARRATOR, to="someone@example.net", to_name=None, subject="Avalon",
                               text="Who are you?", html=None, token=None, game_id=None))
    for header in ("Reply-To", "In-Reply-To", "References"):
        assert got[header] is None, header
    assert got["To"].addresses[0].addr_spec == "someone@example.net"
    assert got["To"].addresses[0].display_name == ""
    assert phase_of_message_id(str(got["Message-ID"]), NARRATOR) is None  # ours, but of no game
    assert str(got["Message-ID"]).startswith("<avalon.x.0.")


def test_an_answer_to_a_stranger_threads_under_their_mail() -> None:
    theirs = "<CAF=abc123@mail.example.net>"
    got = read_back(build_mail(NARRATOR, to="someone@example.net", to_name=None, subject="Re: hi",
                               text="Hello", html=None, token=None, game_id=None,
                               extra_headers={"In-Reply-To": theirs}))
    assert msg_id(got["In-Reply-To"]) == theirs
    assert str(got["References"]) == theirs
    assert got["Reply-To"] is None


def test_an_answer_in_a_game_keeps_the_token_reference_and_ends_with_the_parent() -> None:
    theirs = "<reply-1@mail.example.net>"
    got = read_back(game_mail(extra_headers={"In-Reply-To": theirs}))
    token = TOKENS.make(GAME, "maryam@example.net")
    assert msg_id(got["In-Reply-To"]) == theirs
    assert str(got["References"]).split() == [thread_root(NARRATOR, GAME, "maryam@example.net"),
                                              f"<tok.{token}@example.org>", theirs]


def test_extra_headers_replace_ours_and_are_added_once() -> None:
    got = read_back(game_mail(extra_headers={"X-Avalon-Narrator": "2", "List-Id": "Avalon <avalon.example.org>"}))
    assert got.get_all("X-Avalon-Narrator") == ["2"]
    assert got["List-Id"] == "Avalon <avalon.example.org>"


def test_a_subject_or_name_with_a_line_break_cannot_add_a_header() -> None:
    got = read_back(game_mail(subject="Vote\r\nBcc: everyone@example.net", to_name="Eve\nBcc: x@example.net"))
    assert got["Bcc"] is None
    assert str(got["Subject"]) == "Vote Bcc: everyone@example.net"


def test_the_thread_root_is_stable_and_one_per_game_per_player() -> None:
    root = thread_root(NARRATOR, GAME, "maryam@example.net")
    assert root == thread_root(NARRATOR, GAME, "maryam@example.net")
    assert root == thread_root(NARRATOR, GAME, "Maryam@Example.NET")
    assert root != thread_root(NARRATOR, "tg-1001234567_43", "maryam@example.net")
    assert root != thread_root(NARRATOR, GAME, "arthur@example.net")
    assert root.startswith("<") and root.endswith("@example.org>")
    first, second = read_back(game_mail(phase_id=1)), read_back(game_mail(phase_id=2))
    assert msg_id(first["In-Reply-To"]) == msg_id(second["In-Reply-To"]) == root
    assert str(first["Message-ID"]) != str(second["Message-ID"])


@pytest.mark.parametrize("game_id", [GAME, "mail-k3x9q2", "tg:-100.5_7", "a=b", "x", "é"])
def test_our_message_id_gives_back_its_game_and_phase(game_id: str) -> None:
    message_id = new_message_id(NARRATOR, game_id, 31)
    assert phase_of_message_id(message_id, NARRATOR) == (game_id, 31)
    assert phase_of_message_id(message_id.strip("<>"), NARRATOR) == (game_id, 31)
    assert phase_of_message_id(f"  {message_id} ", NARRATOR) == (game_id, 31)
    assert email.message_from_string(f"Message-ID: {message_id}\n\n", policy=email.policy.default)[
        "Message-ID"].defects == ()


def test_message_ids_are_never_the_same_twice() -> None:
    assert len({new_message_id(NARRATOR, GAME, 1) for _ in range(500)}) == 500


def test_a_missing_phase_reads_back_as_phase_zero() -> None:
    assert phase_of_message_id(new_message_id(NARRATOR, GAME, None), NARRATOR) == (GAME, 0)


@pytest.mark.parametrize("message_id", [
    "<avalon.tg-1.3.abc@another.example>", "<CAF=abc123@mail.example.net>", "", "<>", "avalon..3.a@example.org",
    "<avalon.tg-1.three.abc@example.org>", "<avalon.tg-1.3.abc.extra@example.org>",
    thread_root(NARRATOR, GAME, "maryam@example.net"),
])
def test_a_message_id_that_is_not_ours_names_no_phase(message_id: str) -> None:
    assert phase_of_message_id(message_id, NARRATOR) is None


def test_the_reply_address_carries_the_token_by_plus_addressing() -> None:
    assert NARRATOR.domain == "example.org"
    assert NARRATOR.reply_to("abc-def") == "narrator+abc-def@example.org"


BODIES = [
    "approve", "vote approve now", "#3 & #5?", "a=b&c=d?e#f", "100% sure + more",
    "Голосую За", "موافق هستم", "Tôi Đồng ý", "Je vote Pour ; d'accord !",
]


@pytest.mark.parametrize("body", BODIES)
def test_a_mailto_link_round_trips_its_subject_and_body(body: str) -> None:
    token = TOKENS.make(GAME, "maryam@example.net")
    subject = f"Re: {body}"
    url = mailto(NARRATOR, token, subject, body)
    assert url.isascii() and " " not in url
    parts = urlsplit(url)
    assert parts.scheme == "mailto"
    assert parts.path == f"narrator+{token}@example.org"
    assert parts.fragment == ""
    assert parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True) == [("subject", subject), ("body", body)]


def test_a_mailto_body_writes_line_breaks_as_crlf() -> None:
    url = mailto(NARRATOR, "tok", "vote", "line one\nline two\r\nthree")
    assert url.endswith("body=line%20one%0D%0Aline%20two%0D%0Athree")
    assert "+" not in url.split("?", 1)[1]


def test_a_mailto_without_a_token_goes_to_the_narrator() -> None:
    assert mailto(NARRATOR, None, "help", "").startswith("mailto:narrator@example.org?subject=help&body=")
