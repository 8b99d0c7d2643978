"""One RabbitMQ user per service (``avalon broker-users``) against the real broker: each service does
what it must as its own user, and the broker refuses a gateway anything more.

Every test runs in a vhost of its own module (deleted afterwards, with the users), created through
the management API as the admin of ``AMQP_URL`` (guest on the local broker). The management plugin
must be on (``.ci/run`` turns it on); without it these tests fail saying so.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from urllib.parse import quote, urlsplit, urlunsplit

import aio_pika
import aiormq.exceptions
import pytest

from avalon.services import broker_users
from avalon.services.broker_users import Management, ManagementError, admin_from, create, ensure_users, user_name
from avalon.services.cli import main
from avalon.shared.bus.rabbit import COMMAND_ROUTING_KEY, RabbitBus, TopologyMissing
from avalon.shared.protocol import CommandEnvelope
from tests.integration.conftest import require_rabbitmq
from tests.integration.test_rabbit_bus import TIMEOUT, event, eventually, quiet

PASSWORDS = {role: uuid.uuid4().hex for role in broker_users.roles()}


class Broker:
    """The module's vhost, prefix and users."""

    def __init__(self, amqp_url: str) -> None:
        self.admin = admin_from(amqp_url)
        self.api = Management(self.admin.management_url, self.admin.user, self.admin.password)
        self.vhost = f"avalon-test-{uuid.uuid4().hex[:8]}"
        self.prefix = f"t{uuid.uuid4().hex[:8]}"
        self.parts = urlsplit(amqp_url)
        self.users: set[str] = set()

    def url(self, user: str | None = None, password: str | None = None) -> str:
        """The module's vhost as ``user`` (the admin when None)."""
        user, password = user or self.admin.user, password or self.admin.password
        netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{self.parts.hostname}:{self.parts.port or 5672}"
        return urlunsplit(self.parts._replace(netloc=netloc, path="/" + quote(self.vhost, safe="")))

    def url_of(self, role: str, prefix: str | None = None) -> str:
        return self.url(user_name(prefix or self.prefix, role), PASSWORDS[role])

    def bus(self, role: str, prefix: str | None = None) -> RabbitBus:
        return RabbitBus(self.url_of(role, prefix), prefix=prefix or self.prefix)


@pytest.fixture(scope="module")
def broker(amqp_url):
    asyncio.run(require_rabbitmq(amqp_url))
    b = Broker(amqp_url)
    try:
        b.api.call("GET", "/api/overview")
    except (OSError, ManagementError) as error:
        reason = (f"RabbitMQ's management API is not answering at {b.admin.management_url} ({error}): turn it on "
                  "with `rabbitmq-plugins enable rabbitmq_management` (.ci/run does)")
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    b.api.put(f"/api/vhosts/{b.vhost}", {})
    b.api.put(f"/api/permissions/{b.vhost}/{quote(b.admin.user, safe='')}",
              {"configure": ".*", "write": ".*", "read": ".*"})
    try:
        asyncio.run(create(b.url(), b.prefix, 5, PASSWORDS, b.admin.management_url))
        b.users |= {user_name(b.prefix, role) for role in PASSWORDS}
        yield b
    finally:
        for user in b.users:
            b.api.delete(f"/api/users/{quote(user, safe='')}")
        b.api.delete(f"/api/vhosts/{b.vhost}")


@pytest.fixture
async def buses(broker):
    started: list[RabbitBus] = []

    async def make(role: str, prefix: str | None = None) -> RabbitBus:
        bus = broker.bus(role, prefix)
        await bus.start()
        started.append(bus)
        return bus

    yield make
    for bus in started:
        await bus.close()


def command(game_id: str, text: str = "hello") -> CommandEnvelope:
    return CommandEnvelope(game_id=game_id, actor="alice", phase_id=3, command={"type": "confer", "text": text})


async def refused(what) -> str:
    """Runs ``what``; the broker must refuse it (ACCESS_REFUSED, 403). Returns the broker's words."""
    with pytest.raises(aiormq.exceptions.ChannelAccessRefused) as caught:
        await asyncio.wait_for(what(), TIMEOUT)
    assert "ACCESS_REFUSED" in str(caught.value)
    return str(caught.value)


async def test_a_gateways_command_reaches_the_engine_and_the_engines_events_reach_only_that_channels_gateway(buses):
    engine, telegram, email = await buses("engine"), await buses("telegram"), await buses("email")
    game = f"g-{uuid.uuid4().hex[:6]}"
    commands: list[str] = []
    by_telegram: list[str] = []
    by_email: list[str] = []
    await engine.consume_commands(lambda body: _append(commands, CommandEnvelope.model_validate_json(body)))
    await telegram.subscribe_events("telegram", "telegram.#", lambda e: _append(by_telegram, e))
    await email.subscribe_events("email", "email.#", lambda e: _append(by_email, e))

    await telegram.send_command(command(game, "from telegram"))
    await email.send_command(command(game, "from email"))
    await eventually(lambda: sorted(commands) == [f"{game}:from email", f"{game}:from telegram"],
                     "both gateways' commands reach the engine")

    await engine.publish_event(event(game), "telegram")
    await eventually(lambda: by_telegram == [f"{game}:command_rejected"], "the telegram gateway gets its event")
    await quiet()
    assert by_email == [], "another channel's event never reaches the email gateway"


