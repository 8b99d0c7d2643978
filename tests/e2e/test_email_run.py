"""`avalon run` playing by email as a host runs it, from the README alone: the real command as a
subprocess (engine and email gateway in one process, SQLite) against a real Dovecot (IMAP) and
SMTP server on loopback. A host opens a game by mail and invites a friend, who joins by replying
`join`; and a narrator killed (SIGKILL) while a reply waits in its mailbox acts on it exactly once
after the restart, at three moments: frozen before the reply landed, the moment it landed, and
right after it acted on it."""

from __future__ import annotations

import asyncio
import imaplib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from sqlalchemy import text

from avalon.services.engine.store import Store
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture
from tests.mailservers.dovecot import free_port

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"\bmail-[a-z0-9]{7}\b")
OURS = ("EMAIL_", "SMTP_", "IMAP_", "TELEGRAM_")  # the developer's own settings stay out of the test


def text_of(message) -> str:
    return message.get_body(("plain",)).get_content()


class Narrator:
    """`avalon run` with the email channel on, started again on the same database after a kill."""

    def __init__(self, tmp_path: Path, servers) -> None:
        self.tmp_path = tmp_path
        self.address = servers.add_user("narrator", "narrator-password")
        self.mailbox = MailUser(servers, self.address, "narrator-password")  # to see what has landed there
        self.url = f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}"
        self.port = free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(OURS)}
        self.env.update({
            "PYTHONPATH": str(ROOT), "DATABASE_URL": self.url, "OPS_LISTEN": f"127.0.0.1:{self.port}",
            "LOG_LEVEL": "INFO", "EMAIL_ADDRESS": self.address, "EMAIL_SECRET": "a-secret-of-thirty-two-characters",
            "EMAIL_LINGER": "0.2", "IMAP_POLL_INTERVAL": "1",
            "SMTP_HOST": "127.0.0.1", "SMTP_PORT": str(servers.smtp_port), "SMTP_SECURITY": "none",
            "SMTP_USER": self.address, "SMTP_PASSWORD": "narrator-password",
            "IMAP_HOST": "127.0.0.1", "IMAP_PORT": str(servers.imap_port), "IMAP_SECURITY": "none",
            "IMAP_USER": self.address, "IMAP_PASSWORD": "narrator-password"})
        self.runs = 0
        self.proc: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.tmp_path / f"run{self.runs}.log"

    def logs(self) -> str:
        return "\n".join(f"--- run {i} ---\n" + (self.tmp_path / f"run{i}.log").read_text()
                         for i in range(1, self.runs + 1))

    async def start(self) -> None:
        self.runs += 1
        with self.log.open("w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "avalon.services.cli", "run"], cwd=self.tmp_path,
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT)
        await until(lambda: "engine ready" in self.log.read_text() or self.proc.poll() is not None, 60,
                    "the narrator to start")
        assert self.proc.poll() is None, self.logs()

    def readyz(self) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as answer:
            return answer.code, json.loads(answer.read())
        except OSError:
            return 0, {}

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    async def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.to_thread(self.proc.wait, 30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def export(self, game_id: str) -> list[dict]:
        """The game's event log as `avalon export GAME_ID` prints it."""
        done = subprocess.run([sys.executable, "-m", "avalon.services.cli", "export", game_id], cwd=self.tmp_path,
                              env=self.env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    def joins(self, game_id: str) -> list[str]:
        return [e["event"]["player"] for e in self.export(game_id) if e["event"]["type"] == "player_joined"]

    async def lobby(self, game_id: str) -> list[str]:
        store = Store(self.url)
        try:
            loaded = await store.load(game_id)
            return list(loaded.state.players) if loaded else []
        finally:
            await store.close()

    async def refused_commands(self, game_id: str) -> list[str]:
        """The game's commands the engine did not accept (a join sent twice under two ids would be one)."""
        store = Store(self.url)
        try:
            async with store.engine.connect() as conn:
                rows = await conn.execute(text("SELECT message_id, outcome FROM processed_commands "
                                               "WHERE game_id = :game AND outcome != 'accepted'"), {"game": game_id})
                return [f"{message_id}: {outcome}" for message_id, outcome in rows]
        finally:
            await store.close()

    def flags(self, message_id: str) -> str | None:
        """The IMAP flags of the mail with this Message-ID in the narrator's INBOX (None: not there)."""
        with imaplib.IMAP4("127.0.0.1", self.mailbox.servers.imap_port, timeout=10) as imap:
            imap.login(self.address, "narrator-password")
            imap.select("INBOX", readonly=True)
            _, found = imap.uid("SEARCH", "HEADER", "Message-ID", message_id)
            if not found or not found[0]:
                return None
            _, data = imap.uid("FETCH", found[0].split()[0].decode(), "(FLAGS)")
        return data[0].decode()


async def until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        await asyncio.sleep(0.1)


async def open_a_game(narrator: Narrator, host: MailUser, invitees: list[MailUser]):
    """The README's step 2: subject `new game`, the invitees' addresses in the body. Returns the
    code the host is told and each invitee's invitation."""
    body = "Shall we play tonight?\n\n" + "\n".join(user.address for user in invitees) + "\n"
    await host.send(narrator.address, "new game", body)
    told = await host.wait_for(lambda m: CODE.search(text_of(m)) is not None, timeout=30)
    code = CODE.search(text_of(told)).group()
    invitations = [await user.wait_for(lambda m: code in str(m["Subject"]) + text_of(m), timeout=30)
                   for user in invitees]
    return code, invitations


async def test_a_host_opens_a_game_by_mail_and_the_invitee_joins_by_replying_join(mail_servers, tmp_path):
    narrator = Narrator(tmp_path, mail_servers)
    host = MailUser(mail_servers, mail_servers.add_user("host"))
    ann = MailUser(mail_servers, mail_servers.add_user("ann"))
    try:
        await narrator.start()

        async def ready():
            status, body = narrator.readyz()
            return status == 200 and body
        body = await until(ready, 30, "/readyz to answer 200")
        assert body["components"]["email"] == "ready", body

        code, [invitation] = await open_a_game(narrator, host, [ann])
        assert str(invitation["Reply-To"]).startswith("narrator+"), invitation["Reply-To"]
        assert "join" in text_of(invitation)
        await ann.reply(invitation, "join")
        news = await host.wait_for(lambda m: "ann" in text_of(m) and "joined" in text_of(m), timeout=30)
        assert code in str(news["Subject"]), news["Subject"]
        assert narrator.joins(code) == ["mail:host@example.test", "mail:ann@example.test"]
    finally:
        code_on_exit = await narrator.stop()
    assert code_on_exit == 0, narrator.logs()
    assert "Traceback" not in narrator.logs()
    assert "aioimaplib" not in narrator.logs(), "the IMAP library's chatter stays out of the host's log"


async def test_a_reply_waiting_in_the_mailbox_when_the_narrator_is_killed_is_acted_on_once(mail_servers, tmp_path):
    narrator = Narrator(tmp_path, mail_servers)
    host = MailUser(mail_servers, mail_servers.add_user("host"))
    players = [MailUser(mail_servers, mail_servers.add_user(name)) for name in ("ann", "bob", "cleo")]
    report = []

    async def landed(message_id: str) -> None:
        await until(lambda: narrator.flags(message_id) is not None, 30, f"{message_id} to land in the mailbox")

    async def kill_restart_and_check(player: MailUser, message_id: str, moment: str) -> None:
        narrator.kill()
        acted = f"from {player.address}: sent join" in narrator.log.read_text()
        marked = "$AvalonDone" in (narrator.flags(message_id) or "")
        await narrator.start()
        seat = f"mail:{player.address}"
        await until(lambda: "$AvalonDone" in (narrator.flags(message_id) or ""), 30,
                    f"the reply killed {moment} to be handled after the restart")

        async def seated():
            seats = await narrator.lobby(code)
            return seat in seats and seats
        lobby = await until(seated, 30, f"{player.address} to be seated after the kill {moment}")
        joins = narrator.joins(code)
        assert lobby.count(seat) == 1 and joins.count(seat) == 1, (moment, lobby, joins, narrator.logs())
        assert not await narrator.refused_commands(code), (moment, narrator.logs())
        report.append(f"killed {moment} (it had {'' if acted else 'not '}acted, the mail was "
                      f"{'' if marked else 'not '}marked done): {player.address} seated once")

    try:
        await narrator.start()
        code, invitations = await open_a_game(narrator, host, players)
        ann, bob, cleo = players

        # 1. the narrator is frozen while the reply lands, and killed before it could read it
        narrator.proc.send_signal(signal.SIGSTOP)
        sent = await ann.reply(invitations[0], "join")
        await landed(sent)
        await kill_restart_and_check(ann, sent, "before it read the reply")

        # 2. killed the moment the reply is in its mailbox (racing the watcher's IDLE)
        sent = await bob.reply(invitations[1], "join")
        await landed(sent)
        await kill_restart_and_check(bob, sent, "as the reply landed")

        # 3. killed right after it acted on the reply (the mail may not be marked done yet)
        sent = await cleo.reply(invitations[2], "join")
        await until(lambda: f"from {cleo.address}: sent join" in narrator.log.read_text(), 30, "cleo's join")
        await kill_restart_and_check(cleo, sent, "right after it acted on the reply")

        seats = ["mail:host@example.test"] + [f"mail:{p.address}" for p in players]
        assert sorted(await narrator.lobby(code)) == sorted(seats)
        assert sorted(narrator.joins(code)) == sorted(seats)
        for player in players:  # the host hears of every join, whatever moment the narrator died
            name = player.address.split("@")[0]
            await host.wait_for(lambda m: f"{name} joined" in text_of(m), timeout=30)
        for player in players:  # and nobody is told their join came twice
            told = [text_of(m) for m in await player.inbox()]
            assert not [t for t in told if "already joined" in t], (player.address, told)
        print("\n".join(report))
    finally:
        code_on_exit = await narrator.stop()
    assert code_on_exit == 0, narrator.logs()
    assert "Traceback" not in narrator.logs()


async def test_replies_read_together_when_the_narrator_is_killed_mid_batch_are_each_acted_on_once(
        mail_servers, tmp_path):
    """Six replies land while the narrator is frozen; it wakes, reads them side by side, and is
    killed as soon as it has acted on the first: after the restart each join counts once."""
    narrator = Narrator(tmp_path, mail_servers)
    host = MailUser(mail_servers, mail_servers.add_user("host"))
    players = [MailUser(mail_servers, mail_servers.add_user(f"p{n}")) for n in range(6)]
    try:
        await narrator.start()
        code, invitations = await open_a_game(narrator, host, players)
        narrator.proc.send_signal(signal.SIGSTOP)
        sent = [await player.reply(invitation, "join") for player, invitation in zip(players, invitations)]
        for message_id in sent:
            await until(lambda: narrator.flags(message_id) is not None, 30, f"{message_id} to land")
        narrator.proc.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 30
        while ": sent join" not in narrator.log.read_text():
            assert time.monotonic() < deadline, narrator.logs()
            await asyncio.sleep(0.005)
        narrator.kill()
        acted = narrator.log.read_text().count(": sent join")
        marked = sum("$AvalonDone" in (narrator.flags(m) or "") for m in sent)

        await narrator.start()
        for message_id in sent:
            await until(lambda: "$AvalonDone" in (narrator.flags(message_id) or ""), 30,
                        f"{message_id} to be handled after the restart")
        seats = ["mail:host@example.test"] + [f"mail:{p.address}" for p in players]

        async def all_seated():
            return sorted(await narrator.lobby(code)) == sorted(seats)
        await until(all_seated, 30, "every player to be seated")
        assert sorted(narrator.joins(code)) == sorted(seats), narrator.logs()
        assert not await narrator.refused_commands(code), narrator.logs()
        for player in players:  # nobody is told their join came twice
            told = [text_of(m) for m in await player.inbox()]
            assert not [t for t in told if "already joined" in t], (player.address, told)
        print(f"killed mid-batch: {acted} of 6 joins acted on, {marked} of 6 mails marked done; each seated once")
    finally:
        code_on_exit = await narrator.stop()
    assert code_on_exit == 0, narrator.logs()
    assert "Traceback" not in narrator.logs()
