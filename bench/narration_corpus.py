"""Render a large corpus of narration and keep a fingerprint of every rendering, to prove that a change
to the templates or catalogs leaves the output byte for byte the same.

    python bench/narration_corpus.py dump corpus.tsv.gz        # one line per rendering: key, sha1
    python bench/narration_corpus.py compare old.tsv.gz new.tsv.gz
    python bench/narration_corpus.py show 'game3/17/'          # the renderings whose key starts so

Run ``dump`` with the code before a change and again after it, then ``compare``; ``show`` prints the
texts of the keys that differ (run it in both trees, or against ``git worktree`` of the old commit).
The corpus: every event of seeded random games with varied options (every preset, Lancelot 1/2/3,
Lady, Excalibur, anonymous votes, last word, delegated shots, missed deadlines), for every reader,
locale and channel (Telegram html/text, email html/text/subject/page), with and without a time
zone, with names in several scripts and with ``<``, ``&``; the narration test samples; every
rejection reason; every sentence of both gateways' own words; board, help, rules and options.
Only the public API of ``shared.narration.render`` and ``services.email_gateway.words`` is used.
"""

from __future__ import annotations

import gzip
import hashlib
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from avalon.services.engine.rules import Lancelot, MissedRule, Options, view  # noqa: E402
from avalon.services.engine.simulate import random_game  # noqa: E402
from avalon.shared.game.model import Phase  # noqa: E402
from avalon.shared.game.options import Conference, LadyTiming, Preset  # noqa: E402
from avalon.shared.protocol import INTERNAL_EVENTS, EventEnvelope, audience_model, event_body  # noqa: E402
from avalon.shared.narration import render as narration  # noqa: E402

LOCALES = ("en", "fa", "ru", "vi", "nl", "fr")
CHANNELS = ("telegram", "email")
START = datetime(2026, 11, 30, 18, 0, tzinfo=timezone.utc)
ZONES = (None, "Europe/Amsterdam", "Asia/Tehran", "America/New_York")
NAME_SETS = (
    ["Ann", "Bảo", "Chloé", "Dmitri", "Eva", "Farid", "Gwen", "Hélène", "Ivo", "José", "Kim", "Lê"],
    ["Аня", "Борис", "Вера", "Глеб", "Дарья", "Егор", "Жанна", "Зоя", "Игорь", "Катя", "Лев", "Мила"],
    ["علی", "مریم", "رضا", "سارا", "حسین", "نگار", "امید", "لیلا", "کاوه", "شیرین", "بابک", "نازنین"],
    ["Nguyễn Văn An", "Trần Thị Bình", "Lê Cường", "Phạm Dũng", "Hoàng Em", "Đặng Giang", "Vũ Hà",
     "Bùi Khánh", "Đỗ Linh", "Hồ Minh", "Ngô Nam", "Dương Oanh"],
    ["<b>Eve</b>", "Tom & Jerry", "a<b", "Zoë \"Z\"", "O'Neil", "x&amp;y", "<script>", "Ann", "Bo", "Cy",
     "Di", "Ed"],
    ["ann", "bob", "chloé", "dmitri", "eva", "farid", "gwen", "hugo", "ivo", "jo", "kim", "lu"],
)


