"""The bus against a real RabbitMQ, and the same semantics on the in-process bus.

The tests parametrized over ``bus``/``make_bus`` run on both implementations;
the ones using ``rabbit_bus``/``make_rabbit_bus`` are about RabbitMQ alone
(connections, persistence, prefetch, single active consumer). A lost network
is simulated with a TCP proxy the test cuts, so it works with any broker
(local, container, CI service) and needs no broker-side tooling.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from typing import Callable
from urllib.parse import urlencode, urlsplit, urlunsplit

import aio_pika
import pytest

from avalon.shared.bus import PoisonMessage, Unroutable
from avalon.shared.protocol import AudienceModel, CommandEnvelope, CommandRejected, EventEnvelope, utcnow
from avalon.shared.game.events import AudienceKind

TIMEOUT = 10.0


# -- helpers --------------------------------------------------------------------------

def command(text: str = "hello", game_id: str = "g1") -> CommandEnvelope:
    return CommandEnvelope(game_id=game_id, actor="alice", phase_id=3, command={"type": "confer", "text": text})


def event(game_id: str = "g1", kind: AudienceKind = AudienceKind.PUBLIC, seq: int = 1) -> EventEnvelope:
    return EventEnvelope(
        message_id=str(uuid.uuid4()), game_id=game_id, seq=seq, occurred_at=utcnow(),
        audience=AudienceModel(kind=kind, players=("alice",) if kind is AudienceKind.PLAYERS else ()),
        event=CommandRejected(command_type="join", reason="malformed", message="nope"),
    )


async def eventually(check: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.02)


async def dead_letters(bus, count: int, timeout: float = TIMEOUT) -> list[bytes]:
    """Drain the dead letters until ``count`` have arrived (RabbitMQ dead-letters asynchronously)."""
    dead: list[bytes] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(dead) < count:
        dead += await bus.dead_letters()
        if len(dead) >= count:
            break
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"expected {count} dead letters, got {dead!r}")
        await asyncio.sleep(0.02)
    return dead


async def quiet(seconds: float = 0.3) -> None:
    """Give a wrong extra delivery time to show up before asserting it did not."""
    await asyncio.sleep(seconds)


# -- semantics both implementations keep ------------------------------------------------

async def test_a_command_round_trips_with_its_content_intact(bus):
    sent = command("naïve 👋 سلام \"quoted\" \\ back")
    received: list[bytes] = []

    async def handler(body: bytes) -> None:
        received.append(body)

    await bus.consume_commands(handler)
    await bus.send_command(sent)
    await eventually(lambda: received, "the command arrives")

    assert isinstance(received[0], bytes)
    assert CommandEnvelope.model_validate_json(received[0]) == sent
    await quiet(0.1)
    assert len(received) == 1  # acked: not delivered again


async def test_commands_are_delivered_in_the_order_sent(bus):
    sent = [command(f"#{i}", game_id=f"g{i % 3}") for i in range(60)]
    started: list[str] = []
    done: list[str] = []

    async def handler(body: bytes) -> None:
        envelope = CommandEnvelope.model_validate_json(body)
        started.append(envelope.message_id)  # before any await: the order handling starts in
        await asyncio.sleep(0.001 * (hash(envelope.message_id) % 5))
        done.append(envelope.message_id)

    await bus.consume_commands(handler)
    for envelope in sent:
        await bus.send_command(envelope)
    await eventually(lambda: len(done) == len(sent), "every command is handled")

    assert started == [e.message_id for e in sent]


async def test_a_handler_raising_poison_message_dead_letters_it_and_the_next_valid_command_is_still_handled(bus):
    poison, valid = command("poison"), command("valid")
    calls: list[str] = []

    async def handler(body: bytes) -> None:
        envelope = CommandEnvelope.model_validate_json(body)
        calls.append(envelope.command.text)
        if envelope.command.text == "poison":
            raise PoisonMessage("never handleable")

    await bus.consume_commands(handler)
    await bus.send_command(poison)
    await bus.send_command(valid)
    await eventually(lambda: "valid" in calls, "the valid command is handled")

    dead = await dead_letters(bus, 1)
    assert [CommandEnvelope.model_validate_json(b) for b in dead] == [poison]
    await quiet()
    assert calls == ["poison", "valid"]  # dead-lettered at once: tried exactly once
    assert await bus.dead_letters() == []


async def test_a_handler_that_always_fails_dead_letters_the_message_after_delivery_limit_attempts_and_the_next_command_is_served(make_bus):  # noqa: E501
    bus = await make_bus(delivery_limit=2)
    failing, fine = command("always fails"), command("fine")
    attempts: dict[str, int] = {}

    async def handler(body: bytes) -> None:
        text = CommandEnvelope.model_validate_json(body).command.text
        attempts[text] = attempts.get(text, 0) + 1
        if text == "always fails":
            raise RuntimeError("transient, forever")

    await bus.consume_commands(handler)
    await bus.send_command(failing)
    await bus.send_command(fine)

    dead = await dead_letters(bus, 1)
    assert [CommandEnvelope.model_validate_json(b) for b in dead] == [failing]
    await eventually(lambda: attempts.get("fine") == 1, "the next command is served")
    await quiet()
    assert attempts == {"always fails": 2, "fine": 1}
    assert await bus.dead_letters() == []


async def test_garbage_bytes_sent_raw_reach_the_handler_as_bytes(bus):
    garbage = b"\x00\xff{not json at all"
    received: list[bytes] = []

    async def handler(body: bytes) -> None:
        received.append(body)
        try:
            CommandEnvelope.model_validate_json(body)
        except ValueError as e:
            raise PoisonMessage("malformed") from e  # the handler decides it is poison

    await bus.consume_commands(handler)
    await bus.send_raw_command(garbage)

    assert await dead_letters(bus, 1) == [garbage]
    assert received == [garbage]
    assert type(received[0]) is bytes


async def test_publishing_an_event_with_no_bound_queue_raises_unroutable(bus):
    with pytest.raises(Unroutable):
        await bus.publish_event(event(), "telegram")


async def test_publishing_an_event_no_subscribers_pattern_matches_raises_unroutable(bus):
    async def handler(envelope: EventEnvelope) -> None: ...

    await bus.subscribe_events("telegram", "telegram.#", handler)
    await bus.publish_event(event(), "telegram")
    with pytest.raises(Unroutable):
        await bus.publish_event(event(), "email")


async def test_events_reach_only_subscribers_whose_pattern_matches(bus):
    telegram: list[EventEnvelope] = []
    email: list[EventEnvelope] = []
    players: list[EventEnvelope] = []

    def to(inbox: list[EventEnvelope]):
        async def handler(envelope: EventEnvelope) -> None:
            inbox.append(envelope)
        return handler

    await bus.subscribe_events("telegram", "telegram.#", to(telegram))
    await bus.subscribe_events("email", "email.#", to(email))
    await bus.subscribe_events("players-anywhere", "*.players.*", to(players))
    for_telegram = event("g1", AudienceKind.PUBLIC, 1)
    for_email = event("g.2", AudienceKind.PLAYERS, 2)  # a dot in the game id stays one word
    await bus.publish_event(for_telegram, "telegram")
    await bus.publish_event(for_email, "email")
    await eventually(lambda: telegram and email and players, "every subscriber has its event")

    await quiet(0.1)
    assert telegram == [for_telegram]
    assert email == [for_email]
    assert players == [for_email]


async def test_an_event_whose_handler_fails_is_delivered_again(bus):
    published = event()
    calls: list[EventEnvelope] = []

    async def flaky(envelope: EventEnvelope) -> None:
        calls.append(envelope)
        if len(calls) == 1:
            raise RuntimeError("transient")

    await bus.subscribe_events("flaky", "#", flaky)
    await bus.publish_event(published, "telegram")
    await eventually(lambda: len(calls) == 2, "the event is delivered again")
    await quiet()
    assert calls == [published, published]


# -- RabbitMQ only -------------------------------------------------------------------------

async def test_a_message_unacked_when_the_consumers_connection_dies_is_redelivered_to_a_new_consumer(make_rabbit_bus):
    first = await make_rabbit_bus(shutdown_grace=0.05)
    sent = command("in flight")
    picked_up = asyncio.Event()

    async def stuck(body: bytes) -> None:
        picked_up.set()
        await asyncio.Event().wait()  # never returns: never acked

    await first.consume_commands(stuck)
    await first.send_command(sent)
    await asyncio.wait_for(picked_up.wait(), TIMEOUT)
    await first.close()

    second = await make_rabbit_bus()
    received: list[bytes] = []

    async def handler(body: bytes) -> None:
        received.append(body)

    await second.consume_commands(handler)
    await eventually(lambda: received, "the message is delivered again")
    assert CommandEnvelope.model_validate_json(received[0]) == sent
    assert await second.dead_letters() == []


async def test_a_second_consumer_waits_while_the_first_is_active_then_takes_over(make_rabbit_bus):
    first, second = await make_rabbit_bus(shutdown_grace=0.5), await make_rabbit_bus()
    by_first: list[str] = []
    by_second: list[str] = []

    def into(seen: list[str]):
        async def handler(body: bytes) -> None:
            seen.append(CommandEnvelope.model_validate_json(body).command.text)
        return handler

    await first.consume_commands(into(by_first))
    await second.consume_commands(into(by_second))
    for i in range(10):
        await first.send_command(command(f"a{i}"))
    await eventually(lambda: len(by_first) == 10, "the active consumer has them all")
    assert by_second == []

    await first.close()
    for i in range(3):
        await second.send_command(command(f"b{i}"))
    await eventually(lambda: len(by_second) == 3, "the waiting consumer takes over")
    assert by_second == ["b0", "b1", "b2"]


async def test_a_partition_left_without_its_consumer_after_a_reconnect_is_subscribed_again(make_rabbit_bus):
    # what a cluster node stopping can leave: the restored consume refused (the queue's leader moving)
    # while the new connection stays up; here the consumer is cancelled on its channel instead
    bus = await make_rabbit_bus()
    seen: list[str] = []

    async def handler(body: bytes) -> None:
        seen.append(CommandEnvelope.model_validate_json(body).command.text)

    await bus.consume_commands(handler)
    await bus.send_command(command("before"))
    await eventually(lambda: seen == ["before"], "served")
    sub = bus.commands._subscriptions[0]
    underlay = await sub.channel.get_underlay_channel()
    await underlay.basic_cancel(next(iter(underlay.consumers)))
    await bus.send_command(command("after"))
    await eventually(lambda: seen == ["before", "after"], "served again by a new subscription", timeout=15)
    assert bus.commands.revived == 1


async def test_at_most_prefetch_commands_are_handled_at_once_and_they_start_in_arrival_order(rabbit_bus):
    release = asyncio.Event()
    running = 0
    most = 0
    started: list[str] = []

    async def handler(body: bytes) -> None:
        nonlocal running, most
        started.append(CommandEnvelope.model_validate_json(body).command.text)
        running += 1
        most = max(most, running)
        try:
            await release.wait()
        finally:
            running -= 1

    await rabbit_bus.consume_commands(handler, prefetch=3)
    for i in range(8):
        await rabbit_bus.send_command(command(f"#{i}"))
    await eventually(lambda: len(started) == 3, "prefetch-many handlers run")
    await quiet(0.2)
    assert most == 3 and started == ["#0", "#1", "#2"]  # in flight at once, not one by one

    release.set()
    await eventually(lambda: len(started) == 8 and running == 0, "the rest are handled")
    assert started == [f"#{i}" for i in range(8)]
    assert most == 3


async def test_every_message_is_persistent_json_with_its_envelopes_message_id(rabbit_bus, amqp_url):
    sent, published = command(), event()
    async with await aio_pika.connect(amqp_url) as connection:
        channel = await connection.channel()
        tap = await channel.declare_queue(exclusive=True)  # server-named, gone with the connection
        await tap.bind(rabbit_bus.topology.events_exchange_name, routing_key="#")
        await rabbit_bus.send_command(sent)
        await rabbit_bus.publish_event(published, "email")

        # basic.get is refused on a quorum queue with single active consumer: consume instead
        commands = await channel.get_queue(rabbit_bus.topology.commands_queue_name, ensure=False)
        taken: asyncio.Queue[aio_pika.abc.AbstractIncomingMessage] = asyncio.Queue()
        await commands.consume(taken.put)
        messages = [await asyncio.wait_for(taken.get(), TIMEOUT), await _get(tap)]
        for message, envelope in zip(messages, [sent, published]):
            assert message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
            assert message.content_type == "application/json"
            assert message.message_id == envelope.message_id
            assert message.body == envelope.model_dump_json().encode()
        assert messages[1].routing_key == "email.public.g1"
        for message in messages:
            await message.ack()


async def _get(queue) -> aio_pika.abc.AbstractIncomingMessage:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while (message := await queue.get(fail=False)) is None:
        assert asyncio.get_running_loop().time() < deadline, f"nothing arrived on {queue.name}"
        await asyncio.sleep(0.02)
    return message


async def test_an_event_that_does_not_parse_is_dead_lettered_without_reaching_the_handler(rabbit_bus, amqp_url):
    handled: list[EventEnvelope] = []

    async def handler(envelope: EventEnvelope) -> None:
        handled.append(envelope)

    await rabbit_bus.subscribe_events("telegram", "telegram.#", handler)
    async with await aio_pika.connect(amqp_url) as connection:
        channel = await connection.channel()
        exchange = await channel.get_exchange(rabbit_bus.topology.events_exchange_name, ensure=False)
        await exchange.publish(aio_pika.Message(b'{"v": 1, "what": "no"}'), routing_key="telegram.public.g1")
    good = event()
    await rabbit_bus.publish_event(good, "telegram")

    assert await dead_letters(rabbit_bus, 1) == [b'{"v": 1, "what": "no"}']
    await eventually(lambda: handled, "the next event is handled")
    assert handled == [good]


async def test_a_command_no_queue_takes_raises_unroutable(rabbit_bus, amqp_url):
    async with await aio_pika.connect(amqp_url) as connection:
        channel = await connection.channel()
        await channel.queue_delete(rabbit_bus.topology.commands_queue_name, if_unused=False, if_empty=False)
    with pytest.raises(Unroutable):
        await rabbit_bus.send_command(command())


class Proxy:
    """A TCP proxy to the broker whose connections the test can cut, like a network failure."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.url = url
        self.target = (parts.hostname or "127.0.0.1", parts.port or 5672)
        self.links: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    async def start(self) -> "Proxy":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    def url_through(self, **query: object) -> str:
        port = self.server.sockets[0].getsockname()[1]
        parts = urlsplit(self.url)
        auth = parts.netloc.rpartition("@")[0]
        netloc = (auth + "@" if auth else "") + f"127.0.0.1:{port}"
        return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query)))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.links |= {writer, up_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self.links -= {writer, up_writer}

    def cut(self) -> None:
        """Drop every connection through the proxy at once, both ways (no AMQP close handshake)."""
        for link in list(self.links):
            link.transport.abort()
        self.links.clear()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        self.cut()


@pytest.fixture
async def proxy(amqp_url):
    proxy = await Proxy(amqp_url).start()
    yield proxy
    await proxy.close()


async def test_after_the_connection_drops_mid_handler_the_bus_reconnects_gets_the_message_again_and_carries_on(
    proxy, make_rabbit_bus,
):
    bus = await make_rabbit_bus(via=proxy.url_through(reconnect_interval=0.1))
    first_try = asyncio.Event()
    let_go = asyncio.Event()
    handled: list[str] = []

    async def handler(body: bytes) -> None:
        text = CommandEnvelope.model_validate_json(body).command.text
        if text == "in flight" and not first_try.is_set():
            first_try.set()
            await let_go.wait()  # still running when its connection dies; its ack then goes nowhere
        handled.append(text)

    await bus.consume_commands(handler)
    await bus.send_command(command("in flight"))
    await asyncio.wait_for(first_try.wait(), TIMEOUT)

    proxy.cut()
    await eventually(lambda: handled == ["in flight"], "the unacked command is delivered again after reconnecting")
    let_go.set()  # the first attempt finishes; acking on the dead channel is only logged
    await bus.send_command(command("after"))  # publishing works again too
    await eventually(lambda: handled[-1:] == ["after"], "a command sent after reconnecting is handled")
    await quiet()
    assert sorted(handled) == ["after", "in flight", "in flight"]
    assert await bus.dead_letters() == []
    await bus.close()


async def test_events_whose_handlers_finish_after_the_connection_dropped_do_not_hold_back_the_acks_after_it(
    proxy, make_rabbit_bus, caplog,
):
    """A subscription's handlers still running when the connection drops (a gateway waiting on its
    database, the players of the compose cluster test waiting to publish) finish on a channel that is
    gone: the broker has requeued their events, and nothing is left to settle. They must not stand in
    the way of the acknowledgements of what the new channel delivered, else the broker, at the
    prefetch limit, delivers nothing more and the subscription stalls for good."""
    bus = await make_rabbit_bus(via=proxy.url_through(reconnect_interval=0.1), game_prefetch=4)
    held: set[int] = set()
    let_go = asyncio.Event()
    handled: list[int] = []

    async def handler(envelope: EventEnvelope) -> None:
        if envelope.seq <= 4 and envelope.seq not in held:
            held.add(envelope.seq)
            await let_go.wait()  # still running when its channel dies
        handled.append(envelope.seq)

    await bus.subscribe_events("held", "test.#", handler, by_game=True)  # each game's events side by side
    for seq in range(1, 5):
        await bus.publish_event(event(f"g{seq}", seq=seq), "test")
    await eventually(lambda: held == {1, 2, 3, 4}, "the first four events in hand")
    with caplog.at_level("INFO", logger="avalon.shared.bus.rabbit"):
        proxy.cut()
        await asyncio.sleep(1)  # reconnected: the four are delivered again, each waiting for its game's first try
        let_go.set()  # the first attempts finish, on the channel that is gone
        await eventually(lambda: sorted(handled) == [1, 1, 2, 2, 3, 3, 4, 4], "the four handled twice")
        for seq in range(5, 21):  # four times the prefetch
            await bus.publish_event(event(f"g{seq}", seq=seq), "test")
        await eventually(lambda: sorted(set(handled)) == list(range(1, 21)), "every later event handled")
    records = [r for r in caplog.records if r.name.startswith("avalon.shared.bus") or r.exc_info]
    assert not [r for r in records if r.levelname == "ERROR" or r.exc_info], [r.getMessage() for r in records]
    await bus.close()


@pytest.fixture
async def stalling_proxy(amqp_url):
    """The fault suite's proxy to the broker: it can also hold everything both ways (``stall()``)."""
    from tests.faults.world import TcpProxy

    parts = urlsplit(amqp_url)
    proxy = await TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5672).start()
    auth = parts.netloc.rpartition("@")[0]
    proxy.url = urlunsplit(parts._replace(netloc=(auth + "@" if auth else "") + f"127.0.0.1:{proxy.port}",
                                          query="reconnect_interval=0.1"))
    yield proxy
    await proxy.close()


