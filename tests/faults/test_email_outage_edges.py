"""Two things the mail fault games broke, each shown on its own, quickly, against a real Dovecot
and SMTP server on loopback: mail waits in the outbox for an SMTP server that is down longer than
all its attempts would last (it was given up on, the address marked failing, the game stalled);
and a restarted email gateway still calls every player by name (it had forgotten the names: mail
said "ann@example.test proposes", and the typed example it offered named addresses)."""

from __future__ import annotations

import asyncio
import re

import pytest

from avalon.services.email_gateway.compose import Identity
from avalon.services.email_gateway.gateway import EmailGateway
from avalon.services.email_gateway.smtp import SmtpSender
from avalon.services.email_gateway.tokens import Tokens
from avalon.shared.bus import InProcessBus
from avalon.shared.db import make_engine, migrate
from tests.e2e.email_support import SECRET, Narrator, links_of, read_link, wait_until
from tests.faults.mail_players import EXAMPLE_TEAM, text_of
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

pytestmark = pytest.mark.faults


async def test_mail_waits_in_the_outbox_however_long_the_smtp_server_is_down(mail_servers, tmp_path):
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}")
    await migrate(engine)
    bus = InProcessBus()
    await bus.start()
    narrator = mail_servers.add_user("narrator")
    ann = MailUser(mail_servers, mail_servers.add_user("ann"))
    smtp = SmtpSender("127.0.0.1", mail_servers.smtp_port, "none", narrator, "secret")
    # two attempts 0.05 s apart: the whole budget of a mail that fails is spent in a tenth of a second
    gateway = EmailGateway(bus, engine, identity=Identity(narrator), tokens=Tokens(SECRET), smtp=smtp,
                           linger=0, attempts=2, first_delay=0.05, max_delay=0.2)
    await gateway.start()
    try:
        await mail_servers.stop_smtp()
        await gateway.say(ann.address, None, "help")
        await asyncio.sleep(2.0)  # twenty times that budget
        assert await gateway.outbox.counts() == {"pending": 1}, "the mail waits for the server"
        await mail_servers.start_smtp()
        told = await ann.wait_for(lambda m: True, timeout=30)
        assert "Reply with one of these commands" in text_of(told)
        await gateway.outbox.idle(30)
        assert await gateway.outbox.counts() == {"sent": 1}
        assert await gateway.store.contact(ann.address) is None, "nobody is told the address is failing"
    finally:
        await gateway.close()
        await bus.close()
        await engine.dispose()


async def test_a_restarted_email_gateway_still_calls_every_player_by_name(mail_servers, tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'narrator.db'}")
    await narrator.start()
    names = ("host", "ann", "bob", "cleo", "dan")
    users = [MailUser(mail_servers, mail_servers.add_user(name)) for name in names]
    host = users[0]
    try:
        await host.send(narrator.address, "new game", "\n".join(u.address for u in users[1:]))
        for user in users[1:]:
            invitation = await user.wait_for(lambda m: any(read_link(u)[1] == "join" for u in links_of(m)), 30)
            await user.reply(invitation, "join")

        async def seated() -> bool:
            games = [g for g in narrator.gateway.games if g.startswith("mail-")]
            loaded = await narrator.store.load(games[0]) if games else None
            return loaded is not None and len(loaded.state.players) == 5
        await wait_until(seated, 30, "five players seated")
        await host.reply((await host.inbox())[-1], "start")

        async def leader_and_offer():
            for user in users:
                offers = [m for m in await user.inbox() if EXAMPLE_TEAM.search(text_of(m)) and links_of(m)]
                if offers:
                    return user, offers[-1]
            return None
        leader, offer = await wait_until(leader_and_offer, 30, "the leader's choices")
        phase = re.search(r"#(\d+)", read_link(links_of(offer)[0])[1]).group(1)
        team = EXAMPLE_TEAM.search(text_of(offer)).group(1)
        assert "@" not in team, f"before the restart the example names players: {team}"

        await narrator.stop_gateway()  # a new gateway: what it knows of names comes from its database
        await narrator.start_gateway()
        await leader.reply(offer, f"team {team} #{phase}")
        for user in users:
            proposal = await user.wait_for(lambda m: "proposes:" in text_of(m), 30)
            line = next(line for line in text_of(proposal).splitlines() if "proposes:" in line)
            assert "@" not in line and leader.address.split("@")[0] in line, line
    finally:
        await narrator.stop()
