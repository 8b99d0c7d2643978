"""What a mail of the narrator tells its reader to do next: the leader's draft asks for Excalibur's
holder once the team is full and its typed example carries both, a mail holds one draft and one set
of choices (the newest), and its footer fits where the game is."""

from __future__ import annotations

import re

import pytest

from avalon.services.email_gateway.channel import EmailChannel
from avalon.services.email_gateway.compose import Identity
from avalon.services.email_gateway.notes import MailNotes, Pending
from avalon.services.email_gateway.tokens import Tokens
from avalon.services.email_gateway.wording import Intent, link_body, parse
from avalon.services.email_gateway.words import email_words
from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.outbox import Row
from avalon.shared.delivery.roster import Roster
from avalon.shared.delivery.table import Draft, Seats, Table, Turn
from avalon.shared.game import Phase
from avalon.shared.narration.render import LOCALES
from avalon.shared.protocol import Choice, ChoicesOffered, CommandKind, Person

NAMES = {"mail:boris@x.org": "Boris", "mail:chloe@x.org": "Chloe", "mail:dmitri@x.org": "Dmitri",
         "mail:elena@x.org": "Elena", "mail:greta@x.org": "Greta"}
SEATS = list(NAMES)
LEADER = SEATS[0]


class Recorder:
    def __init__(self) -> None:
        self.sent = []

    async def send(self, message) -> None:
        self.sent.append(message)


def channel(locale: str = "en") -> EmailChannel:
    roster = Roster("mail:")
    for player, name in NAMES.items():
        roster.people[player] = Person(display_name=name, language=locale)
    return EmailChannel(Identity("narrator@x.org"), Tokens("s" * 32), Recorder(), roster)


def proposal(picks=(), holder=None, excalibur=True) -> Game:
    offer = ChoicesOffered(player=LEADER, phase=Phase.PROPOSAL, phase_id=5, choices=(
        Choice(kind=CommandKind.PROPOSE_TEAM, targets=tuple(SEATS), count=3, excalibur=excalibur),))
    table = Table("mail-t1", seats=Seats(host=LEADER, players=list(SEATS)),
                  turn=Turn(phase=Phase.PROPOSAL, phase_id=5, leader=LEADER, team_size=3, offers={LEADER: offer}),
                  draft=Draft(picks=list(picks), holder=holder))
    return Game(table, MailNotes("mail-t1"))


def example_of(text: str) -> str:
    """The typed example a mail gives, between its quotation marks (“…”, «…», ‘…’)."""
    found = re.findall(r"[“«‘„]\s?([^”»’“]+?)\s?[”»’“]", text)
    assert found, f"no typed example in {text!r}"
    return found[-1]


def draft_text(ch: EmailChannel, game: Game, locale: str) -> str:
    (_, said), (_, block) = ch.links.draft_block(game, locale, LEADER)
    return f"{said}\n\n{block}"


# -- Excalibur in the leader's draft ----------------------------------------------------------

@pytest.mark.parametrize("locale", LOCALES)
def test_a_full_team_with_excalibur_in_play_asks_for_its_holder_with_links_and_a_typed_example(locale):
    ch = channel(locale)
    full = proposal(picks=[SEATS[1], SEATS[2], SEATS[3]])
    text = draft_text(ch, full, locale)
    assert email_words(locale, "team_excalibur_needed") in text
    labels = [line for line in text.splitlines() if line.startswith("- ")]
    holders = [email_words(locale, "label_excalibur", name=NAMES[p]) for p in SEATS[1:4]]
    assert all(any(line.startswith(f"- {h}") for line in labels[:3]) for h in holders), labels[:4]
    assert not any(email_words(locale, "label_excalibur", name="Greta") in line for line in labels), \
        "only a team member is offered the sword"
    assert not any(email_words(locale, "label_pick", name="Greta") in line for line in labels), \
        "no link to pick a player the full team has no room for"
    assert len(labels) == 3 + 3, "the sword for each member, a drop for each member"
    typed = parse(example_of(text), NAMES, SEATS)
    assert isinstance(typed, Intent) and typed.kind == "team", (example_of(text), typed)
    assert typed.targets == tuple(SEATS[1:4]) and typed.holder in SEATS[1:4]


@pytest.mark.parametrize("locale", LOCALES)
def test_a_team_still_being_picked_does_not_ask_for_the_holder_yet_but_its_example_names_one(locale):
    ch = channel(locale)
    text = draft_text(ch, proposal(picks=[SEATS[1]]), locale)
    assert email_words(locale, "team_excalibur_needed") not in text
    typed = parse(example_of(text), NAMES, SEATS)
    assert isinstance(typed, Intent) and typed.kind == "team" and len(typed.targets) == 3
    assert typed.holder in typed.targets and typed.holder != LEADER