async def test_a_command_in_flight_when_the_connection_drops_is_sent_again_once_it_is_back(
    stalling_proxy, make_rabbit_bus, caplog,
):
    """A gateway sends a player's vote as its connection stalls and then drops (a RabbitMQ node going
    away): ``send_command`` returns once the command is on the broker after the reconnection, instead
    of raising and leaving the gateway to drop the press; the engine gets it once."""
    proxy = stalling_proxy
    sender = await make_rabbit_bus(via=proxy.url, publish_timeout=10)
    engine = await make_rabbit_bus()
    got: list[str] = []

    async def handler(body: bytes) -> None:
        got.append(CommandEnvelope.model_validate_json(body).message_id)

    await engine.consume_commands(handler)
    await sender.send_command(command("before"))
    await eventually(lambda: len(got) == 1, "the first command handled")
    vote = command("the vote")
    with caplog.at_level("INFO", logger="avalon.shared.bus.rabbit"):
        proxy.stall()  # the publish leaves, and neither it nor the broker's confirm gets through
        sending = asyncio.ensure_future(sender.send_command(vote))
        await asyncio.sleep(0.5)
        assert not sending.done()
        proxy.restore()  # the stalled connection is cut: the publish in flight fails with it
        await asyncio.wait_for(sending, TIMEOUT)  # no error: sent again once the connection was back
    await eventually(lambda: got[1:] == [vote.message_id], "the vote handled")
    await quiet(0.5)
    assert got[1:] == [vote.message_id]
    said = [r.getMessage() for r in caplog.records if r.name == "avalon.shared.bus.rabbit"]
    assert any("connection lost" in m for m in said) and any("sent again" in m for m in said), said


