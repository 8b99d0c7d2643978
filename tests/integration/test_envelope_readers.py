"""Who reads each event (``readers``) and how they are named (``people``): what a game mixing
Telegram and email seats needs. Over the engine service on the in-process bus, against real SQLite
and PostgreSQL; and the Telegram gateway telling the engine its users' names."""

from __future__ import annotations

import asyncio

import pytest
from aiogram.client.default import DefaultBotProperties

from avalon.shared.bus import InProcessBus
from avalon.shared.protocol import CommandEnvelope, EventEnvelope, Person
from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.services.telegram_gateway.gateway import TelegramGateway
from avalon.services.telegram_gateway.sender import Limits
from tests.fakes import FakeTelegram

from .engine_support import wait_processed

SEATING = ("lobby_opened", "player_joined", "player_left", "game_started")
ANN = "mail:ann@example.org"


class Table:
    """An engine service, and what each channel's subscriber received."""

    def __init__(self, url: str, bus: InProcessBus | None = None) -> None:
        self.url = url
        self.bus = bus or InProcessBus()
        self.store = Store(url)
        self.engine = EngineService(self.store, self.bus, DeadlineScheduler(self.bus), channels=channel_map())
        self.got: dict[str, list[EventEnvelope]] = {"telegram": [], "email": [], "test": []}

    async def start(self, subscribe: bool = True) -> "Table":
        if subscribe:
            for channel, seen in self.got.items():
                async def record(envelope, seen=seen):
                    seen.append(envelope)
                await self.bus.subscribe_events(channel, f"{channel}.#", record)
        await self.engine.start()
        return self

    async def send(self, game: str, actor: str, body: dict, *, channel: str = "test", **extra) -> CommandEnvelope:
        envelope = CommandEnvelope(game_id=game, actor=actor, channel=channel, command=body, **extra)
        await self.bus.send_command(envelope)
        await wait_processed(self.store, envelope.message_id)
        return envelope

    async def profile(self, actor: str, **fields) -> CommandEnvelope:
        return await self.send(f"profile:{actor}", actor, {"type": "update_profile", **fields})

    async def lobby(self, game: str, players: list[str], *, channel: str = "telegram") -> None:
        """Each player's command on their own gateway's channel (a mail player's on email: the engine
        dead-letters a Telegram command for a mail player)."""
        await self.send(game, players[0], {"type": "create_game", "options": {}}, channel=channel)
        for player in players[1:]:
            own = "email" if player.startswith("mail:") else channel
            await self.send(game, player, {"type": "join"}, channel=own)

    async def log(self, game: str) -> list[EventEnvelope]:
        return await self.store.event_log(game)

    async def close(self) -> None:
        await self.engine.stop()
        await self.bus.close()
        await self.store.close()


@pytest.fixture
async def table(db_url):
    t = await Table(db_url).start()
    yield t
    await t.close()


def first(log: list[EventEnvelope], kind: str, **body) -> EventEnvelope:
    return next(e for e in log if e.event.type == kind and all(getattr(e.event, k) == v for k, v in body.items()))


async def test_a_public_events_readers_are_the_games_players_at_that_moment(table):
    players = [f"tg:{i}" for i in range(1, 6)]
    await table.lobby("g1", players)
    await table.send("g1", "tg:9", {"type": "join"}, channel="telegram")
    await table.send("g1", "tg:9", {"type": "leave"}, channel="telegram")
    await table.send("g1", "tg:1", {"type": "start_game"}, channel="telegram")
    log = await table.log("g1")

    assert first(log, "lobby_opened").readers == ("tg:1",), "the host alone, before anyone joined"
    assert first(log, "player_joined", player="tg:1").readers == ("tg:1",)
    assert first(log, "player_joined", player="tg:3").readers == ("tg:1", "tg:2", "tg:3")
    assert first(log, "player_joined", player="tg:9").readers == (*players, "tg:9")
    assert sorted(first(log, "player_left", player="tg:9").readers) == sorted([*players, "tg:9"]), \
        "the one who left reads it too"
    started = first(log, "game_started")
    assert started.readers == started.event.seats and sorted(started.readers) == sorted(players)
    for envelope in log[log.index(started):]:
        if envelope.audience.kind.value == "public":
            assert envelope.readers == started.event.seats, envelope.event.type