@pytest.mark.parametrize("locale", LOCALES)
def test_without_excalibur_the_example_is_the_team_alone(locale):
    text = draft_text(channel(locale), proposal(picks=[SEATS[1], SEATS[2], SEATS[3]], excalibur=False), locale)
    assert email_words(locale, "team_excalibur_needed") not in text
    typed = parse(example_of(text), NAMES, SEATS)
    assert isinstance(typed, Intent) and typed.kind == "team" and typed.holder is None


# -- typing the team and the holder in one reply -------------------------------------------------

@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("order", ["team first", "holder first"])
def test_team_and_holder_typed_in_one_reply_in_either_order_in_every_language(locale, order):
    team = link_body(locale, "team", ["Boris", "Chloe", "Dmitri"])
    sword = link_body(locale, "excalibur", ["Chloe"])
    clause = "؛ " if locale == "fa" else "; "
    line = f"{team}{clause}{sword} #5" if order == "team first" else f"{sword}{clause}{team} #5"
    read = parse(line, NAMES, SEATS)
    assert read == Intent("team", read.language, tuple(SEATS[:3]), "", 5, SEATS[1]), (line, read)


@pytest.mark.parametrize("typed, holder", [
    ("team 1 2 3, excalibur 2", 1), ("team Boris, Chloe, Dmitri", None),
    ("équipe Boris, Chloe, Dmitri ; excalibur Chloe", 1),
    ("excalibur chloe; team boris chloe dmitri", 1), ("team Boris, Chloe, Dmitri; excalibur Zed", "unknown"),
])
def test_team_and_holder_lines_as_people_type_them(typed, holder):
    read = parse(typed, NAMES, SEATS)
    if holder == "unknown":
        assert read.reason == "unknown_name" and read.word == "Zed"
    elif holder is None:
        assert not (isinstance(read, Intent) and read.holder)
    else:
        assert isinstance(read, Intent) and read.kind == "team" and read.holder == SEATS[holder], read


# -- one draft, one set of choices per mail ------------------------------------------------------

def rows_of(bodies) -> list[Row]:
    return [Row(n, f"e{n}", "mail-t1", "boris@x.org", body) for n, body in enumerate(bodies, start=1)]


async def test_a_mail_of_several_picks_shows_only_the_newest_draft_and_one_set_of_links():
    ch = channel("en")
    from avalon.services.email_gateway.pages import game_body
    bodies = []
    game = proposal()
    offer = game.table.offer(LEADER)
    block = ch.links.choices_block(game, "en", LEADER, offer)
    bodies.append(game_body(game, 5, "en", "Avalon", "<p>🎯 Your move</p>", "🎯 Your move", block=block))
    for picks in ([SEATS[1]], [SEATS[1], SEATS[2]], [SEATS[1], SEATS[2], SEATS[3]]):
        game.table.draft.picks = list(picks)
        said, block = ch.links.draft_block(game, "en", LEADER)
        bodies.append(game_body(game, 5, "en", "Avalon", said[0], said[1], block=block, part="draft"))
    await ch.deliver_mails(rows_of(bodies))
    text = ch.smtp.sent[0].get_body(("plain",)).get_content()
    assert text.count("Your team so far") == 1 and "(3 of 3): Chloe, Dmitri, Elena." in text
    assert text.count(email_words("en", "choices_heading")) == 1
    assert text.count(email_words("en", "label_pick", name="Chloe")) == 1
    assert email_words("en", "team_excalibur_needed") in text, "the newest draft's choices: the sword's holder"
    assert "🎯 Your move" in text, "what the event said stays"
    html = ch.smtp.sent[0].get_body(("html",)).get_content()
    assert html.count("mailto:") == len([line for line in text.splitlines() if line.startswith("- ")])


def footer_of(message) -> str:
    return message.get_body(("plain",)).get_content().replace("\r\n", "\n").rsplit("-- \n", 1)[1].strip()


# -- footers -------------------------------------------------------------------------------------

@pytest.mark.parametrize("locale", LOCALES)
async def test_the_footer_fits_where_the_game_is(locale):
    from avalon.services.email_gateway.pages import game_body
    ch = channel(locale)
    game = proposal()
    footers = {}
    for stage in ("lobby", "playing", "over"):
        game.table.over = stage == "over"
        game.table.turn.phase = Phase.LOBBY if stage == "lobby" else Phase.PROPOSAL
        await ch.deliver_mails(rows_of([game_body(game, 5, locale, "Avalon", "<p>x</p>", "x")]))
        footers[stage] = footer_of(ch.smtp.sent[-1])
    plain = {"kind": "plain", "game": None, "phase_id": None, "locale": locale, "rtl": False, "subject": "Re: hi",
             "html": "<p>x</p>", "text": "x", "name": None}
    await ch.deliver_mails(rows_of([plain]))
    footers["plain"] = footer_of(ch.smtp.sent[-1])
    assert footers == {"lobby": email_words(locale, "footer"), "playing": email_words(locale, "footer_playing"),
                       "over": email_words(locale, "footer_over"), "plain": email_words(locale, "footer_plain")}
    assert len(set(footers.values())) == 4


