"""Where a person can be reached: the engine keeps one generic record (``player_addresses``: player,
channel, address) instead of a column per channel, moves what the old columns held into it, and still
takes the older ``update_profile`` fields."""

from __future__ import annotations

from datetime import datetime, timezone
from importlib import resources

from alembic import command as alembic_command
from alembic.config import Config
from sqlalchemy import inspect, text

from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.shared.bus import InProcessBus
from avalon.shared.db import make_engine
from avalon.shared.protocol import CommandEnvelope
from tests.integration.engine_support import lobby_commands, wait_processed


async def _migrate_to(engine, revision: str, *, down: bool = False) -> None:
    config = Config()
    config.set_main_option("script_location", str(resources.files("avalon.shared") / "migrations"))

    def run(connection) -> None:
        config.attributes["connection"] = connection
        (alembic_command.downgrade if down else alembic_command.upgrade)(config, revision)

    async with engine.begin() as conn:
        await conn.run_sync(run)


async def test_the_addresses_the_players_table_held_move_to_the_generic_record_and_back(db_url):
    engine = make_engine(db_url)
    try:
        await _migrate_to(engine, "0005")
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        async with engine.begin() as conn:
            await conn.execute(text(
                "INSERT INTO players (id, display_name, language, telegram_chat_id, email, time_zone, created_at, "
                "updated_at) VALUES (:id, :name, 'en', :chat, :email, NULL, :now, :now)"), [
                dict(id="tg:1", name="Arthur", chat=-1001234567890, email="arthur@example.org", now=now),
                dict(id="mail:ann@example.org", name="Ann", chat=None, email="ann@example.org", now=now),
                dict(id="tg:2", name="Bors", chat=None, email=None, now=now),
                dict(id="tg:3", name="Cai", chat=None, email="", now=now),
            ])
        await _migrate_to(engine, "head")
        async with engine.connect() as conn:
            moved = (await conn.execute(text(
                "SELECT player_id, channel, address FROM player_addresses ORDER BY player_id, channel"))).all()
            columns = await conn.run_sync(lambda c: {col["name"] for col in inspect(c).get_columns("players")})
            names = dict((await conn.execute(text("SELECT id, display_name FROM players"))).all())
        assert [tuple(row) for row in moved] == [
            ("mail:ann@example.org", "email", "ann@example.org"),
            ("tg:1", "email", "arthur@example.org"),
            ("tg:1", "telegram", "-1001234567890"),
        ]
        assert not {"telegram_chat_id", "email"} & columns, "the engine keeps no column of any channel"
        assert names == {"tg:1": "Arthur", "mail:ann@example.org": "Ann", "tg:2": "Bors", "tg:3": "Cai"}

        await _migrate_to(engine, "0005", down=True)
        async with engine.connect() as conn:
            back = (await conn.execute(text(
                "SELECT id, telegram_chat_id, email FROM players WHERE id LIKE 'tg:1' OR id LIKE 'mail:%' "
                "ORDER BY id"))).all()
        assert [tuple(row) for row in back] == [("mail:ann@example.org", None, "ann@example.org"),
                                                ("tg:1", -1001234567890, "arthur@example.org")]
    finally:
        await engine.dispose()


async def _routed_profile(db_url, profile: dict) -> tuple[dict[str, list], dict[str, str]]:
    """A Telegram player sends ``profile`` and opens a game: which channels each event reached, and the
    addresses the engine stored."""
    bus, store = InProcessBus(), Store(db_url)
    engine = EngineService(store, bus, channels=channel_map())
    got: dict[str, list] = {"telegram": [], "email": []}
    for channel, events in got.items():
        async def record(envelope, events=events):
            events.append(envelope.event.type)
        await bus.subscribe_events(channel, f"{channel}.#", record)
    try:
        await bus.start()
        await engine.start()
        command = CommandEnvelope(game_id="profile:tg:7", actor="tg:7", channel="telegram",
                                  command={"type": "update_profile", **profile})
        create = lobby_commands("g1", 1)[0].model_copy(update={"actor": "tg:7", "channel": "telegram"})
        for envelope in (command, create):
            await bus.send_command(envelope)
            await wait_processed(store, envelope.message_id)
        await bus.idle()
        stored = await store.upsert_player("tg:7")
    finally:
        await engine.stop()
        await bus.close()
        await store.close()
    return got, stored.addresses


async def test_a_profiles_address_on_another_channel_brings_the_players_events_there_too(db_url):
    got, stored = await _routed_profile(db_url, {"display_name": "Gawain",
                                                 "addresses": {"email": "gawain@example.org"}})
    assert stored == {"email": "gawain@example.org"}
    assert got["email"][:2] == ["profile_updated", "lobby_opened"] and got["telegram"][:2] == got["email"][:2]


async def test_the_older_email_field_is_still_taken_as_the_email_address(db_url):
    got, stored = await _routed_profile(db_url, {"email": "gawain@example.org", "telegram_chat_id": 77})
    assert stored == {"email": "gawain@example.org", "telegram": "77"}
    assert got["email"][:2] == ["profile_updated", "lobby_opened"]


async def test_a_profile_without_addresses_keeps_the_ones_given_before(db_url):
    store = Store(db_url)
    try:
        await store.migrate()
        await store.upsert_player("tg:8", addresses={"email": "old@example.org", "telegram": "8"})
        await store.upsert_player("tg:8", addresses={"email": "new@example.org"})
        assert (await store.upsert_player("tg:8", display_name="Kay")).addresses == {
            "email": "new@example.org", "telegram": "8"}
    finally:
        await store.close()