async def test_a_batch_of_events_arrives_in_order_as_single_envelopes(make_bus):
    from datetime import datetime, timezone

    from avalon.shared.protocol import EventEnvelope

    bus = await make_bus()
    got = []

    async def record(envelope):
        got.append(envelope.seq)
    await bus.subscribe_events("batch", "telegram.#", record)
    envelopes = [EventEnvelope(message_id=f"g:{i}", game_id="g", seq=i, occurred_at=datetime.now(timezone.utc),
                               audience={"kind": "public" if i % 3 else "players", "players": [] if i % 3 else ["a"]},
                               event={"type": "player_joined", "player": "a"}) for i in range(1, 8)]
    await bus.publish_events(envelopes, "telegram")
    for _ in range(200):
        if len(got) == 7:
            break
        await asyncio.sleep(0.02)
    assert got == list(range(1, 8))


# -- a batch of several games' events, bulk acknowledgements (RabbitMQ) --------------------------

async def _nothing_delivered_again(make_rabbit_bus) -> None:
    """A new consumer on the same queues gets no command again, and nothing was dead-lettered."""
    second = await make_rabbit_bus()
    again: list[bytes] = []

    async def record(body: bytes) -> None:
        again.append(body)

    await second.consume_commands(record)
    await quiet(0.5)
    assert again == []
    assert await second.dead_letters() == []


