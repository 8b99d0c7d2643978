"""Six 5-player games by mail, played at once against `avalon engine` and `avalon email` as real
processes (RabbitMQ, a fresh PostgreSQL database, a private Dovecot and the SMTP server in front
of it), while the email gateway is SIGKILLed three times (twice right after a burst of replies
landed in its mailbox), the SMTP server it sends through is down for 10 s and Dovecot, the IMAP
it reads, is down for 10 s. Two games run on 30 s deadlines with a player who lets a vote run out.

Every game ends; every reply the SMTP server accepted is acted on exactly once; every event of
each game reaches each of its mail players at least once (the engine's event log rendered for
them, found in their mail; duplicates counted); every deadline is kept."""

from __future__ import annotations

import asyncio
import imaplib
import os
import random
import time
from collections import Counter

import pytest
from sqlalchemy import text

from tests.faults.ledger import Tally, record
from tests.faults.mail_accounting import check_deadlines, compare_mail, count_moves, expected_mail
from tests.faults.mail_players import MailTable, text_of
from tests.faults.mail_world import MailWorld
from tests.integration.conftest import amqp_url, rabbit_prefix, require_rabbitmq  # noqa: F401

pytestmark = pytest.mark.faults

GAMES = 6
DEADLINE_GAMES = 2  # the first ones: every phase 30 s (the shortest a host may set)
SHORT = dict.fromkeys(("proposal", "vote", "quest", "excalibur", "lady", "assassination", "last_word"), 30)
OUTAGE = 10.0


class Faults:
    """Pulls the switches while the games run, each at a moment chosen by the games' progress."""

    def __init__(self, world: MailWorld, tables: list[MailTable], sent: list, rng: random.Random) -> None:
        self.world, self.tables, self.sent, self.rng = world, tables, sent, rng
        self.log: list[str] = []
        self.in_play: dict[str, set[str]] = {"kill": set(), "SMTP": set(), "IMAP": set()}
        self.kills = 0
        self.waiting_at_kills: list[int] = []

    def playing(self) -> set[str]:
        return {t.code for t in self.tables if t.code and not t.over}

    async def run(self) -> None:
        while not all(t.code for t in self.tables) or not await self.all_started():
            await asyncio.sleep(0.2)
        await asyncio.sleep(self.rng.uniform(1.0, 3.0))
        await self.kill("at a random moment")
        await asyncio.sleep(self.rng.uniform(1.0, 3.0))
        await self.outage("SMTP", self.world.smtp_outage)
        await self.kill(await self.burst())
        await asyncio.sleep(self.rng.uniform(1.0, 3.0))
        await self.outage("IMAP", self.world.imap_outage)
        await self.kill(await self.burst())

    async def all_started(self) -> bool:
        for t in self.tables:
            loaded = await self.world.store.load(t.code)
            if loaded is None or loaded.state.phase.value == "lobby":
                return False
        return True

    async def burst(self, size: int = 3, within: float = 1.0, timeout: float = 20.0) -> str:
        """Until ``size`` replies were accepted (so delivered to the narrator's mailbox) within
        ``within`` s; says when the kill that follows comes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = time.time()
            if sum(1 for s in self.sent if now - s.at < within) >= size:
                return f"right after a burst of {size}+ replies landed"
            await asyncio.sleep(0.02)
        return f"after {timeout:g} s without a burst of replies"

    async def kill(self, moment: str) -> None:
        playing = self.playing()
        self.world.gateway.kill()
        waiting = await asyncio.to_thread(self.unhandled)
        pending = await self.pending_outbox()
        self.in_play["kill"] |= playing
        self.kills += 1
        self.waiting_at_kills.append(waiting)
        self.log.append(f"SIGKILL {self.kills} {moment}: {len(playing)} games in play, {waiting} replies waiting "
                        f"in the mailbox, {pending} mails waiting in the outbox")
        await asyncio.sleep(self.rng.uniform(0.0, 1.0))
        await self.world.gateway.start()

    async def outage(self, what: str, switch) -> None:
        playing = self.playing()
        await switch(OUTAGE)
        self.in_play[what] |= playing | self.playing()
        self.log.append(f"{what} down {OUTAGE:g} s: {len(playing)} games in play")

    def unhandled(self) -> int:
        """Replies in the narrator's mailbox that the gateway has not marked handled."""
        world = self.world
        with imaplib.IMAP4("127.0.0.1", world.servers.imap_port, timeout=10) as imap:
            imap.login(world.narrator, "narrator-password")
            imap.select("INBOX", readonly=True)
            _, found = imap.uid("SEARCH", "UNKEYWORD", "$AvalonDone")
        return len(found[0].split()) if found and found[0] else 0

    async def pending_outbox(self) -> int:
        async with self.world.store.engine.connect() as conn:
            rows = await conn.execute(text("SELECT count(*) FROM delivery_outbox WHERE state = 'pending'"))
            return rows.scalar_one()


