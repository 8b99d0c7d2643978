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

    async def subscribe_events(self, *args, **kwargs) -> None:
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
