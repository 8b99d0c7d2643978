"""The email gateway's IMAP watcher against a real Dovecot: every mail handled once and in order,
new mail noticed at once through IDLE, a restart resuming where it stopped, failures retried,
processed mail moved away, a recreated folder read again, and a server outage survived."""

from __future__ import annotations

import asyncio
import imaplib
import time
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default

import pytest

from avalon.services.email_gateway.imap import MailboxWatcher, MemoryStateStore
from tests.mailservers import MailServers, MailUser, mail_servers  # noqa: F401 (fixture)


class Handled:
    """The gateway's handler as the watcher sees it: records each mail's subject, can be told to fail."""

    def __init__(self) -> None:
        self.subjects: list[str] = []
        self.uids: list[int] = []
        self.failing: set[str] = set()

    async def __call__(self, uid: int, raw: bytes) -> None:
        subject = str(message_from_bytes(raw, policy=default)["Subject"])
        if subject in self.failing:
            raise RuntimeError("the bus is down")
        self.subjects.append(subject)
        self.uids.append(uid)

    async def until(self, count: int, timeout: float = 5.0) -> float:
        """Seconds until count mails were handled."""
        start = time.monotonic()
        while len(self.subjects) < count:
            if time.monotonic() - start > timeout:
                raise AssertionError(f"handled only {self.subjects} after {timeout}s")
            await asyncio.sleep(0.02)
        return time.monotonic() - start


def watcher(servers: MailServers, address: str, store, handled, folder: str = "INBOX", **options):
    return MailboxWatcher("127.0.0.1", servers.imap_port, "none", address, "secret", folder, store, handled,
                          **options)


