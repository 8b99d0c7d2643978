"""What the email gateway must never act on, and what it must act on exactly once, in a game by
mail against real Dovecot and SMTP on loopback: a forged From with a valid token, another
player's token, an auto-reply, a bounce, a reply to a past phase, the same mail twice, a crash
between fetching a mail and acting on it; and what it must read: an HTML-only reply, a
top-posted reply with the whole thread quoted, a reply in each language, a reminder only to
those who still have to act, and deadlines in each player's own time zone."""

from __future__ import annotations

import asyncio
from zoneinfo import ZoneInfo

from babel.dates import format_date, format_time

from avalon.services.email_gateway.wording import link_body
from avalon.shared.protocol import CommandEnvelope
from tests.e2e.email_support import Narrator, links_of, read_link, wait_until
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

GAME = "mail-safety"
#: local part, display name, language; the host (seat 1 of the lobby) first
PEOPLE = [("ann", "Ann", "en"), ("boris", "Boris", "ru"), ("claire", "Claire", "fr"), ("dara", "Dara", "fa"),
          ("minh", "Minh", "vi")]


async def eventually(check, timeout: float = 30.0, what: str = "it"):
    return await wait_until(check, timeout, what)


def text_of(message) -> str:
    part = message.get_body(("plain", "html"))
    return part.get_content() if part is not None else ""


class Table:
    def __init__(self, narrator: Narrator, servers) -> None:
        self.narrator, self.servers = narrator, servers
        self.users = {local: MailUser(servers, servers.add_user(local)) for local, _, _ in PEOPLE}
        self.ids = {local: f"mail:{u.address}" for local, u in self.users.items()}

    async def command(self, local: str, body: dict, phase_id: int | None = None, game: str = GAME) -> None:
        await self.narrator.bus.send_command(CommandEnvelope(game_id=game, actor=self.ids[local], channel="test",
                                                             phase_id=phase_id, command=body))

    async def seat_everyone(self, options: dict | None = None) -> None:
        for local, name, language in PEOPLE:
            await self.command(local, {"type": "update_profile", "display_name": name, "language": language,
                                       "email": self.users[local].address}, game=f"profile:{self.ids[local]}")
        await self.command("ann", {"type": "create_game", "options": options or {}})
        for local, _, _ in PEOPLE[1:]:
            await self.command(local, {"type": "join"})
        await self.command("ann", {"type": "start_game"})

        async def started():
            loaded = await self.narrator.store.load(GAME)
            return loaded is not None and loaded.state.phase.value == "proposal"
        await eventually(started, 30, "the game's start")

    async def log(self):
        return await self.narrator.store.event_log(GAME)

    async def state(self):
        return (await self.narrator.store.load(GAME)).state

    async def voted(self) -> list[str]:
        return [e.event.player for e in await self.log() if e.event.type == "player_voted"]

    async def mail_with_links(self, local: str, kind: str, phase_id: int):
        """The newest mail to ``local`` whose links offer ``kind`` in phase ``phase_id``."""
        async def found():
            for message in reversed(await self.users[local].inbox()):
                for url in links_of(message):
                    _, body = read_link(url)
                    if body.endswith(f"#{phase_id}") and self.kind_of(local, body) == kind:
                        return message
            return None
        return await eventually(found, 30, f"{local}'s mail offering {kind} in phase {phase_id}")

    def kind_of(self, local: str, body: str) -> str | None:
        from avalon.services.email_gateway.wording import Intent, parse

        names = self.narrator.gateway.roster.names()
        game = self.narrator.gateway.games.get(GAME)
        seats = tuple(game.table.seats.players) if game else ()
        intent = parse(body, {p: names.get(p, p) for p in seats}, seats)
        return intent.kind if isinstance(intent, Intent) else None

    async def outcome(self, message_id: str) -> str:
        from sqlalchemy import select

        from avalon.services.email_gateway.rows import SeenMailRow

        async def seen():
            async with self.narrator.store.engine.connect() as conn:
                row = (await conn.execute(select(SeenMailRow.outcome).where(
                    SeenMailRow.message_id == message_id.strip("<>")))).first()
            return row[0] if row else None
        return await eventually(seen, 30, f"the gateway reading {message_id}")


async def propose(table: Table) -> int:
    """The leader proposes a team by typing it; returns the vote's phase id once it opens."""
    state = await table.state()
    leader = state.players[state.leader]
    local = next(k for k, v in table.ids.items() if v == leader)
    pick = await table.mail_with_links(local, "pick", state.phase_id)
    game = table.narrator.gateway.games[GAME]
    names = table.narrator.gateway.roster.names()
    team = [names[p] for p in game.table.seats.players[: game.table.turn.team_size]]
    await table.users[local].reply(pick, link_body("en", "team", team), quote="below")

    async def vote_open():
        s = await table.state()
        return s.phase_id if s.phase.value == "vote" else None
    return await eventually(vote_open, 30, "the vote")


