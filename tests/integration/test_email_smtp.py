"""Sending mail through a real SMTP server (aiosmtpd, in this test's event loop, on an ephemeral
port of 127.0.0.1): plain, with a login, STARTTLS and TLS, refusals for good and for now, a server
that is down, and servers that close the connection between two mails."""

from __future__ import annotations

import asyncio
import email
import email.policy
import socket
import ssl
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import aiosmtplib
import pytest
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

from avalon.services.email_gateway.compose import Identity, build_mail
from avalon.services.email_gateway.smtp import PermanentFailure, SmtpSender
from avalon.services.email_gateway.tokens import Tokens

NARRATOR = Identity("narrator@example.org", "Avalon")
PLAYER = "maryam@example.net"


class Server:
    """What the SMTP server received, and how it answers (``answers``: RCPT address -> reply)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, list[str], bytes, bool]] = []  # from, to, bytes, over TLS
        self.sessions: list[object] = []  # one per connection that said EHLO
        self.answers: dict[str, str] = {}
        self.data_answer: str | None = None
        self.drop_second_mail = False  # close a connection that starts a second mail
        self.quits = 0
        self._mails_per_session: dict[int, int] = {}

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        self.sessions.append(session)
        session.host_name = hostname
        return responses

    async def handle_MAIL(self, server, session, envelope, address, options):
        seen = self._mails_per_session.setdefault(id(session), 0)
        self._mails_per_session[id(session)] = seen + 1
        if self.drop_second_mail and seen:
            server.transport.abort()  # as if it had closed the idle connection a moment before
            return "421 gone"
        envelope.mail_from = address
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, options):
        if address in self.answers:
            return self.answers[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.data_answer:
            return self.data_answer
        tls = server.transport.get_extra_info("ssl_object") is not None
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content, tls))
        return "250 Accepted"

    async def handle_QUIT(self, server, session, envelope):
        self.quits += 1
        return "221 Bye"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for localhost, made with openssl."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def server_tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


@asynccontextmanager
async def smtp_server(handler: Server, *, implicit_tls: ssl.SSLContext | None = None,
                      **options) -> AsyncIterator[int]:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(handler, hostname="localhost", **options),
                                      "127.0.0.1", 0, ssl=implicit_tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def game_mail(to: str = PLAYER, subject: str = "Авалон: голосование") -> email.message.EmailMessage:
    token = Tokens("a secret long enough for tests").make("tg-1001234567_42", to)
    return build_mail(NARRATOR, to=to, to_name="مریم", subject=subject, text="Лидер — Фёдор.\nЗа или Против?",
                      html='<html lang="ru"><body><p>Лидер</p></body></html>', token=token,
                      game_id="tg-1001234567_42", phase_id=4, locale="ru")


@pytest.fixture
async def plain() -> AsyncIterator[tuple[Server, SmtpSender]]:
    handler = Server()
    async with smtp_server(handler) as port:
        sender = SmtpSender("127.0.0.1", port, security="none", timeout=5)
        yield handler, sender
        await sender.close()


async def test_a_mail_arrives_with_every_header_of_build_mail(plain) -> None:
    handler, sender = plain
    message = game_mail()
    await sender.send(message)
    [(mail_from, rcpt_tos, raw, tls)] = handler.received
    assert (mail_from, rcpt_tos, tls) == ("narrator@example.org", [PLAYER], False)
    got = email.message_from_bytes(raw, policy=email.policy.default)
    for name in ("From", "To", "Subject", "Date", "Message-ID", "Auto-Submitted", "X-Avalon-Narrator",
                 "Content-Language", "Reply-To", "In-Reply-To", "References"):
        assert str(got[name]).strip() == str(message[name]).strip(), name
    plain_part, html_part = got.iter_parts()
    assert plain_part.get_content().replace("\r\n", "\n") == "Лидер — Фёдор.\nЗа или Против?\n"
    assert "<p>Лидер</p>" in html_part.get_content()


async def test_the_envelope_can_differ_from_the_headers(plain) -> None:
    handler, sender = plain
    await sender.send(game_mail(), sender="bounces@example.org", recipients=["other@example.net"])
    assert [(f, t) for f, t, _, _ in handler.received] == [("bounces@example.org", ["other@example.net"])]


async def test_several_mails_share_one_connection_and_concurrent_sends_all_arrive(plain) -> None:
    handler, sender = plain
    await sender.send(game_mail(subject="first"))
    await asyncio.gather(*(sender.send(game_mail(to=f"p{i}@example.net")) for i in range(8)))
    assert sorted(t[0] for _, t, _, _ in handler.received) == sorted(
        [PLAYER] + [f"p{i}@example.net" for i in range(8)])
    assert len(handler.sessions) == 1


async def test_closing_says_goodbye_and_a_later_send_opens_a_new_connection(plain) -> None:
    handler, sender = plain
    await sender.send(game_mail())
    await sender.close()
    assert handler.quits == 1
    await sender.send(game_mail())
    assert len(handler.received) == 2 and len(handler.sessions) == 2


async def test_a_recipient_refused_for_good_is_a_permanent_failure(plain) -> None:
    handler, sender = plain
    handler.answers["nobody@example.net"] = "550 5.1.1 No such user here"
    with pytest.raises(PermanentFailure) as failure:
        await sender.send(game_mail(to="nobody@example.net"))
    assert failure.value.code == 550
    assert "No such user here" in str(failure.value)
    await sender.send(game_mail())  # the connection goes on serving the others
    assert [t for _, t, _, _ in handler.received] == [[PLAYER]]
    assert len(handler.sessions) == 1


async def test_a_recipient_refused_for_now_is_not_permanent(plain) -> None:
    handler, sender = plain
    handler.answers[PLAYER] = "451 4.3.0 Try again later"
    with pytest.raises(Exception) as failure:
        await sender.send(game_mail())
    assert not isinstance(failure.value, PermanentFailure)
    assert isinstance(failure.value, aiosmtplib.SMTPRecipientsRefused)
    assert failure.value.recipients[0].code == 451
    assert handler.received == []


async def test_a_message_refused_at_data_is_a_permanent_failure(plain) -> None:
    handler, sender = plain
    handler.data_answer = "554 5.6.0 Message rejected as spam"
    with pytest.raises(PermanentFailure) as failure:
        await sender.send(game_mail())
    assert failure.value.code == 554 and "spam" in str(failure.value)


async def test_a_server_that_is_down_is_a_connection_error_to_retry() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sender = SmtpSender("127.0.0.1", port, security="none", timeout=5)
    with pytest.raises(OSError) as failure:
        await sender.send(game_mail())
    assert not isinstance(failure.value, PermanentFailure)


async def test_a_server_that_closed_the_idle_connection_still_takes_the_next_mail() -> None:
    handler = Server()
    async with smtp_server(handler, timeout=0.3) as port:  # aiosmtpd says 421 and hangs up when idle
        sender = SmtpSender("127.0.0.1", port, security="none", timeout=5)
        await sender.send(game_mail(subject="before"))
        await asyncio.sleep(0.8)
        await sender.send(game_mail(subject="after"))
        await sender.close()
    assert len(handler.received) == 2 and len(handler.sessions) == 2


async def test_a_connection_found_closed_while_sending_is_replaced_once() -> None:
    handler = Server()
    handler.drop_second_mail = True
    async with smtp_server(handler) as port:
        sender = SmtpSender("127.0.0.1", port, security="none", timeout=5)
        await sender.send(game_mail(subject="one"))
        await sender.send(game_mail(subject="two"))  # the kept connection dies under it: a new one
        await sender.send(game_mail(subject="three"))
        await sender.close()
    subjects = [email.message_from_bytes(raw, policy=email.policy.default)["Subject"]
                for _, _, raw, _ in handler.received]
    assert subjects == ["one", "two", "three"]
    assert len(handler.sessions) == 3


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
async def test_a_login_is_made_when_a_user_is_set() -> None:
    def authenticator(server, session, envelope, mechanism, data):
        good = isinstance(data, LoginPassword) and (data.login, data.password) == (b"narrator", b"s3cret")
        return AuthResult(success=good, handled=False)

    handler = Server()
    async with smtp_server(handler, authenticator=authenticator, auth_required=True,
                           auth_require_tls=False) as port:
        sender = SmtpSender("127.0.0.1", port, security="none", user="narrator", password="s3cret", timeout=5)
        await sender.send(game_mail())
        await sender.close()
        assert len(handler.received) == 1

        wrong = SmtpSender("127.0.0.1", port, security="none", user="narrator", password="guess", timeout=5)
        with pytest.raises(aiosmtplib.SMTPAuthenticationError) as failure:
            await wrong.send(game_mail())
        assert not isinstance(failure.value, PermanentFailure)
        await wrong.close()

        anonymous = SmtpSender("127.0.0.1", port, security="none", timeout=5)
        with pytest.raises(aiosmtplib.SMTPResponseException) as failure:  # 530: the host's setup, not the mail
            await anonymous.send(game_mail())
        assert failure.value.code == 530 and not isinstance(failure.value, PermanentFailure)
        await anonymous.close()
    assert len(handler.received) == 1


async def test_starttls_upgrades_the_connection_before_the_mail(certificate) -> None:
    handler = Server()
    async with smtp_server(handler, tls_context=server_tls(certificate), require_starttls=True) as port:
        sender = SmtpSender("127.0.0.1", port, security="starttls", validate_certs=False, timeout=5)
        await sender.send(game_mail())
        await sender.send(game_mail())
        await sender.close()
    assert [tls for _, _, _, tls in handler.received] == [True, True]
    assert len(handler.sessions) == 2  # EHLO again after STARTTLS, on the one connection


async def test_tls_from_the_first_byte(certificate) -> None:
    handler = Server()
    async with smtp_server(handler, implicit_tls=server_tls(certificate)) as port:
        sender = SmtpSender("127.0.0.1", port, security="tls", validate_certs=False, timeout=5)
        await sender.send(game_mail())
        await sender.close()
    assert [tls for _, _, _, tls in handler.received] == [True]


async def test_a_self_signed_certificate_is_refused_when_certificates_are_checked(certificate) -> None:
    handler = Server()
    async with smtp_server(handler, implicit_tls=server_tls(certificate)) as port:
        sender = SmtpSender("127.0.0.1", port, security="tls", timeout=5)
        with pytest.raises(Exception) as failure:
            await sender.send(game_mail())
        assert not isinstance(failure.value, PermanentFailure)
        await sender.close()
    assert handler.received == []