async def test_the_engine_sends_commands_to_itself_as_its_scheduler_does(buses):
    engine = await buses("engine")
    game = f"g-{uuid.uuid4().hex[:6]}"
    commands: list[str] = []
    await engine.consume_commands(lambda body: _append(commands, CommandEnvelope.model_validate_json(body)))
    await engine.send_command(command(game, "timeout"))
    await eventually(lambda: commands == [f"{game}:timeout"], "the engine's own command is handled")


async def test_the_broker_refuses_a_gateway_publishing_an_event(buses):
    engine, email = await buses("engine"), await buses("email")
    game = f"g-{uuid.uuid4().hex[:6]}"
    by_email: list[str] = []
    await email.subscribe_events("email", "email.#", lambda e: _append(by_email, e))
    telegram = await buses("telegram")

    words = await refused(lambda: telegram.publish_event(event(game), "email"))
    assert f"{engine.topology.events_exchange_name}" in words
    await quiet()
    assert by_email == [], "no forged event reached a player"


async def test_the_broker_refuses_a_gateway_putting_an_event_straight_into_another_channels_queue(broker, buses):
    by_email: list[str] = []
    email = await buses("email")
    await email.subscribe_events("email", "email.#", lambda e: _append(by_email, e))
    async with await aio_pika.connect(broker.url_of("telegram")) as connection:
        channel = await connection.channel()
        forged = aio_pika.Message(event("forged").model_dump_json().encode())
        await refused(lambda: channel.default_exchange.publish(forged, routing_key=email.event_queue_name("email")))
    await quiet()
    assert by_email == []


async def test_the_broker_refuses_a_gateway_consuming_another_channels_event_queue(broker, buses):
    email = await buses("email")
    await email.subscribe_events("email", "email.#", lambda e: _append([], e))
    queue = email.event_queue_name("email")
    async with await aio_pika.connect(broker.url_of("telegram")) as connection:
        await refused(lambda: _consume(connection, queue))
    telegram = await buses("telegram")
    await refused(lambda: telegram.subscribe_events("email", "email.#", lambda e: _append([], e)))


async def test_the_broker_refuses_a_gateway_binding_its_own_queue_to_another_channels_events(broker, buses):
    telegram = await buses("telegram")
    await telegram.subscribe_events("telegram", "telegram.#", lambda e: _append([], e))
    async with await aio_pika.connect(broker.url_of("telegram")) as connection:
        channel = await connection.channel()
        underlay = await channel.get_underlay_channel()
        await refused(lambda: underlay.queue_bind(telegram.event_queue_name("telegram"),
                                                  telegram.topology.events_exchange_name, routing_key="email.#"))


async def test_the_broker_refuses_a_gateway_deleting_or_unbinding_what_the_engine_owns(broker, buses):
    engine = await buses("engine")
    async with await aio_pika.connect(broker.url_of("telegram")) as connection:
        names = engine.topology
        for attempt in (lambda ch: ch.queue_delete(names.commands_queue_name),
                        lambda ch: ch.queue_unbind(names.commands_queue_name, names.commands_exchange_name,
                                                   routing_key=COMMAND_ROUTING_KEY),
                        lambda ch: ch.exchange_delete(names.events_exchange_name),
                        lambda ch: ch.queue_delete(names.dead_queue_name)):
            underlay = await (await connection.channel()).get_underlay_channel()
            await refused(lambda attempt=attempt, underlay=underlay: attempt(underlay))


async def test_a_gateway_started_before_the_engine_ever_did_waits_and_then_starts(broker, buses):
    prefix = f"t{uuid.uuid4().hex[:8]}"  # users, but nothing declared yet
    ensure_users(broker.api, vhost=broker.vhost, prefix=prefix, passwords=PASSWORDS)
    broker.users |= {user_name(prefix, role) for role in PASSWORDS}
    with pytest.raises(TopologyMissing) as caught:
        await buses("telegram", prefix)
    assert isinstance(caught.value, ConnectionError), "start-up retries it, as an unreachable broker"
    assert f"{prefix}." in str(caught.value)

    await buses("engine", prefix)
    telegram = await buses("telegram", prefix)
    await telegram.send_command(command("waited"))  # the engine's queue takes it: not unroutable