async def test_mail_games_survive_gateway_kills_and_smtp_and_imap_outages(amqp_url, rabbit_prefix):
    await require_rabbitmq(amqp_url)
    rng = random.Random(int(os.environ.get("MAIL_FAULT_SEED", "13")))
    sent: list = []
    async with MailWorld(amqp_url, rabbit_prefix) as world:
        tables = [MailTable(world, n, sent, timers=SHORT if n < DEADLINE_GAMES else None, seed=rng.random())
                  for n in range(GAMES)]
        faults = Faults(world, tables, sent, rng)
        for table in tables:
            await table.open()
        injecting = asyncio.create_task(faults.run())
        try:
            await asyncio.gather(*(t.play(timeout=300) for t in tables))
            await asyncio.wait_for(injecting, 60)
        finally:
            injecting.cancel()
        print("\n" + "\n".join(faults.log))
        logs = {t.code: await world.store.event_log(t.code, include_internal=True) for t in tables}
        published = {t.code: await world.store.event_log(t.code) for t in tables}

        # every reply accepted by SMTP acted on exactly once
        moves = await count_moves(world.store, sent, logs)

        # every event each player should read, in their mail at least once
        names = {p: person.display_name for log in logs.values() for e in log
                 for p, person in e.people.items() if person.display_name}
        expected = sum((expected_mail(code, log, names) for code, log in published.items()), start=Counter())
        received: dict[str, list[str]] = {}

        async def all_arrived() -> bool:
            await asyncio.gather(*(t.read(p) for t in tables for p in t.players))
            received.update({p.id: [text_of(m) for m in p.mails] for t in tables for p in t.players})
            return compare_mail(expected, received)[0] == 0

        async def outbox() -> dict[str, int]:
            async with world.store.engine.connect() as conn:
                rows = await conn.execute(text("SELECT state, count(*) FROM delivery_outbox GROUP BY state"))
                return dict(rows.all())

        deadline = time.monotonic() + 60  # the last mails of the games are still on their way
        while not (await all_arrived() and not (await outbox()).get("pending")) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        lost, duplicates, missing = compare_mail(expected, received)
        states = await outbox()

        checked, wrong = 0, []
        for log in published.values():
            n, bad = check_deadlines(log, world.outages)
            checked, wrong = checked + n, wrong + bad

    print(f"{GAMES} games, {len(sent)} replies sent ({moves.rejected} refused by the engine: a phase had "
          f"ended), {sum(expected.values())} mail fragments due, {duplicates} duplicated, outbox {states}, "
          f"{checked} phases ended by their deadline")
    common = dict(moves=moves.moves, moves_lost=moves.lost, moves_doubled=moves.doubled,
                  events=sum(expected.values()), events_lost=lost, duplicates=duplicates,
                  deadlines=checked, deadlines_missed=len(wrong))
    record(Tally("email gateway SIGKILL", games=len(faults.in_play["kill"]), faults=faults.kills, **common))
    for what, suite in (("SMTP", "SMTP down"), ("IMAP", "IMAP down")):  # the same games: counted once, above
        record(Tally(f"{suite} (in {len(faults.in_play[what])} of those games)", faults=1))

    assert all(t.over for t in tables)
    assert faults.kills >= 3 and any(faults.waiting_at_kills), faults.log
    assert all(len(faults.in_play[k]) >= GAMES // 2 for k in faults.in_play), faults.log
    assert moves.lost == 0 and moves.doubled == 0, moves.examples
    assert lost == 0, f"{lost} of {sum(expected.values())} mail fragments never arrived: {missing[:5]}"
    assert states.get("dead", 0) == 0 and states.get("pending", 0) == 0, states
    assert checked >= DEADLINE_GAMES and not wrong, (checked, wrong)