async def answers_to(user: MailUser, message_id: str) -> list:
    """The narrator's mails to ``user`` that answer the mail ``message_id``."""
    wanted = message_id.strip().strip("<>")
    return [m for m in await user.inbox() if str(m.get("In-Reply-To", "")).strip().strip("<>") == wanted]


async def revealed(table: Table):
    return next((e.event for e in await table.log() if e.event.type == "votes_revealed"), None)


async def test_forged_foreign_and_automatic_mail_change_nothing_and_every_language_is_read(mail_servers, tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'n.db'}")
    await narrator.start()
    table = Table(narrator, mail_servers)
    users = table.users
    mallory = MailUser(mail_servers, mail_servers.add_user("mallory"))
    try:
        await table.seat_everyone()
        vote = await propose(table)
        ann_vote = await table.mail_with_links("ann", "approve", vote)
        ann_reply_to = str(ann_vote["Reply-To"])

        # a forged From with Ann's valid token: the receiving server reports DMARC failing
        forged = await mallory.send(ann_reply_to, "Re: vote", "reject", from_address=users["ann"].address)
        assert (await table.outcome(forged)).startswith("refused: dmarc")
        # Boris, a real player, writing with Ann's token: refused, and he is told why
        foreign = await users["boris"].send(ann_reply_to, "Re: vote", "approve")
        assert (await table.outcome(foreign)).startswith("refused")
        told = await eventually(lambda: answers_to(users["boris"], foreign), 20, "Boris told the link is not his")
        assert "Ann" not in text_of(told[0])
        # an out-of-office reply from Ann's own address: never acted on, never answered
        auto = await users["ann"].send(ann_reply_to, "Automatic reply: vote", "approve\nI am away until Monday",
                                       headers={"Auto-Submitted": "auto-replied"})
        await asyncio.sleep(3)
        assert await table.voted() == [], "nothing forged, foreign or automatic was applied"
        assert not await answers_to(users["ann"], forged) and not await answers_to(users["ann"], auto)
        assert not await answers_to(mallory, forged), "a forger gets nothing back"

        # each player answers in their own language, each in another way
        await users["boris"].reply(await table.mail_with_links("boris", "approve", vote), link_body("ru", "reject"),
                                   quote="below")
        await users["claire"].reply(await table.mail_with_links("claire", "approve", vote),
                                    link_body("fr", "approve"), quote="below", html_only=True)
        await users["dara"].reply(await table.mail_with_links("dara", "approve", vote), link_body("fa", "approve"),
                                  quote="above")
        await users["minh"].reply(await table.mail_with_links("minh", "approve", vote), link_body("vi", "reject"),
                                  quote="above")
        # Ann's vote, the same mail delivered twice (same Message-ID)
        twice = "<ann-vote-once@example.test>"
        for _ in range(2):
            await users["ann"].send(ann_reply_to, "Re: vote", "approve", headers={"Message-ID": twice})
        result = await eventually(lambda: revealed(table), 40, "the votes revealed")
        assert dict(result.votes) == {table.ids["ann"]: True, table.ids["boris"]: False, table.ids["claire"]: True,
                                      table.ids["dara"]: True, table.ids["minh"]: False}
        assert (await table.voted()).count(table.ids["ann"]) == 1

        # a reply to the vote after it is over changes nothing, and says why with what is open now
        events_before = len(await table.log())
        late = await users["boris"].reply(await table.mail_with_links("boris", "approve", vote), "approve",
                                          quote="below")
        assert (await table.outcome(late)).startswith("sent cast_vote")
        await asyncio.sleep(2)
        assert [e.event.type for e in (await table.log())[events_before:]] == []
        assert len([e for e in await table.log() if e.event.type == "votes_revealed"]) == 1
        counts = await narrator.gateway.outbox.counts()
        assert counts.get("dead", 0) == 0, counts
    finally:
        await narrator.stop()


def bounce_for(narrator: str, failed: str, returned=None) -> bytes:
    """A delivery status notification, as a mail server sends it back (null sender), with the headers
    of the mail it returns (``returned``, as the failed recipient would have read it)."""
    copy = "".join(f"{name}: {value}\r\n" for name, value in returned.items()) if returned is not None else ""
    copy = f"--b1\r\nContent-Type: text/rfc822-headers\r\n\r\n{copy}\r\n" if copy else ""
    return (
        "Return-Path: <>\r\n"
        "From: Mail Delivery System <MAILER-DAEMON@mx.example.test>\r\n"
        f"To: {narrator}\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        "Message-ID: <bounce-1@mx.example.test>\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"\r\n\r\n'
        "--b1\r\nContent-Type: text/plain\r\n\r\n"
        f"I'm sorry to have to inform you that your message could not be delivered to {failed}.\r\n\r\n"
        "--b1\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.test\r\n\r\n"
        f"Final-Recipient: rfc822; {failed}\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n"
        f"{copy}--b1--\r\n").encode()


