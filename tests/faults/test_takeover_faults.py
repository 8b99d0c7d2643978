"""A takeover while the engine is SIGKILLed in the middle of it (issue 21): games over the bus in which a
player goes silent at a vote, their seat is opened (by the host, or by the missed deadline), and a newcomer's
take_seat is sent while the engine is killed before it handles the command, after a random few
milliseconds, as soon as it has committed it, and as soon as its events are out (not yet acknowledged);
the engine is started again, the bus delivers again what was not acknowledged, and half the time the
gateway sends the same message again too. Then: seat_taken once, the newcomer's role card and briefing
once and to them alone, nothing lost or doubled in any game's stream, the one replaced refused with
seat_taken, and every game played to its end by the newcomers and the others.

The parts are real: the engine as its own process (``avalon engine``) on SQLite and on PostgreSQL, the
local RabbitMQ (under a prefix of the test's own), the suite's own gateway on channel ``test``.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid

import pytest
from sqlalchemy import text

from avalon.services.engine.store import Store
from avalon.shared.bus.rabbit import RabbitBus
from tests.faults.ledger import record
from tests.faults.takeover_world import TakeoverTable, check_takeover, raw_duplicates, takeover_under_kill
from tests.faults.world import ServiceProcess
from tests.integration.conftest import amqp_url, require_rabbitmq  # noqa: F401
from tests.integration.engine_support import create_pg_database, drop_pg_database

pytestmark = pytest.mark.faults

#: The host opens these seats; each takeover gets one of the kill moments, in turn (a restart of the
#: engine takes ~3.5 s here: PostgreSQL gets each moment once, SQLite has until its deadline game's seat opens)
MOMENTS = {"sqlite": ("before", "random", "committed", "published", "random", "committed"),
           "postgresql": ("before", "random", "committed", "published")}
#: On SQLite, one more game whose seat opens by itself after its victim's vote ran out (30 s: the
#: shortest timer; on PostgreSQL too it would double the file's time)
DEADLINE_GAMES = {"sqlite": 1, "postgresql": 0}
BACKGROUND = 4  # games without a takeover, their commands in flight across the kills


@pytest.fixture(params=["sqlite", "postgresql"])
async def database(request, tmp_path):
    if request.param == "sqlite":
        yield "sqlite", f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}"
        return
    url, name = await create_pg_database()
    try:
        yield "postgresql", url
    finally:
        await drop_pg_database(name)


async def test_a_takeover_survives_engine_sigkills_around_it(database, amqp_url, tmp_path):
    await require_rabbitmq(amqp_url)
    kind, database = database
    prefix = f"tk{uuid.uuid4().hex[:8]}"
    engine = ServiceProcess("engine", {"AMQP_URL": amqp_url, "BUS_PREFIX": prefix, "DATABASE_URL": database},
                            tmp_path / "engine.log", "engine ready")
    table = TakeoverTable(amqp_url, prefix, seed=11)
    store = None
    rng = random.Random(5)
    started = time.monotonic()
    outages: list[tuple[float, float]] = []
    try:
        await engine.start()
        store = Store(database)
        await table.start()
        await table.open_takeover_games(len(MOMENTS[kind]), DEADLINE_GAMES[kind], BACKGROUND)
        takeovers = list(table.takeovers.values())
        by_host = [t for t in takeovers if not t.by_deadline]
        await asyncio.wait_for(asyncio.gather(*(t.held.wait() for t in by_host)), 30)
        for t in by_host:
            await table.open_seat(t)
        await asyncio.wait_for(asyncio.gather(*(t.opened.wait() for t in by_host)), 30)
        marks = [f"seats open {time.monotonic() - started:.0f} s"]
        for k, (t, moment) in enumerate(zip(by_host, MOMENTS[kind])):
            await takeover_under_kill(table, engine, store, t, moment, resend=k % 2 == 1, rng=rng, outages=outages)
            await table.stale_vote(t)
        for t in takeovers[len(by_host):]:  # the seat the missed deadline opened, taken while the engine dies
            await asyncio.wait_for(t.opened.wait(), 60)
            await takeover_under_kill(table, engine, store, t, "random", resend=True, rng=rng, outages=outages)
            await table.stale_vote(t)
        marks.append(f"taken {time.monotonic() - started:.0f} s")
        await table.wait_all_over(180)  # the deadline game may still wait out a 30 s vote on a loaded machine
        marks.append(f"games over {time.monotonic() - started:.0f} s")
        await asyncio.sleep(0.5)  # the stale votes' answers
        tally = await table.account(database, "engine SIGKILL during takeovers", faults=engine.kills,
                                    outages=outages)
        problems = list(table.problems)
        for t in takeovers:
            problems += check_takeover(t, await store.event_log(t.game.id, include_internal=True), table.delivered)
        record(tally)
        print(f"\n{tally.suite} ({kind}): {tally.line()}; "
              f"kills {[(t.moment, t.window) for t in takeovers]}; duplicate deliveries of the takeover games "
              f"{sum(raw_duplicates(table.delivered, t.game.id) for t in takeovers)}; "
              f"{', '.join(marks)}")
        assert not problems, "\n".join(problems[:20])
        assert (tally.moves_lost, tally.moves_doubled, tally.events_lost, tally.deadlines_missed) == (0, 0, 0, 0)
        assert tally.deadlines >= DEADLINE_GAMES[kind], tally
        assert engine.kills == len(takeovers)
        assert not engine.errors(), "\n".join(engine.errors()[:20])
    except BaseException:
        print("engine log:\n" + "\n".join(engine.text().splitlines()[-30:]))
        if store is not None:
            for game in [g for g in table.games.values() if not g.over][:3]:  # where a stuck game stands
                log = await store.event_log(game.id, include_internal=True)
                print(f"{game.id}, its last events:\n" + "\n".join(
                    f"  {e.seq} {e.event.type} {e.readers} {e.event.model_dump(exclude={'type', 'audience'})}"
                    f" caused_by {e.caused_by}" for e in log[-14:]))
                async with store.engine.connect() as conn:
                    rows = (await conn.execute(text(
                        "SELECT message_id, outcome, processed_at FROM processed_commands WHERE game_id = :g"
                        " ORDER BY processed_at DESC LIMIT 8"), {"g": game.id})).all()
                print("  its last commands: " + "; ".join(f"{r[0]} {r[1]} {r[2]}" for r in rows))
                print(f"  moves sent: {[m for m in table.moves if m.startswith(game.id)][-8:]}")
                print(f"  seqs received: {sorted(s for g, s in table.received if g == game.id)[-8:]}")
        raise
    finally:
        await table.close()
        await engine.stop()
        if store is not None:
            await store.close()
        await RabbitBus(amqp_url, prefix=prefix).delete_everything("faults")
