"""Narration: every event kind, channel and locale renders, in the locale's own words.

The catalogs' own checks (every sentence translated, placeholders kept, nothing left in English)
are in test_catalogs.py."""

from __future__ import annotations

import re
from functools import lru_cache

import pytest

from avalon.shared.protocol_records import RECORD_REASONS
from avalon.shared.narration.render import (
    CHANNELS,
    FSI,
    LOCALES,
    PDI,
    TEMPLATES,
    Context,
    Narrator,
    Recipient,
    book_sources,
    glossary,
    reasons,
)
from avalon.shared.protocol import ALL_EVENTS, INTERNAL_EVENTS
from avalon.services.engine.rules import Reason

from .narration_samples import all_samples

PUBLISHED = sorted(set(ALL_EVENTS) - INTERNAL_EVENTS)
NAMES = {f"p{i}": f"Name{i}" for i in range(1, 13)}
narrator = Narrator()


@lru_cache(maxsize=1)
def samples():
    return all_samples()


def render(locale, envelope, channel, player=None):
    who = player if player is not None else (None if envelope.audience.kind.value == "public"
                                             else envelope.audience.players[0])
    return narrator.render_in(locale, envelope, Recipient(who, (locale,), "Europe/Amsterdam"), channel,
                              Context(NAMES))


def test_sample_games_cover_every_published_event_kind():
    assert sorted(samples()) == PUBLISHED


def test_every_event_kind_has_one_template_for_every_channel_and_locale():
    missing = [k for k in PUBLISHED if not (TEMPLATES / "events" / f"{k}.html").exists()]
    assert missing == []
    assert sorted(p.stem for p in (TEMPLATES / "events").glob("*.html")) == PUBLISHED


def test_a_channels_own_template_is_more_than_an_include_of_the_shared_one():
    for path in TEMPLATES.glob("*/*.html"):
        if path.parent.name != "events":
            source = path.read_text(encoding="utf-8").strip()
            assert not re.fullmatch(r'\{% include "[^"]+" %\}', source), path


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("channel", CHANNELS + ("console",))
def test_every_sample_event_renders_with_strict_undefined(locale, channel):
    """Telegram and email, and a channel with no template of its own, which reads the shared ones."""
    for kind, envelopes in samples().items():
        for envelope in envelopes:
            out = render(locale, envelope, channel)
            assert out.text.strip(), f"{locale}/{channel}/{kind} rendered nothing"
            assert "{{" not in out.text and "{%" not in out.text


@pytest.mark.parametrize("locale", [loc for loc in LOCALES if loc != "en"])
def test_no_template_in_another_locale_is_left_in_english(locale):
    """Compare each rendering with the English one, names and numbers removed."""
    def words(text):
        text = re.sub(r"Name\d+|\d+|[^\w\s]", " ", text)
        return " ".join(text.split()).lower()
    same = []
    for kind, envelopes in samples().items():
        envelope = envelopes[0]
        english, other = render("en", envelope, "telegram").text, render(locale, envelope, "telegram").text
        if words(english) and words(english) == words(other):
            same.append(kind)
    assert same == []


@pytest.mark.parametrize("locale", LOCALES)
def test_every_rejection_reason_has_a_sentence(locale):
    assert set(reasons(locale)) == {r.value for r in Reason} | {"malformed", "unknown_game"} | set(RECORD_REASONS)


def test_names_are_escaped_for_html():
    envelope = samples()["player_joined"][0]
    out = narrator.render_in("en", envelope, Recipient(None, ("en",)), "telegram",
                             Context({envelope.event.player: "<b>Eve</b> & co"}))
    assert "&lt;b&gt;Eve&lt;/b&gt; &amp; co" in out.html
    assert "<b>Eve</b> & co" in out.text


def test_latin_names_inside_persian_text_are_isolated():
    envelope = samples()["player_joined"][0]
    out = narrator.render_in("fa", envelope, Recipient(None, ("fa",)), "telegram",
                             Context({envelope.event.player: "John"}))
    assert f"{FSI}John{PDI}" in out.html