def test_avalon_broker_users_run_again_changes_a_password_and_the_old_one_is_refused(broker, monkeypatch, capsys):
    prefix = f"t{uuid.uuid4().hex[:8]}"
    broker.users.add(user_name(prefix, "engine"))
    monkeypatch.setenv("AMQP_URL", broker.url())
    monkeypatch.setenv("BUS_PREFIX", prefix)
    monkeypatch.setenv("RABBITMQ_MANAGEMENT_URL", broker.admin.management_url)
    for role in broker_users.roles():
        monkeypatch.setenv(broker_users.password_variable(role), "")
    old, new = uuid.uuid4().hex, uuid.uuid4().hex
    for password in (old, new):
        monkeypatch.setenv("ENGINE_AMQP_PASSWORD", password)
        assert main(["broker-users"]) == 0
    out = capsys.readouterr().out
    assert f"{prefix}-engine in vhost {broker.vhost}" in out and f"{prefix}.*: declared" in out
    assert f"{prefix}-telegram" not in out, "no user for a role with no password"

    async def login(password: str) -> None:
        connection = await aio_pika.connect(broker.url(f"{prefix}-engine", password))
        await connection.close()

    asyncio.run(login(new))
    with pytest.raises(aiormq.exceptions.ProbableAuthenticationError):
        asyncio.run(login(old))


async def _consume(connection, queue: str) -> None:
    underlay = await (await connection.channel()).get_underlay_channel()
    await underlay.basic_consume(queue, lambda message: None)


async def _append(into: list[str], envelope) -> None:
    what = envelope.command.text if isinstance(envelope, CommandEnvelope) else envelope.event.type
    into.append(f"{envelope.game_id}:{what}")


async def test_the_engine_believes_a_gateway_only_for_its_own_channel_and_its_own_players(broker, buses, tmp_path):
    """The real engine service consumes as ``<prefix>-engine``; the Telegram gateway's user sends a
    game's commands. Its own player acting is applied; the same user claiming to be a mail player,
    the email channel or the scheduler is dead-lettered and changes nothing; and a publisher cannot
    claim another broker user (RabbitMQ itself refuses a ``user_id`` that is not the login's)."""
    from avalon.services.channels import channel_map
    from avalon.services.engine.service import EngineService
    from avalon.services.engine.store import Store

    engine_bus, telegram = await buses("engine"), await buses("telegram")
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}")
    engine = EngineService(store, engine_bus, channels=channel_map())
    await engine.start()
    game = f"g-{uuid.uuid4().hex[:6]}"

    def envelope(actor: str, body: dict, channel: str = "telegram") -> CommandEnvelope:
        return CommandEnvelope(game_id=game, actor=actor, channel=channel, command=body)

    try:
        opened = envelope("tg:1", {"type": "create_game", "options": {}})
        await telegram.send_command(opened)
        await eventually_seen(store, opened.message_id)
        forged = [envelope("mail:eve@example.org", {"type": "join"}, channel="email"),
                  envelope("mail:eve@example.org", {"type": "join"}),
                  envelope("tg:2", {"type": "join"}, channel="email"),
                  envelope("@scheduler", {"type": "phase_timed_out"}, channel="scheduler")]
        for command in forged:
            await telegram.send_command(command)
        honest = envelope("tg:2", {"type": "join"})
        await telegram.send_command(honest)
        await eventually_seen(store, honest.message_id)
        admin = RabbitBus(broker.url(), prefix=broker.prefix)  # the dead letters are the host's to read
        await admin.start()
        try:
            dead = [CommandEnvelope.model_validate_json(b).message_id for b in await dead_letters_of(admin, 4)]
        finally:
            await admin.close()
        assert sorted(dead) == sorted(c.message_id for c in forged)
        assert not await store.seen_many([c.message_id for c in forged])
        assert (await store.load(game)).state.players == ("tg:1", "tg:2")

        underlay = await (await telegram._link.connection.channel()).get_underlay_channel()
        with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed):
            props = aiormq.spec.Basic.Properties(user_id=user_name(broker.prefix, "engine"))
            await asyncio.wait_for(underlay.basic_publish(b"{}", exchange=telegram.topology.commands_exchange_name,
                                                          routing_key=COMMAND_ROUTING_KEY, properties=props), TIMEOUT)
    finally:
        await engine.stop()
        await store.close()


async def eventually_seen(store, message_id: str) -> None:
    for _ in range(int(TIMEOUT / 0.05)):
        if await store.seen(message_id):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"command {message_id} was not processed")


async def dead_letters_of(bus: RabbitBus, count: int) -> list[bytes]:
    found: list[bytes] = []
    for _ in range(int(TIMEOUT / 0.1)):
        found += await bus.dead_letters()
        if len(found) >= count:
            break
        await asyncio.sleep(0.1)
    return found