async def test_private_events_are_read_by_their_audience_alone_and_replies_by_their_audience(table):
    players = [f"tg:{i}" for i in range(1, 6)]
    await table.lobby("g2", players)
    await table.send("g2", "tg:1", {"type": "start_game"}, channel="telegram")
    log = await table.log("g2")
    private = [e for e in log if e.audience.kind.value == "players"]
    assert {e.event.type for e in private} >= {"role_assigned", "choices_offered"}
    for envelope in private:
        assert envelope.readers == envelope.audience.players
        assert envelope.people == {}
    rejected = await table.send("g2", "tg:2", {"type": "start_game"}, channel="telegram")
    board = await table.send("g2", "tg:3", {"type": "show_board"}, channel="telegram")
    await table.bus.idle()
    replies = {e.caused_by: e for e in table.got["telegram"] if e.seq == 0}
    assert replies[rejected.message_id].event.type == "command_rejected"
    assert replies[board.message_id].event.type == "board_shown"
    for reply, actor in ((replies[rejected.message_id], "tg:2"), (replies[board.message_id], "tg:3")):
        assert reply.readers == () and reply.audience.players == (actor,), "outside the stream: the audience"


async def test_player_joined_names_the_joiner_and_every_other_reader_as_update_profile_set_them(table):
    await table.profile("tg:1", display_name="Arthur", language="fr", time_zone="Europe/Paris")
    await table.profile("tg:2", display_name="Guinevere", language="ru")
    updated = await table.profile("tg:3", display_name="Lancelot", language="nl", time_zone="Asia/Tehran")
    await table.lobby("g3", ["tg:1", "tg:2", "tg:3"])
    log = await table.log("g3")

    joined = first(log, "player_joined", player="tg:3")
    assert joined.people == {
        "tg:1": Person(display_name="Arthur", language="fr", time_zone="Europe/Paris"),
        "tg:2": Person(display_name="Guinevere", language="ru", time_zone=None),
        "tg:3": Person(display_name="Lancelot", language="nl", time_zone="Asia/Tehran"),
    }
    assert set(first(log, "player_joined", player="tg:2").people) == {"tg:1", "tg:2"}
    assert first(log, "lobby_opened").people == {"tg:1": joined.people["tg:1"]}
    assert all(e.people == {} for e in log if e.event.type not in SEATING), "other events stay small"
    await table.bus.idle()
    profile = next(e for e in table.got["telegram"] if e.caused_by == updated.message_id)
    assert profile.event.type == "profile_updated"
    assert profile.people == {"tg:3": joined.people["tg:3"]}

    await table.profile("tg:2", time_zone="Europe/Moscow")  # a later change names them so from then on
    await table.send("g3", "tg:4", {"type": "join"}, channel="telegram")
    later = first(await table.log("g3"), "player_joined", player="tg:4")
    assert later.people["tg:2"] == Person(display_name="Guinevere", language="ru", time_zone="Europe/Moscow")
    assert later.people["tg:4"] == Person(), "a player the engine knows nothing of, named by nothing"


async def test_a_player_of_another_channel_is_named_in_the_events_the_telegram_players_get(table):
    await table.profile(ANN, display_name="Ann", language="en", email="ann@example.org")
    await table.profile("tg:1", display_name="Bors", language="fa")
    players = ["tg:1", ANN, "tg:2", "tg:3", "tg:4"]
    await table.lobby("g4", players)
    await table.send("g4", "tg:1", {"type": "start_game"}, channel="telegram")
    await table.bus.idle()

    telegram = [e for e in table.got["telegram"] if e.game_id == "g4"]
    joined = first(telegram, "player_joined", player=ANN)
    assert ANN in joined.readers
    assert joined.people[ANN].display_name == "Ann" and joined.people["tg:1"].display_name == "Bors"
    started = first(telegram, "game_started")
    assert started.people[ANN] == Person(display_name="Ann", language="en")
    assert set(started.people) == set(players)
    email = [e for e in table.got["email"] if e.game_id == "g4"]
    assert first(email, "game_started").message_id == started.message_id, "the email seat reads it too"
    assert not any(e.audience.kind.value == "players" and ANN not in e.readers for e in email), \
        "no one else's private event reaches the email channel"
    assert {e.event.type for e in email if e.audience.kind.value == "players"} >= {"role_assigned"}