# -- refusals ------------------------------------------------------------------------------------

def rejected(reason) -> object:
    from avalon.shared.game import events as ev
    from avalon.shared.protocol import CommandRejected, audience_model
    from tests.unit.narration_samples import envelope
    return envelope(CommandRejected(command_type="cast_vote", reason=reason, params={}, message="..."),
                    audience_model(ev.Audience.to(LEADER)), 3)


@pytest.mark.parametrize("locale", LOCALES)
def test_refusals_of_the_engine_and_of_the_gateway_read_alike_by_mail_and_speak_of_replies(locale):
    from avalon.services.email_gateway.words import problem_text
    from avalon.services.email_gateway.wording import Problem
    from avalon.shared.delivery.roster import Reader
    from avalon.shared.narration.render import Narrator, Recipient, keyed_text
    ch = channel(locale)
    game = proposal()
    stale = ch.fragment(game, rejected("stale_phase"), Reader(LEADER, (locale,))).body
    assert stale["text"] == "⚠️ " + email_words(locale, "stale_phase"), "worded for mail"
    button = str(keyed_text(locale, "reasons", "stale_phase", p={}))
    assert button not in stale["text"], "not the Telegram wording of a button"
    assert email_words(locale, "choices_still_open") in stale["block_text"], "what can still be done"
    by_telegram = Narrator().render(rejected("already_acted"), Recipient(LEADER, (locale,)), "telegram")
    by_mail = ch.fragment(game, rejected("already_acted"), Reader(LEADER, (locale,))).body
    assert by_mail["text"] == by_telegram.text and by_mail["text"].startswith("⚠️ ")
    unknown = problem_text(ch.roster, locale, Problem("unknown_name", locale, "Zed"))
    assert unknown.startswith("⚠️ ") and "Zed" in unknown


# -- dates ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("locale", LOCALES)
def test_a_deadline_by_mail_names_its_month_in_the_readers_language_not_a_numeric_date(locale):
    """"12/3/26" is March 12 to most of the world: a deadline names its month, in the reader's words."""
    from babel.dates import format_date, get_month_names
    from avalon.shared.delivery.roster import Reader
    from avalon.shared.game import Options
    from tests.unit.narration_samples import game_envelopes
    opened = next(e for e in game_envelopes(5, Options(), 0.0, 1) if e.event.type == "phase_opened" and e.deadline_at)
    text = channel(locale).fragment(proposal(), opened, Reader(LEADER, (locale,))).body["text"]
    at = opened.deadline_at
    month = get_month_names("abbreviated", locale=locale)[at.month]
    deadline = next(line for line in text.splitlines() if f"{at.year}" in line)
    assert month in deadline and str(at.day) in deadline and f"{at.minute:02d}" in deadline, deadline
    for style in ("en_US", "en_GB", locale):
        assert format_date(at, "short", locale=style) not in deadline, f"a numeric date as {style} writes it"


# -- the table's name ----------------------------------------------------------------------------

@pytest.mark.parametrize("locale", LOCALES)
def test_a_mail_player_invited_to_a_telegram_table_reads_its_name_not_its_id(locale):
    from avalon.shared.delivery.roster import Reader
    from avalon.shared.delivery.table import fold
    from avalon.shared.game import events as ev
    from avalon.shared.protocol import PlayerInvited, audience_model
    from tests.unit.narration_samples import envelope
    ch = channel(locale)
    guest = "mail:mira@x.org"
    game = Game(Table("tg-1001000000001_1"), ch.own_part("tg-1001000000001_1"))
    invited = envelope(PlayerInvited(by="tg:7", player=guest, table="Friday Knights"),
                       audience_model(ev.Audience.to("tg:7", guest)), 0)
    invited = invited.model_copy(update={"game_id": "tg-1001000000001_1"})
    fold(game.table, invited)
    body = ch.fragment(game, invited, Reader(guest, (locale,))).body
    assert "Friday Knights" in body["subject"] and "tg-" not in body["subject"]
    assert "Friday Knights" in body["text"], "the invitation names the table"
    later = ch.receipt(game, Pending(guest, "what_join"))
    assert "Friday Knights" in later.body["subject"], "and so do the game's later mails"
