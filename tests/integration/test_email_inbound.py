"""The email gateway's reading of what arrives, on a real database with a recording bus: no
auto-reply or bounce of a real mail program (../shared/email_fixtures) is ever acted on or
answered, a bounce marks a player's address as failing and tells the host, a stranger is answered
at most once a day, and malformed mail is refused cleanly."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from avalon.services.email_gateway.compose import Identity
from avalon.services.email_gateway.gateway import EmailGateway
from avalon.services.email_gateway.notes import MailNotes
from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.table import Seats, Table, Turn
from avalon.services.email_gateway.tokens import Tokens
from avalon.shared.db import make_engine, migrate
from avalon.shared.protocol import Person

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "email_fixtures"
NO_FIXTURES = "../shared/email_fixtures is not beside the clone: real auto-replies and bounces are not checked"
NARRATOR = "narrator@example.org"


class RecordingBus:
    def __init__(self) -> None:
        self.commands = []

    async def send_command(self, envelope) -> None:
        self.commands.append(envelope)

    async def subscribe_events(self, *args) -> None:
        return None


class NoSmtp:
    def __init__(self) -> None:
        self.sent = []

    async def send(self, message) -> None:
        self.sent.append(message)

    async def close(self) -> None:
        return None


@pytest.fixture
async def gateway(tmp_path):
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")
    await migrate(engine)
    smtp = NoSmtp()
    gw = EmailGateway(RecordingBus(), engine, identity=Identity(NARRATOR), tokens=Tokens("x" * 32), smtp=smtp,
                      linger=0.0, first_delay=0.01)
    await gw.start()
    try:
        yield gw
    finally:
        await gw.close()
        await engine.dispose()


def fixtures(kind: str) -> list:
    if not (FIXTURES / "SOURCES.tsv").exists():
        return [pytest.param("-", marks=pytest.mark.skip(reason=NO_FIXTURES))]
    with open(FIXTURES / "SOURCES.tsv", encoding="utf-8", newline="") as handle:
        return [row["file"] for row in csv.DictReader(handle, delimiter="\t") if row["kind"] == kind]


@pytest.mark.parametrize("name", fixtures("autoreply") + fixtures("bounce"))
async def test_no_auto_reply_or_bounce_of_a_real_mail_program_is_acted_on_or_answered(gateway, name):
    raw = (FIXTURES / "raw" / name).read_bytes()
    await gateway.on_mail(1, raw)
    await gateway.outbox.idle(5)
    assert gateway.bus.commands == [], "nothing acted on"
    assert gateway.smtp.sent == [], "nothing answered"


def bounce(failed: str, quoting: str = "", n: int = 1) -> bytes:
    """A delivery report for ``failed``, returning the headers ``quoting`` of the mail it bounces."""
    copy = (f"--x\r\nContent-Type: text/rfc822-headers\r\n\r\n{quoting}\r\n" if quoting else "")
    return (f"Return-Path: <>\r\nFrom: MAILER-DAEMON@mx.example.org\r\nTo: narrator@example.org\r\n"
            f"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: <b{n}@mx.example.org>\r\n"
            "Content-Type: multipart/report; report-type=delivery-status; boundary=\"x\"\r\n\r\n"
            "--x\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n"
            "--x\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx\r\n\r\n"
            f"Final-Recipient: rfc822; {failed}\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n{copy}--x--\r\n"
            ).encode()


def our_headers(gateway, game_id: str, address: str) -> str:
    """The headers of a mail of ours to ``address`` as a bounce quotes them (its References carry the token)."""
    token = gateway.tokens.make(game_id, address)
    return (f"From: Avalon <narrator@example.org>\r\nTo: {address}\r\nMessage-ID: <avalon.{game_id}.3.ab12@example.org>"
            f"\r\nReferences: <avalon-thread.{game_id}.ff@example.org> <tok.{token}@example.org>")


async def test_a_bounce_marks_the_players_address_failing_and_tells_the_host_by_mail(gateway):
    host, bob = "mail:host@example.org", "mail:bob@example.org"
    gateway.games["mail-g1"] = Game(Table("mail-g1", seats=Seats(host=host, players=[host, bob])), MailNotes("mail-g1"))
    gateway.roster.people[bob] = Person(display_name="Bob", language="en")
    returned = bounce("bob@example.org", our_headers(gateway, "mail-g1", "bob@example.org"))
    await gateway.on_mail(1, returned)
    await gateway.on_mail(2, returned)  # the same bounce again: told once
    await gateway.outbox.idle(5)
    assert gateway.bus.commands == []
    assert [str(m["To"]) for m in gateway.smtp.sent] == ["host@example.org"]
    text = gateway.smtp.sent[0].get_body(("plain",)).get_content()
    assert "Bob" in text and "bob@example.org" in text
    assert (await gateway.store.contact("bob@example.org")).failing


@pytest.mark.parametrize("quoting", ["", "another player's mail", "a stranger's copy"])
async def test_a_forged_bounce_that_quotes_no_mail_of_ours_to_the_address_is_not_believed(gateway, quoting):
    host, bob = "mail:host@example.org", "mail:bob@example.org"
    gateway.games["mail-g1"] = Game(Table("mail-g1", seats=Seats(host=host, players=[host, bob])), MailNotes("mail-g1"))
    gateway.roster.people[bob] = Person(display_name="Bob", language="en")
    copy = {"": "", "another player's mail": our_headers(gateway, "mail-g1", "host@example.org"),
            "a stranger's copy": "References: <tok.mail-g1-0000000000000000@example.org>"}[quoting]
    await gateway.on_mail(1, bounce("bob@example.org", copy))
    await gateway.outbox.idle(5)
    assert gateway.bus.commands == [] and gateway.smtp.sent == [], "nothing done, the host not told"
    contact = await gateway.store.contact("bob@example.org")
    assert contact is None or not contact.failing


async def test_a_stranger_is_answered_once_a_day_and_never_acted_for(gateway):
    def mail(n: int) -> bytes:
        return (f"From: Zed <zed@example.com>\r\nTo: {NARRATOR}\r\nSubject: hello\r\n"
                f"Message-ID: <z{n}@example.com>\r\n\r\napprove\r\n").encode()
    for n in range(3):
        await gateway.on_mail(n, mail(n))
    await gateway.outbox.idle(5)
    assert gateway.bus.commands == []
    assert [str(m["To"]) for m in gateway.smtp.sent] == ["zed@example.com"]
    assert "new game" in gateway.smtp.sent[0].get_body(("plain",)).get_content().lower()


@pytest.mark.parametrize("raw", [
    b"",
    b"\x00\xff\xfe garbage \x80\x81",
    b"From: ann@example.org\r\nTo: narrator@example.org\r\nContent-Type: image/png\r\n\r\n\x89PNG",
    b"From: ann@example.org\r\nTo: narrator@example.org\r\nContent-Type: text/plain; charset=no-such\r\n\r\n\xe9t\xe9",
    ("From: ann@example.org\r\nTo: " + ", ".join(f"u{i}@example.org" for i in range(1000))
     + "\r\nSubject: x\r\n\r\n" + "blah " * 300_000).encode(),
], ids=["empty", "bytes", "attachment-only", "broken-charset", "huge-and-1000-recipients"])
async def test_malformed_mail_is_refused_cleanly_and_changes_nothing(gateway, raw):
    await gateway.on_mail(1, raw)
    await gateway.outbox.idle(5)
    assert gateway.bus.commands == [], "nothing acted on"
    assert len(gateway.smtp.sent) <= 1, "at most the one answer a stranger gets"


async def test_a_valid_token_from_its_player_acts_and_another_players_token_does_not(gateway):
    tokens = gateway.tokens
    ann, bob = "mail:ann@example.org", "mail:bob@example.org"
    game = gateway.games["mail-g2"] = Game(Table("mail-g2", seats=Seats(host=ann, players=[ann, bob]),
                                                 turn=Turn(phase="vote", phase_id=7)), MailNotes("mail-g2"))
    del game  # the gateway's memory of the game, as events would have left it
    reply_to = f"narrator+{tokens.make('mail-g2', 'ann@example.org')}@example.org"

    def vote(sender: str, n: int) -> bytes:
        return (f"From: {sender}\r\nTo: {reply_to}\r\nSubject: Re: vote\r\nMessage-ID: <v{n}@example.org>\r\n\r\n"
                "approve\r\n").encode()
    await gateway.on_mail(1, vote("bob@example.org", 1))
    assert gateway.bus.commands == []
    await gateway.on_mail(2, vote("ann@example.org", 2))
    sent = [c for c in gateway.bus.commands if c.command.type == "cast_vote"]
    assert len(sent) == 1 and sent[0].actor == ann and sent[0].phase_id == 7 and sent[0].command.approve


# -- a player whose mail bounced writes again ----------------------------------------------------

HOST, BOB = "mail:host@example.org", "mail:bob@example.org"


def table_with(gateway, game_id: str, phase: str, phase_id: int, *, bob_offer: bool = False, over: bool = False):
    """A game the gateway knows, Bob seated (offered a quest card in it when ``bob_offer``)."""
    from avalon.shared.protocol import ChoicesOffered

    offers = {BOB: ChoicesOffered(player=BOB, phase=phase, phase_id=phase_id, choices=(
        {"kind": "play_card", "cards": ("success", "fail")},))} if bob_offer else {}
    gateway.games[game_id] = Game(Table(game_id, seats=Seats(host=HOST, players=[HOST, BOB]), over=over,
                                        turn=Turn(phase=phase, phase_id=phase_id, offers=offers)), MailNotes(game_id))
    gateway.roster.people[BOB] = Person(display_name="Bob", language="en")


def from_bob(gateway, n: int, text: str, game_id: str | None = None, sender: str = "bob@example.org",
             extra: str = "") -> bytes:
    to = f"narrator+{gateway.tokens.make(game_id, 'bob@example.org')}@example.org" if game_id else NARRATOR
    return (f"From: {sender}\r\nTo: {to}\r\nSubject: Re: Avalon\r\nMessage-ID: <back{n}@example.org>\r\n{extra}\r\n"
            f"{text}\r\n").encode()


async def bob_bounced(gateway) -> None:
    await gateway.on_mail(100, bounce("bob@example.org", our_headers(gateway, "mail-q", "bob@example.org"), n=100))
    await gateway.outbox.idle(5)
    assert (await gateway.store.contact("bob@example.org")).failing
    gateway.smtp.sent.clear()


def asked(gateway, kind: str) -> list[tuple[str, str]]:
    return [(c.game_id, c.actor) for c in gateway.bus.commands if c.command.type == kind]


def game_commands(gateway) -> list[tuple[str, str]]:
    return [(c.game_id, c.command.type) for c in gateway.bus.commands if not c.game_id.startswith("profile:")]


def host_mails(gateway) -> list[str]:
    return [m.get_body(("plain",)).get_content() for m in gateway.smtp.sent if str(m["To"]) == "host@example.org"]


async def test_a_player_whose_mail_bounced_writes_again_and_the_engine_sends_what_is_open_in_each_game(gateway):
    table_with(gateway, "mail-q", "quest", 9, bob_offer=True)
    table_with(gateway, "mail-v", "vote", 4)
    table_with(gateway, "mail-l", "lobby", 1)  # no choices in a lobby
    table_with(gateway, "mail-o", "quest", 3, over=True)  # nothing for a game that is over
    await bob_bounced(gateway)

    # back: a vote in one game, by its link; the vote answers that game's choice, so only the
    # other game under way is asked for Bob's choices again
    await gateway.on_mail(1, from_bob(gateway, 1, "approve #4", "mail-v"))
    await gateway.outbox.idle(5)
    assert game_commands(gateway) == [("mail-v", "cast_vote"), ("mail-q", "show_choices")]
    assert asked(gateway, "show_choices") == [("mail-q", BOB)]
    assert not (await gateway.store.contact("bob@example.org")).failing
    told = host_mails(gateway)
    assert len(told) == 3 and all("Bob (bob@example.org) works again" in t for t in told), told  # not mail-o

    # writing again once it works: nothing sent again, the host told nothing
    gateway.smtp.sent.clear()
    await gateway.on_mail(3, from_bob(gateway, 3, "status", "mail-q"))
    await gateway.outbox.idle(5)
    assert asked(gateway, "show_choices") == [("mail-q", BOB)] and host_mails(gateway) == []


async def test_a_players_words_with_no_command_get_what_is_open_instead_of_a_refusal_once_back(gateway):
    table_with(gateway, "mail-q", "quest", 9, bob_offer=True)
    await bob_bounced(gateway)
    await gateway.on_mail(1, from_bob(gateway, 1, "Hello, my mailbox is fixed, sorry!"))  # no link, one game
    await gateway.outbox.idle(5)
    assert game_commands(gateway) == [("mail-q", "show_choices")]
    assert [str(m["To"]) for m in gateway.smtp.sent] == ["host@example.org"], "no refusal to Bob"
    # the role card by its word, in each language; once back, words with no command are refused again
    for n, word in enumerate(("role", "نقش", "роль", "nhân vật", "rol", "mon rôle"), start=2):
        await gateway.on_mail(n, from_bob(gateway, n, word, "mail-q"))
    assert asked(gateway, "show_role") == [("mail-q", BOB)] * 6
    await gateway.on_mail(9, from_bob(gateway, 9, "Hello again"))
    await gateway.outbox.idle(5)
    assert "could not find a command" in gateway.smtp.sent[-1].get_body(("plain",)).get_content()
    assert len(asked(gateway, "show_choices")) == 1


async def test_a_forged_bounce_a_stranger_or_a_forged_sender_brings_nothing_back(gateway):
    table_with(gateway, "mail-q", "quest", 9, bob_offer=True)
    # a forged bounce (it quotes no mail of ours to Bob): Bob's address is not failing, so his
    # next mail is only what it asks
    await gateway.on_mail(1, bounce("bob@example.org", n=1))
    await gateway.on_mail(2, from_bob(gateway, 2, "status", "mail-q"))
    await gateway.outbox.idle(5)
    assert game_commands(gateway) == [("mail-q", "show_board")]
    assert gateway.smtp.sent == [], "nothing told to the host, nothing to Bob"

    await bob_bounced(gateway)
    gateway.bus.commands.clear()
    # while it fails: a stranger, a forged From with Bob's address (the server says DMARC failed),
    # the host writing: none of them is Bob writing again
    await gateway.on_mail(3, (f"From: zed@example.com\r\nTo: {NARRATOR}\r\nSubject: hi\r\n"
                              "Message-ID: <z3@example.com>\r\n\r\nrole\r\n").encode())
    await gateway.on_mail(4, from_bob(gateway, 4, "role", "mail-q", extra=(
        "Authentication-Results: mx.example.org; dmarc=fail (p=reject) header.from=example.org\r\n")))
    await gateway.on_mail(5, (f"From: host@example.org\r\nTo: {NARRATOR}\r\nSubject: hi\r\n"
                              "Message-ID: <h5@example.org>\r\n\r\nstatus\r\n").encode())
    await gateway.outbox.idle(5)
    assert [(c.actor, c.command.type) for c in gateway.bus.commands if c.game_id == "mail-q"] == [
        (HOST, "show_board")]
    assert (await gateway.store.contact("bob@example.org")).failing, "still failing: Bob has not written"
    assert not [t for t in host_mails(gateway) if "works again" in t]
    assert "bob@example.org" not in [str(m["To"]) for m in gateway.smtp.sent], "nothing sent to Bob"
