"""The email gateway's words: typed commands read in six languages, our links read back, and what the
narrator says by mail (the ``email_ui`` sentences of the catalogs) in every locale."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avalon.services.email_gateway import lexicon
from avalon.services.email_gateway.wording import KINDS, RECORD_KINDS, TABLE_KINDS, Intent, Problem, command_words, link_body, parse
from avalon.shared.narration.render import FSI, LOCALES, PDI, book_sources, environment

PLAYERS = {"m:ann": "Ann", "m:bob": "Bob Marley", "m:cleo": "Cléo", "m:duc": "Đức Hương", "m:anya": "Аня",
           "m:ali": "علی", "m:jo": "Jo-Anne O'Neil"}
SEATS = tuple(PLAYERS)
TARGETED = ("team", "pick", "lady", "excalibur", "shoot", "accuse", "hand")


def words(locale: str) -> dict[str, str]:
    return book_sources(locale, "email_ui")


VARIABLES = dict(example="approve #12", name="Ann", names="Ann, Bob", count=2, size=3, what="your vote",
                 word="Zed", code="K7Q2", host="Ann", address="ann@example.org", language="Français",
                 zone="Europe/Paris", text="hello", wait=60)
NEEDS = {  # key -> the variables it is documented to take
    "how_to_answer": ("example",), "team_draft": ("names", "count", "size"), "receipt": ("what",),
    "ambiguous_name": ("word", "names"), "unknown_name": ("word",), "unknown_language": ("word",),
    "unknown_timezone": ("word",), "game_created": ("code",), "invitation": ("host", "code"),
    "invited": ("names",), "address_failing": ("name", "address"), "address_working": ("name", "address"),
    "language_set": ("language",),
    "timezone_set": ("zone",), "too_many_mails": ("wait",),
    **{f"label_{k}": ("name",) for k in ("pick", "lady", "excalibur", "shoot", "accuse", "hand")},
    **{f"what_{k}": ("names",) for k in TARGETED},
    **{f"what_{k}": ("text",) for k in ("say", "last_word", "language", "timezone", "new_game", "invite")},
}


def render(locale: str, key: str, **extra) -> str:
    params = {v: VARIABLES[v] for v in NEEDS.get(key, ())} | extra
    return environment(locale).from_string(words(locale)[key]).render(**(dict(names={}, tz=None, tz_known=False) | params))


def loose(text: str) -> str:
    return " ".join(lexicon.words(text))


# -- what the narrator says ------------------------------------------------------------

@pytest.mark.parametrize("locale", LOCALES)
def test_every_locale_has_exactly_the_english_keys_and_a_receipt_for_every_command(locale):
    assert sorted(words(locale)) == sorted(words("en"))
    assert {f"what_{kind}" for kind in KINDS} <= set(words(locale))


@pytest.mark.parametrize("locale", LOCALES)
def test_every_sentence_renders_with_only_its_documented_variables(locale):
    rendered = {key: render(locale, key) for key in words(locale)}
    assert all(text.strip() for text in rendered.values())
    assert all("<" not in text and "{" not in text for text in rendered.values()), "plain text, no leftovers"
    for key, needs in NEEDS.items():
        for variable in needs:
            if variable != "example":
                assert str(VARIABLES[variable]) in rendered[key], (key, variable)
    if locale != "en":
        same = [k for k in rendered if rendered[k] == render("en", k)]
        assert len(same) <= 1, f"left in English: {same}"


@pytest.mark.parametrize("locale", LOCALES)
def test_an_empty_draft_and_a_new_game_without_preset_still_read_well(locale):
    assert "{{" not in render(locale, "team_draft", names="", count=0, size=3)
    assert render(locale, "team_draft", names="", count=0, size=3) != render(locale, "team_draft")
    classic = render(locale, "what_new_game", text="classic")
    assert environment(locale).globals["g"]["presets"]["classic"] in classic
    assert render(locale, "what_new_game", text="") not in ("", classic)


MENTIONS = {"no_game": ("new_game",), "unknown_sender": ("new_game", "join"), "invitation": ("join",),
            "game_created": ("invite", "join", "start"), "lost_message": ("status",), "footer": ("leave",),
            "footer_playing": ("help", "status"), "footer_over": ("new_game",), "footer_plain": ("help",),
            "unknown_command": ("help",), "help": KINDS + RECORD_KINDS}


@pytest.mark.parametrize("locale", LOCALES)
def test_each_sentence_that_says_what_to_reply_names_a_word_that_works(locale):
    main = command_words(locale)
    for key, kinds in MENTIONS.items():
        text = loose(render(locale, key))
        for kind in kinds:
            assert loose(main[kind]) in text, (key, kind, main[kind])
            read = parse(link_body(locale, kind, _argument(kind)), PLAYERS, SEATS)
            assert isinstance(read, Intent) and read.kind == kind, (kind, read)


def test_persian_sentences_isolate_names_so_latin_text_stays_whole():
    for key in ("label_pick", "invitation", "address_failing", "address_working", "what_team",
                "ambiguous_name"):
        assert f"{FSI}Ann" in render("fa", key) and PDI in render("fa", key), key


# -- our links read back ----------------------------------------------------------------

def _argument(kind: str) -> list[str]:
    return {"team": ["Ann", "Bob Marley", "Cléo"], "language": ["fr"], "timezone": ["Europe/Paris"],
            "invite": ["ann@example.org"], "new_game": ["online"], "say": ["hello"],
            "last_word": ["it was me"]}.get(kind, ["Đức Hương"] if kind in TARGETED else [])


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("phase_id", [12, None])
def test_every_link_body_reads_back_as_its_command_targets_and_phase(locale, phase_id):
    for kind in KINDS:
        body = link_body(locale, kind, _argument(kind), phase_id)
        read = parse(body, PLAYERS, SEATS)
        assert isinstance(read, Intent), (body, read)
        targets = tuple(p for n in _argument(kind) for p, shown in PLAYERS.items() if shown == n)
        assert (read.kind, read.targets, read.phase_id) == (kind, targets if kind in TARGETED else (), phase_id)
        main = command_words(locale)[kind]
        assert read.language == locale or main in [w.lstrip("=") for w in lexicon.WORDS[read.language][kind]]
    assert parse(link_body(locale, "pick", ["4"], 3), PLAYERS, SEATS).targets == ("m:duc",), "seat numbers too"


def test_link_bodies_are_the_command_word_then_names_then_the_phase():
    assert link_body("ru", "approve", phase_id=12) == "за #12"
    assert link_body("en", "pick", ["Ann"], 4) == "pick Ann #4"
    assert link_body("fa", "team", ["Ann", "علی"], 2) == "تیم Ann، علی #2"
    assert link_body("fr", "new_game", ["online"]) == "nouvelle partie en ligne"
    assert parse(link_body("en", "say", ["I saw #3 fail"], 7)) == Intent("say", "en", (), "I saw #3 fail", 7)


# -- typed commands ------------------------------------------------------------------------

TYPED = [
    ("en", "Team Ann, Bob and Cleo", "team", ("m:ann", "m:bob", "m:cleo"), ""),
    ("en", "team 1 3 5 #12", "team", ("m:ann", "m:cleo", "m:anya"), ""),
    ("en", "time zone europe/paris", "timezone", (), "Europe/Paris"),
    ("en", "hand over to bob", "hand", ("m:bob",), ""),
    ("en", "Keep sheathed!", "sheathe", (), ""),
    ("en", "excalibur: none", "sheathe", (), ""),
    ("fa", "تیم علی و ۱ و ۲", "team", ("m:ali", "m:ann", "m:bob"), ""),
    ("fa", "تيم ۳، ۴", "team", ("m:cleo", "m:duc"), ""),  # Arabic yeh typed
    ("fa", "زبان فرانسوی", "language", (), "fr"),
    ("fa", "منطقهٔ زمانی Asia/Tehran", "timezone", (), "Asia/Tehran"),
    ("fa", "\u200fموافقم\u200f", "approve", (), ""),
    ("ru", "команда: Аня, Bob и Cleo", "team", ("m:anya", "m:bob", "m:cleo"), ""),
    ("ru", "Выбрать Аню", "pick", ("m:anya",), ""),
    ("ru", "язык английский", "language", (), "en"),
    ("ru", "часовой пояс Moscow", "timezone", (), "Europe/Moscow"),
    ("ru", "Я против", "reject", (), ""),
    ("vi", "đội 1, 2, 4", "team", ("m:ann", "m:bob", "m:duc"), ""),
    ("vi", "doi Ann va Cleo", "team", ("m:ann", "m:cleo"), ""),
    ("vi", "ngôn ngữ Tiếng Việt", "language", (), "vi"),
    ("vi", "mui gio Asia/Ho_Chi_Minh", "timezone", (), "Asia/Ho_Chi_Minh"),
    ("vi", "không dùng Excalibur", "sheathe", (), ""),
    ("vi", "khong dong y", "reject", (), ""),
    ("en", "team Ann, Bob en Cléo", "team",  # "team" is English and Dutch: read as English
     ("m:ann", "m:bob", "m:cleo"), ""),
    ("en", "team 2 4 6", "team", ("m:bob", "m:duc", "m:ali"), ""),
    ("nl", "taal Frans", "language", (), "fr"),
    ("nl", "tijdzone Europe/Amsterdam", "timezone", (), "Europe/Amsterdam"),
    ("nl", "geef het schot aan Bob", "hand", ("m:bob",), ""),
    ("fr", "équipe Ann, Bob et Cléo", "team", ("m:ann", "m:bob", "m:cleo"), ""),
    ("fr", "EQUIPE 1 2 3", "team", ("m:ann", "m:bob", "m:cleo"), ""),
    ("fr", "langue : néerlandais", "language", (), "nl"),
    ("fr", "fuseau horaire America/Montreal", "timezone", (), "America/Montreal"),
    ("fr", "J’accuse Cléo !", "accuse", ("m:cleo",), ""),
    ("fr", "nouvelle partie en ligne", "new_game", (), "online"),
    ("en", "stats", "stats", (), ""),  # one's own
    ("en", "stats Cleo", "stats", ("m:cleo",), ""),  # another player's, by name
    ("fa", "آمار علی", "stats", ("m:ali",), ""),
    ("ru", "статистика Ани", "stats", ("m:anya",), ""),
    ("vi", "thống kê Duc", "stats", ("m:duc",), ""),
    ("nl", "statistieken Bob", "stats", ("m:bob",), ""),
    ("fr", "statistiques Cléo", "stats", ("m:cleo",), ""),
]


@pytest.mark.parametrize("language, typed, kind, targets, text", TYPED)
def test_commands_typed_in_each_language_are_read(language, typed, kind, targets, text):
    assert parse(typed, PLAYERS, SEATS) == Intent(kind, language, targets, text, 12 if "#12" in typed else None)


@pytest.mark.parametrize("typed", ["english", "Français", "french", "فارسی", "русский", "Tiếng Việt",
                                   "Nederlands", "nl", "FR", "vietnamien", "персидский", "هلندی"])
def test_a_language_is_understood_by_its_code_or_its_name_in_any_of_the_six(typed):
    read = parse(f"language {typed}")
    assert read.kind == "language" and read.text in LOCALES
    assert parse(f"langue {typed}").text == read.text


def test_names_are_matched_forgivingly_but_never_guessed():
    assert parse("pick ANN", PLAYERS, SEATS).targets == ("m:ann",)
    assert parse("pick cleo", PLAYERS, SEATS).targets == ("m:cleo",), "accents"
    assert parse("pick duc huong", PLAYERS, SEATS).targets == ("m:duc",), "Vietnamese without tones"
    assert parse("pick Marl", PLAYERS, SEATS).targets == ("m:bob",), "a later word of the name"
    assert parse("shoot jo-anne o'neil", PLAYERS, SEATS).targets == ("m:jo",)
    assert parse("team Bob Marley Ann", PLAYERS, SEATS).targets == ("m:bob", "m:ann"), "a name of two words"
    twins = {"a": "Annabelle", "b": "Anna", "c": "Bob"}
    assert parse("pick annab", twins).targets == ("a",), "a unique prefix"
    assert parse("pick Anna", twins).targets == ("b",), "a whole name beats a prefix"
    assert parse("lady ann", twins, ("c", "b", "a")) == Problem("ambiguous_name", "en", "ann", ("b", "a"))
    assert parse("team Ann, Zed", PLAYERS, SEATS) == Problem("unknown_name", "en", "Zed")
    assert parse("team 1 9", PLAYERS, SEATS) == Problem("unknown_name", "en", "9")
    assert parse("shoot", PLAYERS, SEATS) == Problem("missing_name", "en")
    assert parse("équipe", PLAYERS, SEATS) == Problem("missing_name", "fr")


def test_colliding_words_are_decided():
    assert parse("no").kind == "reject" and parse("No!").kind == "reject"
    assert parse("No idea who Merlin is") == Problem("unknown_command", None), "a bare vote stands alone"
    assert parse("Leave it to me") == Problem("unknown_command", None)
    assert parse("yes please").kind == "approve" and parse("ja, graag").kind == "approve"
    assert parse("no excalibur").kind == "sheathe"
    assert parse("không").kind == "reject" and parse("không dùng").kind == "sheathe"
    assert parse("moi aussi") == Problem("unknown_command", None), "French 'moi' is not Vietnamese 'mời'"
    assert parse("mời lan@example.org") == Intent("invite", "vi", (), "lan@example.org")
    assert parse("нет").kind == "reject" and parse("экскалибур нет").kind == "sheathe"


def test_no_phrase_means_two_different_commands():
    meaning: dict[str, str] = {}
    for locale in LOCALES:
        for kind, phrases in lexicon.WORDS[locale].items():
            for phrase in phrases:
                spaced, loosened, joined = lexicon.phrase_keys(phrase.lstrip("="))
                for key in {spaced, spaced.replace(" ", ""), loosened, joined}:
                    assert meaning.setdefault(key, kind) == kind, (locale, phrase, meaning[key])


def test_a_message_keeps_its_lines_and_its_own_hash_numbers():
    assert parse("say: I think #3 is Merlin\nand Bob too  \n") == Intent("say", "en", (), "I think #3 is Merlin\nand Bob too")
    assert parse("последнее слово #41\n\nЯ не Мерлин!") == Intent("last_word", "ru", (), "Я не Мерлин!", 41)
    assert parse("nói") == Intent("say", "vi", (), "")


def test_the_phase_marker_is_read_anywhere_on_the_command_line_only():
    assert parse("#۱۲ موافق").phase_id == 12
    assert parse("approve\n#12").phase_id is None
    assert parse("approve #7 #8") == Intent("approve", "en", (), "", 8), "the last marker counts"


def test_invitations_collect_every_address_lower_cased_once():
    read = parse("invite Ann@Example.org, bob@example.org\n<mailto:ANN@example.org> cleo@example.org.")
    assert read == Intent("invite", "en", (), "ann@example.org bob@example.org cleo@example.org")
    assert parse("uitnodigen iedereen") == Problem("no_address", "nl")


def test_time_zones_and_presets_are_checked():
    assert parse("timezone utc").text == "UTC"
    assert parse("múi giờ Ho Chi Minh").text == "Asia/Ho_Chi_Minh"
    assert parse("tijdzone Mars/Olympus") == Problem("unknown_timezone", "nl", "Mars/Olympus")
    assert parse("new game").text == "" and parse("новая игра форум").text == "forum"
    assert parse("بازی جدید کلاسیک").text == "classic" and parse("ván mới trực tuyến").text == "online"


@pytest.mark.parametrize("odd", ["", "   \n\n", "🙂🎲", "\u200f\u200e\u202b", "#" + "9" * 5000, "x" * 10_000,
                                 "team " + "1 " * 3000, "say " + "ب" * 10_000, "\x00\ud800?"])
def test_odd_mail_never_raises(odd):
    assert isinstance(parse(odd, PLAYERS, SEATS), (Intent, Problem))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.dictionaries(st.text(max_size=6), st.text(max_size=12), max_size=6))
def test_any_text_with_any_names_is_read_or_refused_never_raises(text, players):
    for body in (text, "team " + text, "pick " + text, "language " + text, "time zone " + text):
        read = parse(body, players, tuple(players))
        assert isinstance(read, (Intent, Problem))
        if isinstance(read, Intent):
            assert read.kind in KINDS + RECORD_KINDS + TABLE_KINDS and set(read.targets) <= set(players)


# -- the people around the table (issue 21): the variables their sentences take (tests in test_email_table_words)

NEEDS.update({"standby_lobby": ("host", "code"), "standby_seat": ("host", "code", "name"),
              "seat_offer": ("host", "code", "name"), "seat_offered": ("name", "names"), "unknown_game": ("word",),
              "standby_list": ("names",), **{f"what_{k}": ("names",) for k in ("open_seat", "pass_host", "remove")}})