async def test_a_crash_around_acting_acts_once_and_reminders_deadlines_and_bounces_reach_the_right_people(
        mail_servers, tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'n.db'}")
    await narrator.start()
    table = Table(narrator, mail_servers)
    users = table.users
    try:
        await table.seat_everyone()
        # Dara sets her time zone by mail (she is in one game: no link needed)
        zone = await users["dara"].send(narrator.address, "time zone", "time zone Asia/Tehran")
        assert (await table.outcome(zone)).startswith("profile")
        await users["dara"].wait_for(lambda m: "Asia/Tehran" in text_of(m), timeout=20)  # confirmed

        # the gateway 'dies' twice: once after fetching Ann's mail before acting on it, once after
        # Boris's command is on the bus but before his mail is marked; each mail is read again
        inbound = narrator.gateway.inbound
        real_act = inbound.act
        crashes = []

        async def crashing_act(mail, key):
            if mail.sender == users["ann"].address and "before" not in crashes:
                crashes.append("before")
                raise RuntimeError("killed between fetching and acting")
            outcome = await real_act(mail, key)
            if mail.sender == users["boris"].address and "after" not in crashes:
                crashes.append("after")
                raise RuntimeError("killed after acting, before the mail was marked")
            return outcome
        inbound.act = crashing_act

        vote = await propose(table)
        log = await table.log()
        opened = [e for e in log if e.event.type == "phase_opened" and e.event.phase_id == vote][0]
        tehran = opened.deadline_at.astimezone(ZoneInfo("Asia/Tehran"))
        dara_vote = await table.mail_with_links("dara", "approve", vote)
        assert format_date(tehran, "medium", locale="fa") in text_of(dara_vote) and \
            format_time(tehran, "short", locale="fa") in text_of(dara_vote), \
            "Dara reads the deadline in her own time zone, with her choices"
        utc = format_time(opened.deadline_at.astimezone(ZoneInfo("UTC")), "short", locale="en")
        assert utc in text_of(await table.mail_with_links("ann", "approve", vote)) and "UTC" in \
            text_of(await table.mail_with_links("ann", "approve", vote)), "no time zone set: UTC, and it says so"

        for local in ("ann", "boris"):
            await users[local].reply(await table.mail_with_links(local, "approve", vote), "approve", quote="below")
        await eventually(lambda: _voted(table, 2), 40, "two votes")
        assert sorted(crashes) == ["after", "before"]
        await asyncio.sleep(2)
        voted = await table.voted()
        assert sorted(voted) == sorted([table.ids["ann"], table.ids["boris"]]), voted

        # a reminder reaches only those who still have to vote
        await narrator.gateway.outbox.idle(30)
        await asyncio.sleep(1)
        before = {local: len(await u.inbox()) for local, u in users.items()}
        from datetime import datetime, timezone

        left = int((opened.deadline_at - datetime.now(timezone.utc)).total_seconds())
        await narrator.bus.send_command(CommandEnvelope(game_id=GAME, actor="@scheduler", channel="scheduler",
                                                        phase_id=vote,
                                                        command={"type": "remind_phase", "seconds_left": left}))
        await eventually(lambda: _grew(users, before, ("claire", "dara", "minh")), 20, "the reminders")
        await narrator.gateway.outbox.idle(30)
        await asyncio.sleep(1)
        after = {local: len(await u.inbox()) for local, u in users.items()}
        assert after["ann"] == before["ann"] and after["boris"] == before["boris"], "no reminder to who voted"

        # a bounce for Claire's address: nothing acted on, and the host (Ann) is told
        # (it returns a mail of ours to her: one she read, as her server would have bounced it)
        returned = (await users["claire"].inbox())[-1]
        mail_servers.deliver_directly(narrator.address, bounce_for(narrator.address, users["claire"].address,
                                                                   returned))
        host_told = await users["ann"].wait_for(lambda m: "claire@example.test" in text_of(m), timeout=20)
        assert "Claire" in text_of(host_told)
        contact = await narrator.gateway.store.contact(users["claire"].address)
        assert contact is not None and contact.failing
        assert sorted(await table.voted()) == sorted([table.ids["ann"], table.ids["boris"]])
    finally:
        await narrator.stop()


async def _voted(table: Table, n: int) -> bool:
    return len(await table.voted()) >= n


async def _grew(users, before, who) -> bool:
    for local in who:
        if len(await users[local].inbox()) <= before[local]:
            return False
    return True
