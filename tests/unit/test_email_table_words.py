"""The words of the people around the table by mail (issue 21), in the six languages: pause, resume,
void, away, leave, open seat NAME, invite ADDRESS seat NAME, take, pass host NAME, remove NAME,
watch CODE, stop watching, standby ADDRESS and standby remove ADDRESS; typed as people write them and
written back by our own links and help; what the narrator says of them in every locale."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from avalon.services.email_gateway import lexicon
from avalon.services.email_gateway.wording import TABLE_KINDS, Intent, Problem, command_words, link_body, parse
from avalon.services.email_gateway.words import email_words
from avalon.shared.narration.render import LOCALES, book_sources

PLAYERS = {"m:ann": "Ann", "m:bob": "Bob Marley", "m:cleo": "Cléo", "m:duc": "Đức Hương", "m:anya": "Аня",
           "m:ali": "علی"}
SEATS = tuple(PLAYERS)
NAMED = ("open_seat", "pass_host", "remove")
GLOSSARY = Path(__file__).resolve().parents[2] / "shared" / "narration" / "locales"


def typed_keys(locale: str) -> tuple[set, set]:
    typed = tomllib.loads((GLOSSARY / locale / "glossary.toml").read_text(encoding="utf-8"))["typed"]
    return set(typed), set(typed["commands"])


@pytest.mark.parametrize("locale", LOCALES)
def test_every_glossary_has_the_english_typed_keys_and_every_table_word(locale):
    assert typed_keys(locale) == typed_keys("en")
    assert set(TABLE_KINDS) <= set(lexicon.WORDS[locale])
    assert lexicon.WORDS[locale]["take"] and lexicon.SEAT_WORDS


def _argument(kind: str) -> list[str]:
    return {"watch": ["mail-k7q2m9x"], "standby": ["sam@example.org"], "standby_remove": ["sam@example.org"]}.get(
        kind, ["Đức Hương"] if kind in NAMED else [])


@pytest.mark.parametrize("locale", LOCALES)
def test_each_table_word_written_back_reads_as_its_command(locale):
    for kind in TABLE_KINDS:
        body = link_body(locale, kind, _argument(kind))
        read = parse(body, PLAYERS, SEATS)
        assert isinstance(read, Intent) and read.kind == kind, (body, read)
        assert read.targets == (("m:duc",) if kind in NAMED else ()), (body, read)
        if kind == "watch":
            assert read.text == "mail-k7q2m9x"
        if kind.startswith("standby"):
            assert read.text == "sam@example.org"


TYPED = [
    # language, typed, kind, targets, text
    ("en", "Pause", "pause", (), ""),
    ("en", "resume please", "resume", (), ""),
    ("en", "void the game", "void", (), ""),
    ("en", "I'm away", "away", (), ""),
    ("en", "take", "take", (), ""),
    ("en", "take the seat of Bob", "take", ("m:bob",), ""),
    ("en", "open seat 3", "open_seat", ("m:cleo",), ""),
    ("en", "pass host to Ann", "pass_host", ("m:ann",), ""),
    ("en", "kick Bob", "remove", ("m:bob",), ""),
    ("en", "watch MAIL-K7Q2M9X", "watch", (), "MAIL-K7Q2M9X"),
    ("en", "stop watching", "unwatch", (), ""),
    ("en", "standby Sam@Example.org, lea@example.org", "standby", (), "sam@example.org lea@example.org"),
    ("en", "standby remove sam@example.org", "standby_remove", (), "sam@example.org"),
    ("en", "invite sam@example.org seat Bob", "invite", ("m:bob",), "sam@example.org"),
    ("fa", "توقف", "pause", (), ""),
    ("fa", "ادامه", "resume", (), ""),
    ("fa", "غایب هستم", "away", (), ""),
    ("fa", "می‌نشینم", "take", (), ""),
    ("fa", "تماشا mail-k7q2m9x", "watch", (), "mail-k7q2m9x"),
    ("fa", "سپردن میزبانی علی", "pass_host", ("m:ali",), ""),
    ("fa", "دعوت sam@example.org جایگاه علی", "invite", ("m:ali",), "sam@example.org"),
    ("ru", "пауза", "pause", (), ""),
    ("ru", "Продолжить", "resume", (), ""),
    ("ru", "меня не будет", "away", (), ""),
    ("ru", "занять место", "take", (), ""),
    ("ru", "открыть место Аня", "open_seat", ("m:anya",), ""),
    ("ru", "пригласить sam@example.org на место Аня", "invite", ("m:anya",), "sam@example.org"),
    ("ru", "резерв sam@example.org", "standby", (), "sam@example.org"),
    ("vi", "tạm dừng", "pause", (), ""),
    ("vi", "tiep tuc", "resume", (), ""),
    ("vi", "vắng mặt", "away", (), ""),
    ("vi", "nhận ghế", "take", (), ""),
    ("vi", "ngừng xem", "unwatch", (), ""),
    ("vi", "mời sam@example.org thay Đức Hương", "invite", ("m:duc",), "sam@example.org"),
    ("nl", "pauze", "pause", (), ""),
    ("nl", "hervat", "resume", (), ""),
    ("nl", "ik neem over", "take", (), ""),
    ("nl", "verwijder Bob", "remove", ("m:bob",), ""),
    ("nl", "stop met kijken", "unwatch", (), ""),
    ("nl", "uitnodigen sam@example.org in plaats van Ann", "invite", ("m:ann",), "sam@example.org"),
    ("fr", "mettre en pause", "pause", (), ""),
    ("fr", "reprendre", "resume", (), ""),
    ("fr", "je serai absente", "away", (), ""),
    ("fr", "je prends la place", "take", (), ""),
    ("fr", "libérer la place de Cléo", "open_seat", ("m:cleo",), ""),
    ("fr", "nouvel hôte Ann", "pass_host", ("m:ann",), ""),
    ("fr", "ne plus regarder", "unwatch", (), ""),
    ("fr", "inviter sam@example.org à la place de Cléo", "invite", ("m:cleo",), "sam@example.org"),
]


@pytest.mark.parametrize("language, typed, kind, targets, text", TYPED)
def test_table_words_typed_in_each_language_are_read(language, typed, kind, targets, text):
    assert parse(typed, PLAYERS, SEATS) == Intent(kind, language, targets, text)


def test_table_words_keep_the_old_meanings_and_stand_alone():
    assert parse("prendre Ann", PLAYERS, SEATS).kind == "pick", "French 'prendre' alone still picks"
    assert parse("беру Ann", PLAYERS, SEATS).kind == "pick"
    assert parse("передать Ann", PLAYERS, SEATS).kind == "hand", "Russian 'передать' alone still hands the shot"
    assert parse("annuler").kind == "cancel" and parse("hủy").kind == "cancel"
    assert parse("leave").kind == "leave"
    assert parse("pause while I think about it") == Problem("unknown_command", None), "a bare word stands alone"
    assert parse("invite sam@example.org") == Intent("invite", "en", (), "sam@example.org"), "a plain invitation"
    assert parse("invite sam@example.org seat Zed", PLAYERS, SEATS) == Problem("unknown_name", "en", "Zed")
    assert parse("open seat", PLAYERS, SEATS) == Problem("missing_name", "en")
    assert parse("standby") == Intent("standby", "en"), "the list as it is"
    assert parse("watch") == Intent("watch", "en"), "the game of the mail replied to"


@pytest.mark.parametrize("locale", LOCALES)
def test_the_narrator_says_the_table_sentences_in_every_locale(locale):
    assert sorted(book_sources(locale, "email_ui")) == sorted(book_sources("en", "email_ui"))
    params = dict(host="Hana", code="mail-k7q2m9x", name="Bob", names="sam@example.org", word="XYZ")
    keys = ["standby_lobby", "standby_seat", "seat_offer", "seat_offered", "no_seat_offered", "only_host",
            "unknown_game", "help_table", "what_hand_over", *(f"what_{k}" for k in TABLE_KINDS if not
                                                             k.startswith("standby"))]
    for key in keys:
        said = email_words(locale, key, **params)
        assert said.strip() and "{" not in said and "<" not in said, (locale, key)
        if locale != "en":
            assert said != email_words("en", key, **params), f"{key} left in English in {locale}"
    assert "Bob" in email_words(locale, "standby_seat", **params) and "mail-k7q2m9x" in email_words(
        locale, "seat_offer", **params)
    assert "sam@example.org" in email_words(locale, "standby_list", names="sam@example.org")
    assert email_words(locale, "standby_list", names="") != email_words(locale, "standby_list", names="a@b.org")


@pytest.mark.parametrize("locale", LOCALES)
def test_what_the_table_sentences_tell_to_reply_is_read_as_that_command(locale):
    main = command_words(locale)
    words = " ".join(lexicon.words(email_words(locale, "standby_seat", host="H", code="c", name="N")))
    assert " ".join(lexicon.words(main["take"])) in words
    assert parse(main["take"]).kind == "take"
    words = " ".join(lexicon.words(email_words(locale, "standby_lobby", host="H", code="c")))
    assert " ".join(lexicon.words(main["join"])) in words
    help_words = " ".join(lexicon.words(email_words(locale, "help_table")))
    for kind in TABLE_KINDS:
        assert " ".join(lexicon.words(main[kind])) in help_words, (locale, kind, main[kind])
