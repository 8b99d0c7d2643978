"""One address sends the narrator 60 mails at once: real Dovecot (IMAP) and SMTP on loopback, the
engine and the email gateway in one process (in-process bus, SQLite). The gateway's bucket has a
clock that stands still (so what passes is exact, not timed): the first mails of the burst are
acted on, every other one is remembered as handled and never acted on, the sender gets exactly
one answer telling them to slow down (in the language they wrote in), and reading the whole
mailbox again, after a restart that lost the mailbox position and without any throttle at all,
acts on none of them."""

from __future__ import annotations

import asyncio

from sqlalchemy import delete, func, select

from avalon.services.email_gateway.rows import MailboxRow, SeenMailRow
from avalon.services.email_gateway.words import email_words
from avalon.services.engine.rows import GameRow
from avalon.shared.throttle import Throttle
from tests.e2e.email_support import Narrator, wait_until
from tests.integration.test_email_imap import flags_and_subjects, strip_flags
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

BURST = 5
MAILS = 60
DONE = r"\Seen $AvalonDone"


async def test_sixty_mails_at_once_from_one_address_act_burst_times_and_get_one_answer(mail_servers, tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'narrator.db'}")
    await narrator.start()
    narrator.gateway.inbound.throttle = Throttle(1.0, BURST, clock=lambda: 0.0, quiet=3600)
    zoe = MailUser(mail_servers, mail_servers.add_user("zoe"))
    db = narrator.store.engine

    async def outcomes() -> list[str]:
        async with db.connect() as conn:
            rows = await conn.execute(select(SeenMailRow.outcome).where(SeenMailRow.sender == zoe.address))
            return [outcome for (outcome,) in rows]

    async def games() -> int:
        async with db.connect() as conn:
            return (await conn.execute(select(func.count()).select_from(GameRow))).scalar_one()

    slow_down = email_words("fr", "too_many_mails", wait=60)

    async def answers() -> list:
        return [m for m in await zoe.inbox() if slow_down in m.get_body(("plain",)).get_content()]

    try:
        await asyncio.gather(*(zoe.send(narrator.address, "nouvelle partie", "nouvelle partie")
                               for _ in range(MAILS)))
        await wait_until(lambda: _count(outcomes, MAILS), 120, "every mail read and remembered")
        await wait_until(lambda: _count(games, BURST), 30, "the games of the mails acted on")
        await wait_until(answers, 30, "the answer telling Zoe to slow down")
        await narrator.gateway.outbox.idle(10)

        read = await outcomes()
        assert sum(o.startswith("created") for o in read) == BURST, read
        assert read.count("throttled: told to wait") == 1
        assert read.count("throttled: ignored") == MAILS - BURST - 1
        assert len(await answers()) == 1, "one answer, never a reply storm"
        answered = (await answers())[0]
        assert answered["In-Reply-To"], "a reply to one of her mails"
        assert await games() == BURST

        # the mailbox read again from the start, by a gateway with no throttle: nothing acts twice
        await narrator.stop_gateway()
        async with db.begin() as conn:
            await conn.execute(delete(MailboxRow))
        strip_flags(mail_servers, narrator.address)
        received = len(await zoe.inbox())
        await narrator.start_gateway()
        assert narrator.gateway.inbound.throttle.off

        async def all_done() -> bool:
            flags = await asyncio.to_thread(flags_and_subjects, mail_servers, narrator.address)
            return len(flags) == MAILS and all(f == DONE for f, _ in flags)

        await wait_until(all_done, 60, "every mail read a second time")
        await narrator.gateway.outbox.idle(10)
        await asyncio.sleep(1)  # whatever a second reading would have sent has had time to land
        assert await games() == BURST, "no throttled mail was acted on later"
        assert len(await outcomes()) == MAILS
        assert len(await zoe.inbox()) == received, "nothing answered again"
    finally:
        await narrator.stop()


async def _count(query, wanted: int) -> bool:
    found = await query()
    return (found if isinstance(found, int) else len(found)) >= wanted