def test_persian_email_html_is_right_to_left():
    envelope = samples()["player_joined"][0]
    out = narrator.render_in("fa", envelope, Recipient(None, ("fa",)), "email", Context(NAMES))
    assert 'dir="rtl"' in out.email_html and out.rtl


def test_the_language_falls_back_from_the_player_to_the_group_to_english():
    envelope = samples()["player_joined"][0]
    assert narrator.render(envelope, Recipient(None, ("xx", "ru")), "telegram", Context(NAMES)).locale == "ru"
    assert narrator.render(envelope, Recipient(None, ("xx", "yy")), "telegram", Context(NAMES)).locale == "en"


def test_russian_fail_counts_use_three_plural_forms():
    forms = glossary("ru")["fail_cards"]
    assert {"one", "few", "many"} <= set(forms)
    quest = next(e for e in samples()["quest_resolved"])
    for fails, expected in ((1, forms["one"]), (2, forms["few"]), (5, forms["many"])):
        body = quest.event.model_copy(update={"fails": fails})
        text = render("ru", quest.model_copy(update={"event": body}), "telegram").text
        assert f"{fails} {expected}" in text


def test_a_deadline_is_shown_in_the_recipients_time_zone():
    opened = next(e for e in samples()["phase_opened"] if e.deadline_at)
    paris = narrator.render_in("en", opened, Recipient(None, ("en",), "Europe/Paris"), "telegram", Context(NAMES))
    tokyo = narrator.render_in("en", opened, Recipient(None, ("en",), "Asia/Tokyo"), "telegram", Context(NAMES))
    assert paris.text != tokyo.text


@pytest.mark.parametrize("locale", LOCALES)
def test_the_board_rules_and_help_render_in_every_locale(locale):
    from dataclasses import replace

    from avalon.services.engine.rules import Lancelot, MissedRule, Options, view
    from avalon.services.engine.simulate import random_game

    options = replace(Options(), lady=True, excalibur=True, lancelot=Lancelot.V1)
    record = random_game(7, options, 5, keep=True)
    mid_game = record.state
    board = narrator.render_template(locale, "board.html", context=Context(NAMES), v=view(mid_game, None),
                                     deadline_at=None)
    assert "{{" not in board.text and board.text.strip()
    rules = narrator.render_template(locale, "rules.html", options=options, rules=list(MissedRule)[1:])
    help_ = narrator.render_template(locale, "help.html")
    for out in (rules, help_):
        assert out.text.strip()
    if locale != "en":
        english = narrator.render_template("en", "help.html")
        assert help_.text != english.text


@pytest.mark.parametrize("locale", LOCALES)
def test_every_locale_has_the_telegram_gateway_words(locale):
    from avalon.shared.narration.render import ui_text

    def words(loc):
        return book_sources(loc, "telegram_ui")

    assert sorted(words(locale)) == sorted(words("en"))
    params = dict(name="Ann", link="https://t.me/x", names="Ann, Bob", leader="Ann", size=3, count=1, voted=2,
                  total=7, language="X", title="Camelot", phase="vote", wait=5)
    rendered = {key: ui_text(locale, key, **params) for key in words("en")}
    assert all(text.strip() for text in rendered.values())
    if locale != "en":
        for key in ("welcome", "need_private", "waiting_private", "unreachable", "game_open", "no_game"):
            assert rendered[key] != ui_text("en", key, **params), key


def test_only_the_email_channel_has_a_page_and_a_subject():
    envelope = samples()["player_joined"][0]
    telegram, console = render("en", envelope, "telegram"), render("en", envelope, "console")
    email = render("en", envelope, "email")
    assert telegram.subject is None and telegram.email_html is None and console == telegram
    assert email.subject and "<!DOCTYPE html>" in email.email_html and email.text == telegram.text


def test_the_invited_person_reads_an_email_of_their_own():
    envelope = samples()["player_invited"][0]
    invited = render("en", envelope, "email", player=envelope.event.player)
    host = render("en", envelope, "email", player=envelope.event.by)
    group = render("en", envelope, "telegram")
    assert "Reply to this email" in invited.text and "You invited" in host.text
    assert len({invited.text, host.text, group.text}) == 3
