"""A player whose mailbox bounces in the middle of a quest and who writes again before its deadline:
the quest card offered while their mail was bouncing reaches them again, privately, and their own
card counts; their role card comes again when they ask for it by its word (real Dovecot and SMTP on
loopback; the SMTP server accepts their mail, then returns it with a delivery report quoting its
headers, as a relay does for a full mailbox)."""

from __future__ import annotations

import asyncio

from avalon.services.email_gateway.wording import link_body
from avalon.services.email_gateway.words import email_words
from tests.e2e.email_support import Narrator, links_of, read_link, wait_until
from tests.e2e.test_email_safety import PEOPLE, Table, text_of
from tests.mailservers import mail_servers  # noqa: F401 - the fixture

LANGUAGE = {local: language for local, _, language in PEOPLE}
ROLE = "🂠"  # the role card's first line (the first such line a player reads: no card is played before)


def role_line(message) -> str | None:
    return next((line for line in text_of(message).splitlines() if line.startswith(ROLE)), None)


async def test_a_player_whose_mail_bounced_during_a_quest_writes_again_and_plays_their_own_card(mail_servers,
                                                                                                  tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'n.db'}")
    await narrator.start()
    table = Table(narrator, mail_servers)
    users, ids = table.users, table.ids
    local_of = {player: local for local, player in ids.items()}
    try:
        await table.seat_everyone()
        state = await table.state()
        evil = next(p for p in state.players if state.roles[state.seat_of[p]].team.value == "evil"
                    and p != ids["ann"])  # Ann hosts: she is told of the bounce
        leader = state.players[state.leader]
        partner = leader if leader != evil else next(p for p in state.players if p != evil)
        away = local_of[evil]
        dealt = await users[away].wait_for(lambda m: role_line(m) is not None, timeout=30)

        # the team goes to the vote; from then on the player's mailbox returns every mail
        await table.command(local_of[leader], {"type": "propose_team", "team": [evil, partner]}, state.phase_id)

        async def phase(name: str):
            s = await table.state()
            return s.phase_id if s.phase.value == name else None
        vote = await wait_until(lambda: phase("vote"), 30, "the vote")
        await narrator.gateway.outbox.idle(30)
        mail_servers.bounce_recipient(users[away].address)
        for local in users:
            await table.command(local, {"type": "cast_vote", "approve": True}, vote)
        quest = await wait_until(lambda: phase("quest"), 30, "the quest")

        async def failing():
            contact = await narrator.gateway.store.contact(users[away].address)
            return contact is not None and contact.failing
        await wait_until(failing, 30, "the bounce read")
        told = await users["ann"].wait_for(lambda m: users[away].address in text_of(m), timeout=30)
        assert "bouncing" in text_of(told)
        await table.command(local_of[partner], {"type": "play_card", "card": "success"}, quest)
        await narrator.gateway.outbox.idle(30)
        last_received = (await users[away].inbox())[-1]
        assert not any(table.kind_of(away, read_link(u)[1]) == "fail" for m in await users[away].inbox()
                       for u in links_of(m)), "the quest card never reached them"

        # their mailbox works again: they write (the board, in their language), before the deadline
        mail_servers.bounce_recipient(users[away].address, False)
        others_before = {local: len(await u.inbox()) for local, u in users.items() if local not in (away, "ann")}
        await users[away].reply(last_received, link_body(LANGUAGE[away], "status"), quote="below")
        offer = await table.mail_with_links(away, "fail", quest)
        assert not text_of(offer).startswith("⚠️"), "what is open, not a refusal"
        fail = next(u for u in links_of(offer) if table.kind_of(away, read_link(u)[1]) == "fail")
        await users[away].click(fail)

        async def resolved():
            return next((e.event for e in await table.log() if e.event.type == "quest_resolved"), None)
        result = await wait_until(resolved, 30, "the quest resolved")
        assert result.fails == 1 and result.failed, "their own card counted"
        assert not [e for e in await table.log() if e.event.type == "deadline_missed"], "no card played for them"
        assert not (await narrator.gateway.store.contact(users[away].address)).failing
        back = email_words("en", "address_working", name="\x00", address=users[away].address).split("\x00")[-1]
        await users["ann"].wait_for(lambda m: back in text_of(m), timeout=30)  # the host told it works again

        # their role card again, by its word in their language: as dealt
        await users[away].reply(offer, link_body(LANGUAGE[away], "role"), quote="below")
        card = role_line(dealt)
        await users[away].wait_for(lambda m: card in text_of(m), timeout=30)  # the card as dealt

        # nothing private to anyone else: no one else read their role card or quest card meanwhile
        await narrator.gateway.outbox.idle(30)
        await asyncio.sleep(1)
        for local, before in others_before.items():
            for message in (await users[local].inbox())[before:]:
                assert card not in text_of(message), (local, text_of(message))
                assert not [u for u in links_of(message) if table.kind_of(local, read_link(u)[1]) in ("success", "fail")]
        counts = await narrator.gateway.outbox.counts()
        assert counts.get("dead", 0) == 0, counts
    finally:
        await narrator.stop()
