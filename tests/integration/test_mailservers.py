"""The test mail servers behave like a real provider: mail between users, plus-addresses, how a
forged sender shows, refusals on demand, and servers that stop and start without losing mail."""

from __future__ import annotations

from email.message import EmailMessage

import aiosmtplib
import pytest

import tests.mailservers.servers as servers_module
from tests.mailservers import MailUser, mail_servers, require_mail_servers  # noqa: F401 (fixture)


def body_of(message) -> str:
    return message.get_body(preferencelist=("plain", "html")).get_content().replace("\r\n", "\n")


async def test_two_users_exchange_a_mail_and_a_threaded_reply(mail_servers):
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    bob = MailUser(mail_servers, mail_servers.add_user("bob", "hunter2"), "hunter2")
    sent = await alice.send(bob.address, "Quest team", "I propose Bob and me.")

    received = await bob.wait_for(lambda m: m["Message-ID"] == sent, timeout=5)
    assert received["From"] == alice.address and received["Subject"] == "Quest team"
    assert body_of(received).strip() == "I propose Bob and me."
    assert received["Return-Path"] == f"<{alice.address}>" and received["Delivered-To"] == bob.address

    await bob.reply(received, "Approve.")
    answer = await alice.wait_for(lambda m: True, timeout=5)
    assert answer["Subject"] == "Re: Quest team"
    assert answer["In-Reply-To"] == sent and answer["References"] == sent
    text = body_of(answer)
    assert text.startswith("Approve.\n\nOn ") and f"<{alice.address}> wrote:" in text
    assert "> I propose Bob and me." in text
    assert [m["Subject"] for m in await alice.inbox()] == ["Re: Quest team"]


async def test_wait_for_hands_out_each_message_once_oldest_first(mail_servers):
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    bob = MailUser(mail_servers, mail_servers.add_user("bob"))
    for n in (1, 2):
        await alice.send(bob.address, f"note {n}", "x")
    firsts = [(await bob.wait_for(lambda m: True, timeout=5))["Subject"] for _ in range(2)]
    assert firsts == ["note 1", "note 2"]
    with pytest.raises(TimeoutError, match="note 1"):
        await bob.wait_for(lambda m: True, timeout=0.3)


async def test_a_plus_addressed_mail_lands_in_the_inbox_of_its_mailbox(mail_servers):
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = MailUser(mail_servers, mail_servers.add_user("narrator"))
    await alice.send(f"Narrator <narrator+G7K2@{mail_servers.domain}>", "vote", "approve")
    mail = await narrator.wait_for(lambda m: True, timeout=5)
    assert mail["Delivered-To"] == "narrator+G7K2@example.test"
    assert mail["To"] == "Narrator <narrator+G7K2@example.test>"


async def test_only_mail_sent_by_the_from_address_owner_passes_dmarc(mail_servers):
    mallory = MailUser(mail_servers, mail_servers.add_user("mallory"))
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = MailUser(mail_servers, mail_servers.add_user("narrator"))
    await alice.send(narrator.address, "genuine", "x")
    await mallory.send(narrator.address, "forged", "x", from_address=alice.address)
    await alice.send(narrator.address, "unauthenticated", "x", authenticate=False)
    verdicts = {m["Subject"]: m["Authentication-Results"] for m in await narrator.inbox()}
    assert verdicts == {
        "genuine": "mx.example.test; dmarc=pass header.from=example.test",
        "forged": "mx.example.test; dmarc=fail (p=reject) header.from=example.test",
        "unauthenticated": "mx.example.test; dmarc=fail (p=reject) header.from=example.test",
    }


async def test_the_null_sender_shows_as_an_empty_return_path(mail_servers):
    narrator = MailUser(mail_servers, mail_servers.add_user("narrator"))
    bounce = EmailMessage()
    bounce["From"], bounce["To"], bounce["Subject"] = "MAILER-DAEMON@example.test", narrator.address, "bounce"
    bounce.set_content("undeliverable")
    await aiosmtplib.send(bounce, hostname="127.0.0.1", port=mail_servers.smtp_port, sender="",
                          recipients=[narrator.address], start_tls=False)
    assert (await narrator.wait_for(lambda m: True, timeout=5))["Return-Path"] == "<>"