def _record(inbox: list[EventEnvelope]):
    async def handler(envelope: EventEnvelope) -> None:
        inbox.append(envelope)
    return handler


def _games_and_seqs(body: bytes) -> list[tuple[str, int]]:
    """The (game, seq) of each event a message carries: one envelope or a JSON array of them."""
    data = json.loads(body)
    return [(e["game_id"], e["seq"]) for e in (data if isinstance(data, list) else [data])]


async def test_events_of_several_games_published_at_once_share_messages_and_keep_each_games_order(
    rabbit_bus, amqp_url,
):
    public, players = AudienceKind.PUBLIC, AudienceKind.PLAYERS
    audiences = {"g1": [public, public, players, public], "g2": [public, players, players, public],
                 "g3": [players, public]}
    per_game = {g: [event(g, kind, seq) for seq, kind in enumerate(kinds, 1)] for g, kinds in audiences.items()}
    # as a batch of commands of three games produces them: the games interleaved
    interleaved = [e for column in itertools.zip_longest(*per_game.values()) for e in column if e is not None]
    everything: list[EventEnvelope] = []
    private: list[EventEnvelope] = []
    await rabbit_bus.subscribe_events("telegram", "telegram.#", _record(everything))
    await rabbit_bus.subscribe_events("private", "*.players.*", _record(private))
    async with await aio_pika.connect(amqp_url) as connection:
        channel = await connection.channel()
        tap = await channel.declare_queue(exclusive=True)  # sees the broker messages themselves
        await tap.bind(rabbit_bus.topology.events_exchange_name, routing_key="#")
        messages: list[tuple[str, list[tuple[str, int]]]] = []

        async def take(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            messages.append((message.routing_key, _games_and_seqs(message.body)))

        await tap.consume(take, no_ack=True)
        await rabbit_bus.publish_events(interleaved, "telegram")
        await eventually(lambda: len(everything) == 10 and len(private) == 4, "every event is handled")
        await eventually(lambda: sum(len(events) for _, events in messages) == 10, "the tap has every message")
        await quiet(0.1)

    for game, sent in per_game.items():  # each game's events arrive whole and in its order
        assert [e for e in everything if e.game_id == game] == sent
        assert [e for e in private if e.game_id == game] == [e for e in sent if e.audience.kind is players]
    assert len(everything) == 10 and len(private) == 4  # nothing twice
    # fewer messages than events: the k-th run of one audience kind of every game shares a message
    assert sorted((key, sorted(events)) for key, events in messages) == sorted([
        ("telegram.public._", [("g1", 1), ("g1", 2), ("g2", 1)]),
        ("telegram.players.g3", [("g3", 1)]),
        ("telegram.players._", [("g1", 3), ("g2", 2), ("g2", 3)]),
        ("telegram.public.g3", [("g3", 2)]),
        ("telegram.public._", [("g1", 4), ("g2", 4)]),
    ])
    for key, events in messages:  # `_` exactly when a message carries several games
        assert (key.rsplit(".", 1)[1] == "_") == (len({game for game, _ in events}) > 1)
    arrived = [pair for _, events in messages for pair in events]
    for game in per_game:  # on one queue, each game's messages come in its order too
        assert [seq for g, seq in arrived if g == game] == list(range(1, len(per_game[game]) + 1))


async def _consume_then_send(bus, handler, sent: list[CommandEnvelope]) -> None:
    """Start consuming with room for the whole run, then send it."""
    await bus.consume_commands(handler, prefetch=64)
    for envelope in sent:
        await bus.send_command(envelope)


async def test_commands_finishing_out_of_order_are_all_acknowledged_and_not_delivered_again(make_rabbit_bus):
    first = await make_rabbit_bus()
    sent = [command(f"#{i}") for i in range(20)]
    done: list[str] = []
    others_done = asyncio.Event()

    async def handler(body: bytes) -> None:
        text = CommandEnvelope.model_validate_json(body).command.text
        if text == "#0":
            await others_done.wait()  # the oldest delivery finishes last
        done.append(text)
        if len(done) == len(sent) - 1:
            others_done.set()

    await _consume_then_send(first, handler, sent)
    await eventually(lambda: len(done) == len(sent), "every command is handled")
    assert done[-1] == "#0"
    await first.close()

    await _nothing_delivered_again(make_rabbit_bus)  # every delivery was acknowledged before the close


async def test_a_command_abandoned_at_shutdown_is_delivered_again_but_the_ones_handled_after_it_are_not(
    make_rabbit_bus,
):
    first = await make_rabbit_bus(shutdown_grace=0.1)
    sent = [command(f"#{i}") for i in range(10)]
    done: list[str] = []
    stuck = asyncio.Event()

    async def handler(body: bytes) -> None:
        text = CommandEnvelope.model_validate_json(body).command.text
        if text == "#0":
            stuck.set()
            await asyncio.Event().wait()  # never finishes: cancelled at shutdown, never acknowledged
        done.append(text)

    await _consume_then_send(first, handler, sent)
    await asyncio.wait_for(stuck.wait(), TIMEOUT)
    await eventually(lambda: len(done) == 9, "the commands after the stuck one are handled")
    await first.close()

    second = await make_rabbit_bus()
    again: list[str] = []

    async def record(body: bytes) -> None:
        again.append(CommandEnvelope.model_validate_json(body).command.text)

    await second.consume_commands(record)
    await eventually(lambda: again, "the abandoned command is delivered again")
    await quiet(0.5)
    assert again == ["#0"]  # no acknowledgement of a later delivery covered it; the others stay acked


async def test_a_poison_command_amid_a_run_is_dead_lettered_at_once_and_the_rest_are_acknowledged(make_rabbit_bus):
    first = await make_rabbit_bus()
    sent = [command(f"#{i}") for i in range(10)]
    calls: list[str] = []
    release = asyncio.Event()

    async def handler(body: bytes) -> None:
        text = CommandEnvelope.model_validate_json(body).command.text
        calls.append(text)
        if text == "#0":
            await release.wait()  # the oldest delivery is still running while the others settle
        elif text == "#4":
            raise PoisonMessage("never handleable")
        elif text == "#7" and calls.count("#7") == 1:
            raise RuntimeError("transient")  # rejected and delivered again

    await _consume_then_send(first, handler, sent)
    # the rejection does not wait for the acknowledgements held back behind #0
    assert [CommandEnvelope.model_validate_json(b) for b in await dead_letters(first, 1)] == [sent[4]]
    await eventually(lambda: calls.count("#7") == 2, "the failed command is delivered again")
    release.set()
    await eventually(lambda: len(calls) == 11, "every command is handled")
    await quiet()
    assert sorted(calls) == sorted([f"#{i}" for i in range(10)] + ["#7"])
    await first.close()

    await _nothing_delivered_again(make_rabbit_bus)


async def test_events_handled_are_acknowledged_and_a_new_subscriber_of_the_same_queue_gets_none_again(
    make_rabbit_bus,
):
    first = await make_rabbit_bus()
    handled: list[EventEnvelope] = []
    await first.subscribe_events("telegram", "telegram.#", _record(handled))
    sent = [event("g1", AudienceKind.PUBLIC, seq) for seq in range(1, 31)]
    for envelope in sent:
        await first.publish_event(envelope, "telegram")
    await eventually(lambda: len(handled) == len(sent), "every event is handled")
    await first.close()

    second = await make_rabbit_bus()
    again: list[EventEnvelope] = []
    await second.subscribe_events("telegram", "telegram.#", _record(again))
    await quiet(0.5)
    assert handled == sent
    assert again == []


async def test_a_stuck_subscription_does_not_hold_back_another_subscriptions_acknowledgements(make_rabbit_bus):
    """Bulk acks are per channel: each subscription has its own, so a subscription stuck on an event
    neither delays the others' acks nor gets its own deliveries acknowledged by them."""
    first = await make_rabbit_bus(shutdown_grace=0.2)
    release = asyncio.Event()
    stuck_on: list[EventEnvelope] = []

    async def stuck(envelope: EventEnvelope) -> None:
        stuck_on.append(envelope)
        await release.wait()

    fast: list[EventEnvelope] = []
    await first.subscribe_events("email", "email.#", stuck)
    await first.subscribe_events("telegram", "telegram.#", _record(fast))
    for seq in range(1, 21):  # interleaved deliveries to both subscriptions
        await first.publish_event(event("g1", AudienceKind.PUBLIC, seq), "email")
        await first.publish_event(event("g1", AudienceKind.PUBLIC, seq), "telegram")
    await eventually(lambda: len(fast) == 20 and stuck_on, "the fast subscription handled everything")
    await first.close()  # the stuck handler is cancelled: its events stay unacknowledged

    second = await make_rabbit_bus()
    again_fast: list[EventEnvelope] = []
    again_stuck: list[EventEnvelope] = []
    await second.subscribe_events("telegram", "telegram.#", _record(again_fast))
    await second.subscribe_events("email", "email.#", _record(again_stuck))
    await eventually(lambda: len(again_stuck) == 20, "every event of the stuck subscription comes again")
    await quiet(0.3)
    assert again_fast == [], "the fast subscription's events were acknowledged"
    assert [e.seq for e in again_stuck] == list(range(1, 21))


async def test_commands_in_flight_when_the_broker_connection_closes_are_one_log_line_not_a_traceback_each(
    proxy, make_rabbit_bus, caplog,
):
    bus = await make_rabbit_bus(via=proxy.url_through(reconnect_interval=0.1))
    started, handled = asyncio.Event(), []
    hold = asyncio.Event()

    async def handler(body: bytes) -> None:
        text = CommandEnvelope.model_validate_json(body).command.text
        if not hold.is_set():
            started.set()
            await asyncio.sleep(0.3)
            raise ConnectionError("the broker connection is gone")  # as a publish fails in a close
        handled.append(text)

    await bus.consume_commands(handler)
    for n in range(10):
        await bus.send_command(command(f"c{n}"))
    await asyncio.wait_for(started.wait(), TIMEOUT)
    with caplog.at_level("INFO", logger="avalon.shared.bus.rabbit"):
        proxy.cut()
        await asyncio.sleep(0.5)
        hold.set()
        await eventually(lambda: len(set(handled)) == 10, "every command handled once the broker is back")
    records = [r for r in caplog.records if r.name == "avalon.shared.bus.rabbit"]
    assert not [r for r in records if r.levelname == "ERROR" or r.exc_info], [r.getMessage() for r in records]
    lost = [r for r in records if "connection lost" in r.getMessage()]
    assert len(lost) == 1, [r.getMessage() for r in records]
    await bus.close()


async def test_an_event_handler_waiting_for_an_unreachable_database_keeps_its_events(make_rabbit_bus, caplog):
    """A gateway's handler writes each event to PostgreSQL; the database is unreachable for 2 s (a
    proxy refuses every connection). The events wait, unacknowledged, and are handled once it answers:
    none is dead-lettered after five quick redeliveries (which is what a plain reject did), the order
    holds, and the bus says so in one line each way."""
    import asyncpg

    from tests.faults.world import TcpProxy
    from tests.integration.engine_support import PG_ADMIN

    proxy = await TcpProxy("127.0.0.1", 5432).start()
    dsn = PG_ADMIN.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
    table = f"events_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(PG_ADMIN)
    await admin.execute(f"CREATE TABLE {table} (seq int)")
    bus = await make_rabbit_bus()

    async def handler(envelope: EventEnvelope) -> None:
        conn = await asyncpg.connect(dsn, timeout=5)
        try:
            await conn.execute(f"INSERT INTO {table} VALUES ($1)", envelope.seq)
        finally:
            await conn.close()

    try:
        with caplog.at_level("INFO", logger="avalon.shared.bus.rabbit"):
            proxy.refuse()
            await bus.subscribe_events("db-wait", "#", handler)
            for seq in range(1, 21):
                await bus.publish_event(event(seq=seq), "test")
            await asyncio.sleep(2)
            proxy.restore()

            async def handled() -> list[int]:
                return [row[0] for row in await admin.fetch(f"SELECT seq FROM {table}")]

            deadline = asyncio.get_running_loop().time() + 30
            while len(await handled()) < 20 and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.1)
            assert await handled() == list(range(1, 21))
        assert await bus.dead_letters() == []
        said = [r.getMessage() for r in caplog.records if r.name == "avalon.shared.bus.rabbit"]
        assert len([m for m in said if "database unreachable" in m]) == 1, said
        assert len([m for m in said if "database back" in m]) == 1, said
        assert not [r for r in caplog.records if r.name == "avalon.shared.bus.rabbit" and r.levelname == "ERROR"], said
    finally:
        await admin.execute(f"DROP TABLE {table}")
        await admin.close()
        await proxy.close()