def game_options(i: int) -> tuple[int, Options, float]:
    preset = (Preset.CLASSIC, Preset.ONLINE, Preset.FORUM)[i % 3]
    base = Options.preset_defaults(preset)
    most = 12 if preset is Preset.FORUM else 10
    players = 5 + (i * 7) % (most - 4)
    options = replace(
        base,
        max_players=max(players, base.max_players if players <= base.max_players else players),
        lady=i % 2 == 0,
        excalibur=i % 5 in (1, 3),
        lancelot=(Lancelot.NONE, Lancelot.V1, Lancelot.V2, Lancelot.V3)[(i // 3) % 4],
        anonymous_votes=i % 7 in (2, 5),
        last_word=i % 4 == 1,
        assassin_may_delegate=i % 6 in (0, 4),
        conference=(Conference.PRIVATE, Conference.PUBLIC)[(i // 2) % 2],
        lady_timing=(LadyTiming.AFTER_QUEST, LadyTiming.BEFORE_NEXT_PROPOSAL)[(i // 5) % 2],
        good_may_fail=i % 9 == 4,
        oberon_known_to_evil=i % 8 == 3,
    )
    rate = (0.0, 0.05, 0.15, 0.3)[i % 4]
    return players, options, rate


def game_renderings(count: int) -> Iterator[tuple[str, str]]:
    narrator = narration.Narrator()
    for i in range(count):
        players, options, rate = game_options(i)
        try:
            record = random_game(players, options, 1000 + i, timeout_rate=rate, keep=True)
        except Exception as error:  # an option mix the rules refuse: say so and go on
            yield f"game{i}/setup", f"refused {type(error).__name__}"
            continue
        names_list = NAME_SETS[i % len(NAME_SETS)]
        seats = [f"p{n}" for n in range(1, players + 1)]
        names = {p: names_list[n] for n, p in enumerate(seats)}
        if i % 5 == 3:
            names.pop(seats[-1])  # a player never named: shown by id
        zone = ZONES[i % len(ZONES)]
        context = narration.Context(names, {"title": f"Camelot {i}"} if i % 2 else {})
        for seq, event in enumerate(record.events, 1):
            body = event_body(event)
            if body.type in INTERNAL_EVENTS:
                continue
            at = START + timedelta(minutes=seq)
            envelope = EventEnvelope(
                message_id=f"c{i}:{seq}", game_id=f"c{i}", seq=seq, occurred_at=at,
                audience=audience_model(event.audience), event=body,
                deadline_at=at + timedelta(seconds=body.timeout_seconds) if body.type == "phase_opened"
                and seq % 3 else None)
            readers = [None] if event.audience.kind.value == "public" else list(event.audience.players)
            for reader in readers:
                for locale in LOCALES:
                    recipient = narration.Recipient(reader, (locale,), zone)
                    for channel in CHANNELS:
                        out = narrator.render_in(locale, envelope, recipient, channel, context)
                        yield from fields(f"game{i}/{seq}/{reader}/{locale}/{channel}", out)
            if body.type == "game_started" or seq % 40 == 0:
                yield from views(f"game{i}/{seq}", record, names, zone)
        yield from views(f"game{i}/end", record, names, zone, final=True)


def views(prefix: str, record, names: dict, zone: str | None, final: bool = False) -> Iterator[tuple[str, str]]:
    narrator = narration.Narrator()
    state = record.state
    board = view(state, None)
    for locale in LOCALES:
        out = narrator.render_template(locale, "board.html", narration.Recipient(None, (locale,), zone),
                                       narration.Context(names), v=board,
                                       deadline_at=START if not final else None)
        yield from fields(f"{prefix}/board/{locale}", out)


def fields(key: str, out) -> Iterator[tuple[str, str]]:
    yield f"{key}/locale", f"{out.locale} {out.rtl}"
    yield f"{key}/html", out.html
    yield f"{key}/text", out.text
    if out.subject is not None or out.email_html is not None:
        yield f"{key}/subject", str(out.subject)
        yield f"{key}/email_html", str(out.email_html)


def sample_renderings() -> Iterator[tuple[str, str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.unit.narration_samples import all_samples

    narrator = narration.Narrator()
    names = {f"p{i}": f"Name{i}" for i in range(1, 13)} | {"p3": "<i>Tom</i> & Co", "tg:9": "Vũ"}
    for kind, envelopes in sorted(all_samples().items()):
        for n, envelope in enumerate(envelopes):
            readers = [None] if envelope.audience.kind.value == "public" else list(envelope.audience.players)
            for reader in readers:
                for locale in LOCALES:
                    for zone in (None, "Europe/Amsterdam"):
                        recipient = narration.Recipient(reader, (locale,), zone)
                        for channel in CHANNELS:
                            out = narrator.render_in(locale, envelope, recipient, channel,
                                                     narration.Context(names, {"title": "T"}))
                            yield from fields(f"sample/{kind}/{n}/{reader}/{locale}/{zone}/{channel}", out)
            # the fallback chain picks the locale
            out = narrator.render(envelope, narration.Recipient(readers[0], ("xx", "ru")), "telegram",
                                  narration.Context(names))
            yield from fields(f"sample/{kind}/{n}/fallback", out)


REASON_PARAMS = [
    {"phase": Phase.VOTE, "max": 10, "min": 5, "count": 4, "option": "max_players", "problem": "between 5 and 10",
     "role": "loyal_servant", "seats": 2, "wanted": 3, "quest": 2, "size": 3, "picked": 2, "player": "tg:9",
     "card": "fail", "allowed": "success"},
    {"phase": "quest", "max": 1, "min": 5, "count": 1, "option": "<x>", "problem": "a & b", "role": "morgana",
     "seats": 1, "wanted": 21, "quest": 5, "size": 1, "picked": 22, "card": "success", "allowed": "fail"},
    {"phase": "lady", "max": 2, "min": 5, "count": 12, "option": "timers", "problem": "x", "role": "oberon",
     "seats": 3, "wanted": 5, "quest": 1, "size": 5, "picked": 0, "player": "p3", "card": "fail",
     "allowed": "success"},
]


def reason_renderings() -> Iterator[tuple[str, str]]:
    names = {"tg:9": "Vũ <9>", "p3": "Аня & Co"}
    for locale in LOCALES:
        for key in sorted(narration.reasons(locale)):
            for n, params in enumerate(REASON_PARAMS):
                template = narration.sentence(locale, narration.reasons(locale)[key])
                try:
                    text = narration.html_to_text(template.render(p=params, names=names, tz=None, tz_known=False))
                except Exception as error:  # a sentence that needs a parameter this sample lacks
                    text = f"error {type(error).__name__}"
                yield f"reason/{locale}/{key}/{n}", text


TELEGRAM_PARAMS = [
    dict(name="Ann", link="https://t.me/x?start=join_g1", names="Ann, Bob", leader="Ann", size=3, count=1,
         voted=2, total=7, language="Français", title="Camelot", phase="vote", wait=5),
    dict(name="<b>Eve</b> & co", link="https://t.me/x?a=1&b=2", names="علی، <i>", leader="Đức", size=1,
         count=0, voted=0, total=12, language="فارسی", title="a & b", phase="lady", wait=3600),
    dict(name="Аня", link="l", names="", leader="x", size=5, count=5, voted=10, total=10, language="Русский",
         title="<t>", phase="proposal", wait=0),
]

EMAIL_PARAMS = [
    dict(example="approve #12", name="Ann", names="Ann, Bob", count=2, size=3, what="your vote", word="Zed",
         code="K7Q2", host="Ann", address="ann@example.org", language="Français", zone="Europe/Paris",
         text="hello", wait=60),
    dict(example="", name="<b>Eve</b> & co", names="", count=0, size=1, what="a & <b>", word="<x>",
         code="A&B", host="O'Neil", address="a<b@x", language="فارسی", zone="Asia/Tehran", text="classic",
         wait=1),
    dict(example="ja", name="Аня", names="Đức, علی", count=5, size=5, what="", word="Zoë", code="c",
         host="Vũ", address="v@x.vn", language="Tiếng Việt", zone="UTC", text="", wait=86400),
    dict(text="custom & <rules>", wait=90061),
]


def ui_renderings() -> Iterator[tuple[str, str]]:
    from avalon.services.email_gateway.words import email_words

    for locale in LOCALES:
        for key in TELEGRAM_KEYS:
            for n, params in enumerate(TELEGRAM_PARAMS):
                yield f"telegram_ui/{locale}/{key}/{n}", narration.ui_text(locale, key, **params)
        for key in EMAIL_KEYS:
            for n, params in enumerate(EMAIL_PARAMS):
                try:
                    text = email_words(locale, key, **params)
                except Exception as error:  # a sentence that needs a variable this sample lacks
                    text = f"error {type(error).__name__}"
                yield f"email_ui/{locale}/{key}/{n}", text


TELEGRAM_KEYS = (
    "join confirm sheathe welcome need_private waiting_private unreachable game_open no_game group_only pick "
    "sword tally sent language_set no_games my_game lost_message game_header invite_usage invite_invalid "
    "too_fast").split()
EMAIL_KEYS = (
    "how_to_answer choices_heading label_approve label_reject label_success label_fail label_sheathe label_pick "
    "label_lady label_excalibur label_shoot label_accuse label_hand label_join label_start label_leave "
    "team_draft team_excalibur_needed receipt what_join what_leave what_start what_cancel what_approve "
    "what_reject what_success what_fail what_team what_pick what_lady what_excalibur what_sheathe what_shoot "
    "what_accuse what_hand what_say what_last_word what_status what_rules what_help what_language "
    "what_timezone what_new_game what_invite unknown_command ambiguous_name unknown_name missing_name "
    "unknown_language unknown_timezone no_address choices_still_open not_your_token not_verified no_game "
    "unknown_sender game_created invitation invited address_failing lost_message language_set timezone_set "
    "too_many_mails help footer footer_playing footer_over footer_plain stale_phase").split()


def template_renderings() -> Iterator[tuple[str, str]]:
    narrator = narration.Narrator()
    option_sets = [Options.preset_defaults(p) for p in Preset] + [
        replace(Options(), lady=True, excalibur=True, lancelot=Lancelot.V1, last_word=True, roles=()),
        replace(Options.preset_defaults("forum"), lady=True, lancelot=Lancelot.V2, anonymous_votes=True,
                good_may_fail=True, assassin_may_delegate=True, oberon_known_to_evil=True),
        replace(Options.preset_defaults("online"), excalibur=True, lancelot=Lancelot.V3,
                roles=tuple(r for r in Options().roles or ()) or None),
    ]
    from avalon.shared.game.model import Role

    option_sets.append(replace(Options(), roles=(Role.PERCIVAL, Role.MORGANA, Role.OBERON)))
    for locale in LOCALES:
        for zone in (None, "Asia/Tokyo"):
            recipient = narration.Recipient("p1", (locale,), zone)
            yield from fields(f"help/{locale}/{zone}", narrator.render_template(locale, "help.html", recipient))
            yield from fields(f"help/{locale}/{zone}/none", narrator.render_template(locale, "help.html"))
        for n, options in enumerate(option_sets):
            yield from fields(f"rules/{locale}/{n}", narrator.render_template(
                locale, "rules.html", options=options, rules=list(MissedRule)[1:]))
            yield from fields(f"options/{locale}/{n}", narrator.render_template(
                locale, "_options.html", options=options))
        # the pieces the email gateway renders itself
        env = narration.environment(locale)
        for title in ({"title": "Camelot & <co>"}, {}):
            yield f"subject/{locale}/{bool(title)}", env.get_template("email/_subject.html").render(
                game=title or {"title": "g1"}, envelope=None, names={}, tz=None, tz_known=False)
        yield f"page/{locale}", env.get_template("email/_page.html").render(
            body=narration.Markup("<p>x &amp; y</p>"), subject="S & <t>", locale=locale,
            rtl=locale in narration.RTL)
        yield f"left/{locale}", narration.sentence(locale, "{{ s|left }}").render(s=4000)
        yield f"glossary/{locale}", repr(sorted(narration.glossary(locale).items()))
        yield f"pick/{locale}", narration.pick_locale((locale, "en"))


def everything(games: int) -> Iterator[tuple[str, str]]:
    yield from template_renderings()
    yield from reason_renderings()
    yield from ui_renderings()
    yield from sample_renderings()
    yield from game_renderings(games)


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def dump(path: str, games: int) -> None:
    count = 0
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for key, text in everything(games):
            out.write(f"{key}\t{digest(text)}\n")
            count += 1
    print(f"{count} renderings written to {path}")


def compare(old_path: str, new_path: str) -> int:
    def load(path):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return dict(line.rstrip("\n").split("\t") for line in handle)
    old, new = load(old_path), load(new_path)
    missing, added = sorted(set(old) - set(new)), sorted(set(new) - set(old))
    changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
    print(f"{len(old)} old, {len(new)} new; {len(changed)} differ, {len(missing)} missing, {len(added)} added")
    for key in (changed + missing + added)[:60]:
        print("  ", key)
    return 1 if changed or missing or added else 0


def show(prefix: str, games: int) -> None:
    for key, text in everything(games):
        if key.startswith(prefix):
            print(f"----- {key}\n{text}")


if __name__ == "__main__":
    command, *args = sys.argv[1:] or ["dump", "corpus.tsv.gz"]
    games = int(__import__("os").environ.get("CORPUS_GAMES", "240"))
    if command == "dump":
        dump(args[0], games)
    elif command == "compare":
        sys.exit(compare(*args))
    elif command == "show":
        show(args[0], games)
    else:
        sys.exit(__doc__)