async def test_player_left_reaches_the_one_who_left_on_their_own_channel(table):
    await table.lobby("g5", ["tg:1", "tg:2", ANN])
    await table.send("g5", ANN, {"type": "leave"}, channel="email")
    await table.bus.idle()
    left = first([e for e in table.got["email"] if e.game_id == "g5"], "player_left", player=ANN)
    assert ANN in left.readers and set(left.people) == {"tg:1", "tg:2", ANN}
    assert first(table.got["telegram"], "player_left", player=ANN).message_id == left.message_id


class FailingBus(InProcessBus):
    async def publish_event(self, envelope, channel):
        raise ConnectionError("broker went away")


async def test_events_republished_from_the_outbox_after_a_crash_keep_their_readers_and_people(db_url):
    crashed = await Table(db_url, FailingBus()).start(subscribe=False)
    await crashed.store.upsert_player("tg:1", display_name="Arthur")  # looked up in the players table
    create = CommandEnvelope(game_id="g6", actor="tg:1", channel="telegram",
                             command={"type": "create_game", "options": {}})
    with pytest.raises(ConnectionError):
        await crashed.engine.handle_raw(create.model_dump_json().encode())
    assert await crashed.store.seen(create.message_id), "committed before publishing"
    await crashed.close()

    restarted = await Table(db_url).start()
    try:
        await restarted.bus.idle()
        got = [e for e in restarted.got["telegram"] if e.game_id == "g6"]
        assert [e.event.type for e in got] == ["lobby_opened", "player_joined"]
        assert got == (await restarted.log("g6"))
        assert all(e.readers == ("tg:1",) and e.people == {"tg:1": Person(display_name="Arthur", language="en")}
                   for e in got)
    finally:
        await restarted.close()


# -- the Telegram gateway names its users to the engine -------------------------------------------

class RecordingBus(InProcessBus):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[CommandEnvelope] = []

    async def send_command(self, envelope: CommandEnvelope) -> None:
        self.sent.append(envelope)
        await super().send_command(envelope)


async def test_the_first_command_of_a_telegram_user_is_preceded_by_their_update_profile(tmp_path):
    fake = await FakeTelegram().start()
    bus = RecordingBus()
    await bus.start()
    table = await Table(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}", bus).start(subscribe=False)
    bot = fake.make_bot(default=DefaultBotProperties(parse_mode="HTML"))
    gateway = TelegramGateway(bot, bus, database_url=f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
                              limits=Limits(per_chat_interval=0.0, group_per_minute=10**6, global_per_second=10**6))
    await gateway.start()
    dispatcher = gateway.dispatcher()
    polling = asyncio.create_task(dispatcher.start_polling(bot, handle_signals=False, polling_timeout=1))
    ann = fake.user(1001, "Ann", language_code="fr")
    bob = fake.user(1002, "Bob", language_code="de")  # a language the narrator does not speak
    group = fake.group(-100600, "Camelot", members=[ann, bob])
    try:
        await ann.send(group, "/newgame")
        await fake.wait_for_message(group, "➕", timeout=15)  # the lobby is open, the host in it
        lobby = fake.messages(group)[0]
        await bob.press(lobby, next(d for d in lobby.callback_data if d.startswith("j:")))
        await fake.wait_for(lambda: any(c.command.type == "join" for c in bus.sent), timeout=15)
        await ann.send(group, "/status")
        await fake.wait_for(lambda: any(c.command.type == "show_board" for c in bus.sent), timeout=15)

        kinds = [(c.actor, c.command.type) for c in bus.sent]
        assert kinds[:4] == [("tg:1001", "update_profile"), ("tg:1001", "create_game"),
                             ("tg:1002", "update_profile"), ("tg:1002", "join")]
        assert kinds[4:] == [("tg:1001", "show_board")], "told once, while the name stays the same"
        ann_profile, bob_profile = bus.sent[0].command, bus.sent[2].command
        assert (ann_profile.display_name, ann_profile.language) == ("Ann", "fr")
        assert (bob_profile.display_name, bob_profile.language) == ("Bob", None)
        for command in bus.sent:
            await wait_processed(table.store, command.message_id)
        joined = first(await table.log(bus.sent[1].game_id), "player_joined", player="tg:1002")
        assert joined.people == {"tg:1001": Person(display_name="Ann", language="fr"),
                                 "tg:1002": Person(display_name="Bob", language="en")}
    finally:
        await dispatcher.stop_polling()
        polling.cancel()
        await asyncio.gather(polling, return_exceptions=True)
        await gateway.close()
        await bot.session.close()
        await table.close()
        await fake.stop()