async def test_unknown_users_and_other_domains_are_refused_with_550(mail_servers):
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    for recipient in ("ghost@example.test", "bob@elsewhere.test"):
        with pytest.raises(aiosmtplib.SMTPRecipientsRefused) as refused:
            await alice.send(recipient, "hello?", "x")
        assert refused.value.recipients[0].code == 550


@pytest.mark.parametrize("code, words", [(451, "try later"), (550, "no such user")])
async def test_a_recipient_can_be_refused_on_demand_and_accepted_again(mail_servers, code, words):
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = MailUser(mail_servers, mail_servers.add_user("narrator"))
    mail_servers.refuse_recipient(narrator.address, code)
    with pytest.raises(aiosmtplib.SMTPRecipientsRefused) as refused:
        await alice.send(f"narrator+tok@{mail_servers.domain}", "move", "x")
    assert (refused.value.recipients[0].code, words in refused.value.recipients[0].message) == (code, True)
    mail_servers.refuse_recipient(narrator.address, None)
    await alice.send(narrator.address, "move again", "x")
    assert [m["Subject"] for m in await narrator.inbox()] == ["move again"]


async def test_mail_survives_the_servers_stopping_and_starting_on_the_same_ports(mail_servers):
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    bob = MailUser(mail_servers, mail_servers.add_user("bob"))
    await alice.send(bob.address, "before", "x")
    ports = (mail_servers.imap_port, mail_servers.smtp_port)

    await mail_servers.stop_imap()
    with pytest.raises(OSError):
        await bob.inbox()
    with pytest.raises(aiosmtplib.SMTPDataError) as deferred:  # SMTP up, the mailbox server down
        await alice.send(bob.address, "while down", "x")
    assert deferred.value.code == 451
    await mail_servers.start_imap()

    await mail_servers.stop_smtp()
    with pytest.raises(aiosmtplib.SMTPConnectError):
        await alice.send(bob.address, "no smtp", "x")
    await mail_servers.start_smtp()
    await alice.send(bob.address, "after", "x")

    assert [m["Subject"] for m in await bob.inbox()] == ["before", "after"]
    assert (mail_servers.imap_port, mail_servers.smtp_port) == ports


async def test_a_top_posted_html_reply_carries_the_thread_under_its_header_block(mail_servers):
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    bob = MailUser(mail_servers, mail_servers.add_user("bob"))
    await alice.send(bob.address, "Re: Re: vote", "Approve or reject?", html="<p>Approve or <b>reject</b>?</p>")
    original = await bob.wait_for(lambda m: True, timeout=5)

    await bob.reply(original, "Reject", quote="above")
    text = body_of(await alice.wait_for(lambda m: True, timeout=5))
    assert text.startswith("Reject\n\n-----Original Message-----\nFrom: alice@example.test\n")
    assert text.rstrip().endswith("\n\nApprove or reject?")

    await bob.reply(original, "Reject", quote="below", html_only=True)
    html_reply = await alice.wait_for(lambda m: True, timeout=5)
    assert html_reply["Subject"] == "Re: Re: vote" and html_reply.get_body(("plain",)) is None
    markup = html_reply.get_body(("html",)).get_content()
    assert markup.startswith('<div dir="auto">Reject</div>')
    assert '<blockquote class="gmail_quote"' in markup and "<p>Approve or <b>reject</b>?</p>" in markup


async def test_clicking_a_mailto_link_sends_its_fields_unchanged(mail_servers):
    alice = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = MailUser(mail_servers, mail_servers.add_user("narrator"))
    await alice.click("mailto:narrator+V3%2Bx@example.test?subject=Vote%3A%20approve"
                      "&body=approve%0D%0A1+1&In-Reply-To=%3Cq1%40example.test%3E")
    mail = await narrator.wait_for(lambda m: True, timeout=5)
    assert mail["Delivered-To"] == "narrator+V3+x@example.test"
    assert (mail["Subject"], mail["In-Reply-To"]) == ("Vote: approve", "<q1@example.test>")
    assert body_of(mail).splitlines() == ["approve", "1+1"]


def test_without_dovecot_the_fixture_skips_unless_mail_is_required(monkeypatch):
    monkeypatch.setattr(servers_module, "dovecot_available", lambda: "Dovecot is not installed")
    monkeypatch.delenv("AVALON_REQUIRE_MAIL", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Dovecot is not installed"):
        require_mail_servers()
    monkeypatch.setenv("AVALON_REQUIRE_MAIL", "1")
    with pytest.raises(pytest.fail.Exception, match="required here"):
        require_mail_servers()