def flags_and_subjects(servers: MailServers, address: str, folder: str = "INBOX") -> list[tuple[str, str]]:
    """(flags, subject) of each mail in folder, read with imaplib (not the library under test)."""
    with imaplib.IMAP4("127.0.0.1", servers.imap_port) as imap:
        imap.login(address, "secret")
        status, count = imap.select(folder, readonly=True)
        assert status == "OK", f"no folder {folder}"
        if int(count[0]) == 0:
            return []
        _, data = imap.fetch("1:*", "(FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    rows = [item for item in data if isinstance(item, tuple)]
    return [(head.decode().split("FLAGS (")[1].split(")")[0], body.decode().split(":", 1)[1].strip())
            for head, body in rows]


async def test_mail_that_came_before_start_is_handled_once_in_order_and_marked(mail_servers):
    player = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = mail_servers.add_user("narrator")
    for subject in ("first", "second", "third"):
        await player.send(narrator, subject, "x")
    store, handled = MemoryStateStore(), Handled()
    w = watcher(mail_servers, narrator, store, handled)
    await w.start()
    await w.check_now()
    await w.check_now()
    await w.close()
    assert handled.subjects == ["first", "second", "third"] and handled.uids == [1, 2, 3]
    assert [flags for flags, _ in flags_and_subjects(mail_servers, narrator)] == [r"\Seen $AvalonDone"] * 3
    assert (await store.load(w.key)).last_uid == 3


async def test_mail_arriving_later_is_handled_within_two_seconds_through_idle(mail_servers):
    player = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = mail_servers.add_user("narrator")
    handled = Handled()
    w = watcher(mail_servers, narrator, MemoryStateStore(), handled, poll_interval=600)
    await w.start()
    await w.check_now()
    assert w.connected
    for n in (1, 2):
        await asyncio.sleep(0.3)  # settled in IDLE
        await player.send(narrator, f"vote {n}", "approve")
        assert await handled.until(n) < 2.0
    await w.close()
    assert handled.subjects == ["vote 1", "vote 2"] and not w.connected


def strip_flags(servers: MailServers, address: str) -> None:
    with imaplib.IMAP4("127.0.0.1", servers.imap_port) as imap:
        imap.login(address, "secret")
        imap.select("INBOX")
        imap.store("1:*", "-FLAGS", r"(\Seen $AvalonDone)")


async def test_mail_arriving_while_a_mail_is_handled_is_not_left_waiting(mail_servers):
    player = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = mail_servers.add_user("narrator")
    handled = Handled()

    async def handle(uid: int, raw: bytes) -> None:
        await handled(uid, raw)
        if uid == 1:  # the server announces this one in its answer to a command, not during IDLE
            await player.send(narrator, "meanwhile", "x")

    await player.send(narrator, "first", "x")
    w = watcher(mail_servers, narrator, MemoryStateStore(), handle, poll_interval=600)
    await w.start()
    await handled.until(2, timeout=3)
    await w.close()
    assert handled.subjects == ["first", "meanwhile"]


async def test_a_restarted_watcher_resumes_after_the_stored_uid(mail_servers):
    player = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = mail_servers.add_user("narrator")
    store = MemoryStateStore()
    for subject in ("one", "two"):
        await player.send(narrator, subject, "x")
    first = watcher(mail_servers, narrator, store, Handled())
    await first.start()
    await first.check_now()
    await first.close()
    strip_flags(mail_servers, narrator)  # only the stored UID tells what was handled
    await player.send(narrator, "three", "x")

    handled = Handled()
    second = watcher(mail_servers, narrator, store, handled)
    await second.start()
    await second.check_now()
    strip_flags(mail_servers, narrator)
    await second.check_now()  # "UID 4:*" still matches UID 3, the last mail: it must not come again
    await second.close()
    assert handled.subjects == ["three"]


async def test_mail_marked_done_is_not_handled_again_when_the_state_is_lost(mail_servers):
    player = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = mail_servers.add_user("narrator")
    await player.send(narrator, "old", "x")
    for handled in (first := Handled(), again := Handled()):
        w = watcher(mail_servers, narrator, MemoryStateStore(), handled)
        await w.start()
        await w.check_now()
        await w.close()
    assert (first.subjects, again.subjects) == (["old"], [])


async def test_a_failing_handler_leaves_the_mail_unmarked_and_gets_it_again(mail_servers):
    player = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = mail_servers.add_user("narrator")
    for subject in ("m1", "m2", "m3"):
        await player.send(narrator, subject, "x")
    store, handled, errors = MemoryStateStore(), Handled(), []
    handled.failing.add("m2")
    w = watcher(mail_servers, narrator, store, handled, on_error=errors.append)
    await w.start()
    await w.check_now()
    assert handled.subjects == ["m1"] and (await store.load(w.key)).last_uid == 1
    assert [flags for flags, _ in flags_and_subjects(mail_servers, narrator)] == [r"\Seen $AvalonDone", "", ""]
    assert any("handling mail 2 failed" in error for error in errors)

    handled.failing.clear()  # the bus is back: the retry comes by itself, without new mail
    await handled.until(3)
    await w.close()
    assert handled.subjects == ["m1", "m2", "m3"] and (await store.load(w.key)).last_uid == 3


async def test_processed_mail_moves_to_the_done_folder(mail_servers):
    player = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = mail_servers.add_user("narrator")
    done = "Обработано"  # a non-ASCII name travels in modified UTF-7
    for subject in ("a", "b"):
        await player.send(narrator, subject, "x")
    handled = Handled()
    w = watcher(mail_servers, narrator, MemoryStateStore(), handled, done_folder=done)
    await w.start()
    await w.check_now()
    await player.send(narrator, "c", "x")
    await handled.until(3)
    await w.check_now()
    await w.close()
    utf7 = '"&' + done.encode("utf-7").decode()[1:].replace("/", ",") + '"'  # RFC 3501 5.1.3
    assert flags_and_subjects(mail_servers, narrator) == []
    assert [subject for _, subject in flags_and_subjects(mail_servers, narrator, utf7)] == ["a", "b", "c"]


def append(servers: MailServers, address: str, folder: str, subject: str, *, recreate: bool = False) -> None:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "alice@example.test", address, subject
    message.set_content("x")
    with imaplib.IMAP4("127.0.0.1", servers.imap_port) as imap:
        imap.login(address, "secret")
        if recreate:
            assert imap.delete(folder)[0] == "OK"
        if recreate or imap.select(folder)[0] != "OK":
            assert imap.create(folder)[0] == "OK"
        assert imap.append(folder, "", None, message.as_bytes())[0] == "OK"


async def test_a_recreated_folder_with_a_new_uidvalidity_is_read_again(mail_servers):
    narrator = mail_servers.add_user("narrator")
    for subject in ("g1", "g2", "g3"):
        append(mail_servers, narrator, "Game", subject)
    store, handled = MemoryStateStore(), Handled()
    w = watcher(mail_servers, narrator, store, handled, folder="Game")
    await w.start()
    await w.check_now()
    before = await store.load(w.key)
    append(mail_servers, narrator, "Game", "new game", recreate=True)  # UID 1 again, below the stored 3
    await handled.until(4)
    await w.close()
    after = await store.load(w.key)
    assert handled.subjects == ["g1", "g2", "g3", "new game"] and handled.uids == [1, 2, 3, 1]
    assert after.uidvalidity != before.uidvalidity and after.last_uid == 1


async def test_the_watcher_survives_an_imap_outage_and_reads_what_came_meanwhile(mail_servers, caplog):
    narrator = mail_servers.add_user("narrator")
    handled, errors = Handled(), []
    w = watcher(mail_servers, narrator, MemoryStateStore(), handled, on_error=errors.append)
    await w.start()
    await w.check_now()
    await mail_servers.stop_imap()
    await until(lambda: not w.connected)
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "alice@example.test", narrator, "during the outage"
    message.set_content("x")
    mail_servers.deliver_directly(narrator, message.as_bytes())
    await asyncio.sleep(2.5)  # attempts at 0.5 s and 1.5 s fail; the next waits until 3.5 s
    assert [error.rsplit("retrying in ", 1)[1] for error in errors] == ["0.5 s", "1 s", "2 s"]
    assert all("connection refused" in error for error in errors[1:])
    assert [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()] == errors

    await mail_servers.start_imap()
    await handled.until(1, timeout=10)
    assert w.connected and handled.subjects == ["during the outage"]
    await w.close()


async def until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_closing_the_watcher_logs_out_of_the_server(mail_servers):
    narrator = mail_servers.add_user("narrator")
    w = watcher(mail_servers, narrator, MemoryStateStore(), Handled())
    await w.start()
    await w.check_now()
    await w.close()
    await until(lambda: f"imap({narrator})" in mail_servers.log_tail(3) and "Logged out" in mail_servers.log_tail(3))
    assert not w.connected


TLS = pytest.mark.parametrize("mail_servers", [{"tls": True}], indirect=True)


@TLS
@pytest.mark.parametrize("security", ["tls", "starttls"])
async def test_the_watcher_reads_over_tls_and_checks_the_certificate(mail_servers, security, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(mail_servers.cert))  # trust the test server's certificate
    player = MailUser(mail_servers, mail_servers.add_user("alice"))
    narrator = mail_servers.add_user("narrator")
    await player.send(narrator, "over tls", "x")
    port = mail_servers.imaps_port if security == "tls" else mail_servers.imap_port
    handled = Handled()
    w = MailboxWatcher("127.0.0.1", port, security, narrator, "secret", "INBOX", MemoryStateStore(), handled)
    await w.start()
    await handled.until(1)
    await w.close()
    assert handled.subjects == ["over tls"]

    def logins() -> list[str]:  # Dovecot's log process writes the line a moment after the login (CI once read none)
        return [line for line in mail_servers.log_tail(200).splitlines() if f"Login: user=<{narrator}>" in line]

    await until(logins)
    assert all(", TLS, " in line for line in logins())


@TLS
async def test_an_untrusted_certificate_is_refused_unless_validation_is_off(mail_servers):
    narrator = mail_servers.add_user("narrator")
    errors: list[str] = []
    strict = MailboxWatcher("127.0.0.1", mail_servers.imaps_port, "tls", narrator, "secret", "INBOX",
                            MemoryStateStore(), Handled(), on_error=errors.append)
    await strict.start()
    await until(lambda: errors)
    await strict.close()
    assert "CERTIFICATE_VERIFY_FAILED" in errors[0] and f"Login: user=<{narrator}>" not in mail_servers.log_tail(50)

    lax = MailboxWatcher("127.0.0.1", mail_servers.imaps_port, "tls", narrator, "secret", "INBOX",
                         MemoryStateStore(), Handled(), validate_certs=False)
    await lax.start()
    await lax.check_now()
    assert lax.connected
    await lax.close()


async def test_asking_for_starttls_never_logs_in_over_plain_text(mail_servers):
    narrator = mail_servers.add_user("narrator")
    errors: list[str] = []
    w = MailboxWatcher("127.0.0.1", mail_servers.imap_port, "starttls", narrator, "secret", "INBOX",
                       MemoryStateStore(), Handled(), on_error=errors.append)
    await w.start()
    await until(lambda: errors)
    await w.close()
    assert "offers no STARTTLS" in errors[0] and not w.connected
    assert f"Login: user=<{narrator}>" not in mail_servers.log_tail(50)


def arrive_together(servers: MailServers, address: str, mails: list[tuple[str, str]]) -> None:
    """(sender, subject) mails put in INBOX in this order, in one session: they are there at once."""
    with imaplib.IMAP4("127.0.0.1", servers.imap_port) as imap:
        imap.login(address, "secret")
        for sender, subject in mails:
            message = EmailMessage()
            message["From"], message["To"], message["Subject"] = f"Player <{sender}>", address, subject
            message.set_content("x")
            assert imap.append("INBOX", "", None, message.as_bytes())[0] == "OK"


class Lanes(Handled):
    """Records, besides each mail, how many were being handled at once, in all and per sender."""

    def __init__(self) -> None:
        super().__init__()
        self.busy: dict[str, int] = {}
        self.most = 0
        self.overlaps: list[str] = []  # a sender's mail started while their previous one was being handled

    async def __call__(self, uid: int, raw: bytes) -> None:
        sender = str(message_from_bytes(raw, policy=default)["From"].addresses[0].addr_spec)
        if self.busy.get(sender):
            self.overlaps.append(str(message_from_bytes(raw, policy=default)["Subject"]))
        self.busy[sender] = self.busy.get(sender, 0) + 1
        self.most = max(self.most, sum(self.busy.values()))
        try:
            await asyncio.sleep(0.02)  # the gateway's database and bus: others may start meanwhile
            await super().__call__(uid, raw)
        finally:
            self.busy[sender] -= 1


async def test_several_senders_mails_are_handled_side_by_side_each_senders_in_order_and_once(mail_servers):
    narrator = mail_servers.add_user("narrator")
    senders = [f"p{n}@example.test" for n in range(6)]
    mails = [(sender, f"{sender} move {move}") for move in range(5) for sender in senders]
    arrive_together(mail_servers, narrator, mails)
    store, handled = MemoryStateStore(), Lanes()
    w = watcher(mail_servers, narrator, store, handled, window=8)
    await w.start()
    await handled.until(len(mails), timeout=20)
    await w.check_now()
    await w.close()
    assert sorted(handled.subjects) == sorted(subject for _, subject in mails)  # each once
    for sender in senders:
        assert [s for s in handled.subjects if s.startswith(sender)] == [f"{sender} move {m}" for m in range(5)]
    assert not handled.overlaps
    assert 1 < handled.most <= 8  # different senders at once, never more than the window
    assert [flags for flags, _ in flags_and_subjects(mail_servers, narrator)] == [r"\Seen $AvalonDone"] * len(mails)
    assert (await store.load(w.key)).last_uid == len(mails)


async def test_a_failing_mail_holds_back_only_its_senders_later_mails(mail_servers):
    narrator = mail_servers.add_user("narrator")
    arrive_together(mail_servers, narrator, [("ann@example.test", "a1"), ("bob@example.test", "b1"),
                                             ("ann@example.test", "a2"), ("bob@example.test", "b2")])
    store, handled, errors = MemoryStateStore(), Handled(), []
    handled.failing.add("a1")
    w = watcher(mail_servers, narrator, store, handled, on_error=errors.append)
    await w.start()
    await w.check_now()
    assert sorted(handled.subjects) == ["b1", "b2"]  # ann's second mail waits for her first
    assert [flags for flags, _ in flags_and_subjects(mail_servers, narrator)] == \
        ["", r"\Seen $AvalonDone", "", r"\Seen $AvalonDone"]
    assert (await store.load(w.key)).last_uid == 0  # a1 is not handled: a restart reads from it
    assert any("handling mail 1 failed" in error for error in errors)

    handled.failing.clear()
    await handled.until(4)
    await w.check_now()
    await w.close()
    assert handled.subjects[2:] == ["a1", "a2"] and (await store.load(w.key)).last_uid >= 3
    assert [flags for flags, _ in flags_and_subjects(mail_servers, narrator)] == [r"\Seen $AvalonDone"] * 4
    again = Handled()  # a restart reads none of them again
    w = watcher(mail_servers, narrator, store, again)
    await w.start()
    await w.check_now()
    await w.close()
    assert again.subjects == []


async def test_mails_failing_side_by_side_double_the_wait_once_not_once_each(mail_servers):
    narrator = mail_servers.add_user("narrator")
    arrive_together(mail_servers, narrator, [(f"p{n}@example.test", f"m{n}") for n in range(4)])
    handled, errors = Handled(), []
    handled.failing.update(f"m{n}" for n in range(4))  # the bus is down for every one of them
    w = watcher(mail_servers, narrator, MemoryStateStore(), handled, on_error=errors.append)
    await w.start()
    await w.check_now()
    assert [error.rsplit("retrying in ", 1)[1] for error in errors] == ["0.5 s"] * 4
    handled.failing.clear()
    await handled.until(4)
    await w.close()
    assert sorted(handled.subjects) == ["m0", "m1", "m2", "m3"]
