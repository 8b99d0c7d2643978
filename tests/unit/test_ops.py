"""Operators' endpoints: readiness, /healthz /readyz /metrics over real HTTP, and the sender's counts."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiogram.exceptions import TelegramBadRequest, TelegramForbiddenError, TelegramNetworkError
from prometheus_client.parser import text_string_to_metric_families

from avalon.shared import ops
from avalon.shared.ops import Readiness, parse_listen, serve_ops
from avalon.services.telegram_gateway.sender import Limits, Sender


def metric_values(text: str) -> dict[tuple[str, tuple], float]:
    """The samples of a /metrics page: (name, sorted labels) -> value."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.fixture
async def served():
    """An ops server on a free port of 127.0.0.1 with its own Readiness, and an HTTP client."""
    readiness = Readiness()
    server = await serve_ops("127.0.0.1:0", readiness)
    async with aiohttp.ClientSession(base_url=server.url) as client:
        yield readiness, client
    await server.close()


# -- readiness -----------------------------------------------------------------------------

def test_a_process_with_no_component_registered_is_not_ready():
    assert not Readiness().is_ready()


def test_a_registered_component_is_not_ready_until_it_says_so():
    readiness = Readiness()
    readiness.register("engine")
    assert readiness.not_ready() == {"engine": "starting"}
    readiness.set_ready("engine")
    assert readiness.is_ready() and readiness.not_ready() == {}


def test_the_process_is_ready_only_when_every_component_is():
    readiness = Readiness()
    readiness.register("engine", ready=True)
    readiness.register("bus")
    readiness.set_not_ready("bus", "reconnecting to the broker")
    assert not readiness.is_ready()
    assert readiness.status() == {"engine": "ready", "bus": "reconnecting to the broker"}
    readiness.set_ready("bus")
    assert readiness.is_ready()
    readiness.set_not_ready("engine", "stopping")
    assert readiness.not_ready() == {"engine": "stopping"}


def test_setting_an_unregistered_component_registers_it_and_unregistering_forgets_it():
    readiness = Readiness()
    readiness.set_not_ready("database", "migrating")
    assert readiness.names == ["database"] and not readiness.is_ready()
    readiness.set("telegram", True)
    readiness.unregister("database")
    assert readiness.names == ["telegram"] and readiness.is_ready()


def test_a_component_with_a_check_is_asked_each_time_and_a_failing_check_is_its_reason():
    answers = iter([None, "no connection", True])
    readiness = Readiness()
    readiness.register("bus", check=lambda: next(answers))
    assert readiness.is_ready()
    assert readiness.not_ready() == {"bus": "no connection"}
    assert readiness.is_ready()

    def broken():
        raise OSError("socket closed")

    readiness.unregister("bus")
    readiness.register("database", check=broken)
    assert readiness.not_ready() == {"database": "OSError: socket closed"}


def test_the_module_readiness_mirrors_its_components_in_a_gauge():
    ops.readiness.register("unit-test-component")
    try:
        assert ops.sample("avalon_component_ready", component="unit-test-component") == 0
        ops.readiness.set_ready("unit-test-component")
        assert ops.sample("avalon_component_ready", component="unit-test-component") == 1
    finally:
        ops.readiness.unregister("unit-test-component")
    assert ops.REGISTRY.get_sample_value("avalon_component_ready", {"component": "unit-test-component"}) is None


# -- the listen address -------------------------------------------------------------------------

@pytest.mark.parametrize("listen, address", [
    ("0.0.0.0:9100", ("0.0.0.0", 9100)),
    ("127.0.0.1:0", ("127.0.0.1", 0)),
    (":9100", ("0.0.0.0", 9100)),
    ("9100", ("0.0.0.0", 9100)),
    ("[::1]:9100", ("::1", 9100)),
    ("", None),
    ("off", None),
    ("OFF", None),
    (None, None),
])
def test_a_listen_address_is_host_and_port_and_empty_or_off_disables(listen, address):
    assert parse_listen(listen) == address


@pytest.mark.parametrize("listen", ["localhost:http", "0.0.0.0:70000", "nonsense"])
def test_a_listen_address_that_is_no_address_is_refused_with_what_is_expected(listen):
    with pytest.raises(ValueError, match="host:port"  if listen != "0.0.0.0:70000" else "out of range"):
        parse_listen(listen)


async def test_an_ops_server_that_is_off_serves_nothing_and_closes_quietly():
    for listen in ("", "off"):
        server = await serve_ops(listen, Readiness())
        assert not server.enabled and server.port is None and server.url is None
        await server.close()


# -- over HTTP --------------------------------------------------------------------------------

async def test_healthz_answers_200_while_the_process_runs(served):
    _, client = served
    async with client.get("/healthz") as response:
        assert response.status == 200
        assert (await response.text()).strip() == "ok"


async def test_readyz_is_503_naming_what_is_not_ready_then_200_once_everything_is(served):
    readiness, client = served
    async with client.get("/readyz") as response:
        assert response.status == 503, "nothing registered yet"
        assert "no component registered" in (await response.json())["not_ready"]["process"]
    readiness.register("engine", ready=True)
    readiness.register("bus")
    readiness.set_not_ready("bus", "connecting")
    async with client.get("/readyz") as response:
        body = await response.json()
        assert response.status == 503
        assert body["ready"] is False and body["not_ready"] == {"bus": "connecting"}
        assert body["components"] == {"engine": "ready", "bus": "connecting"}
    readiness.set_ready("bus")
    async with client.get("/readyz") as response:
        body = await response.json()
        assert response.status == 200
        assert body == {"ready": True, "components": {"engine": "ready", "bus": "ready"}}


async def test_metrics_is_the_prometheus_text_format_with_every_avalon_metric(served):
    _, client = served
    async with client.get("/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = await response.text()
    families = {family.name for family in text_string_to_metric_families(text)}
    assert {"avalon_commands", "avalon_events_published", "avalon_outbox_depth", "avalon_dead_messages",
            "avalon_deliveries", "avalon_errors", "avalon_component_ready"} <= families
    values = metric_values(text)
    for result in ("applied", "rejected", "duplicate", "ignored"):
        assert ("avalon_commands_total", (("result", result),)) in values, "every result is there from the start"
    assert ("avalon_outbox_depth", (("service", "engine"),)) in values
    assert "process_cpu_seconds_total" in text


async def test_a_counter_moved_in_the_process_shows_on_the_next_scrape(served):
    _, client = served

    async def applied() -> float:
        async with client.get("/metrics") as response:
            return metric_values(await response.text())[("avalon_commands_total", (("result", "applied"),))]

    before = await applied()
    ops.COMMANDS_APPLIED.inc(3)
    assert await applied() == before + 3
    assert ops.sample("avalon_commands_total", result="applied") == before + 3


async def test_two_servers_cannot_share_a_port_and_the_error_says_so():
    first = await serve_ops("127.0.0.1:0", Readiness())
    try:
        with pytest.raises(OSError):
            await serve_ops(f"127.0.0.1:{first.port}", Readiness())
    finally:
        await first.close()


# -- the Telegram sender's counts -----------------------------------------------------------------

class FakeBot:
    """send_message answers by chat: 1 delivers, 2 is blocked (403), 3 is a bad request, 4 never answers."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def send_message(self, chat_id, text, reply_markup=None):
        if chat_id == 2:
            raise TelegramForbiddenError(None, "Forbidden: bot was blocked by the user")
        if chat_id == 3:
            raise TelegramBadRequest(None, "Bad Request: chat not found")
        if chat_id == 4:
            await self.release.wait()
            raise TelegramNetworkError(None, "timed out")
        return {"chat": chat_id, "text": text}


FAST = Limits(per_chat_interval=0, group_per_minute=1000, global_per_second=1000, retries=2)


def telegram_counts() -> dict[str, float]:
    return {
        "sent": ops.sample("avalon_deliveries_total", channel="telegram", result="sent"),
        "failed": ops.sample("avalon_deliveries_total", channel="telegram", result="failed"),
        "dead": ops.sample("avalon_dead_messages_total", service="telegram", channel="telegram"),
        "errors": ops.sample("avalon_errors_total", service="telegram", where="send"),
        "queued": ops.sample("avalon_outbox_depth", service="telegram"),
    }


def moved(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: after[key] - before[key] for key in before}


async def test_the_sender_counts_what_it_sent_what_failed_and_what_it_gave_up_on():
    before = telegram_counts()
    sender = Sender(FakeBot(), FAST)
    try:
        assert await sender.send(1, "hello") == {"chat": 1, "text": "hello"}
        assert await sender.send(2, "you blocked me") is None
        assert await sender.send(3, "nowhere") is None
    finally:
        await sender.close()
    assert moved(before, telegram_counts()) == {"sent": 1, "failed": 2, "dead": 2, "errors": 1, "queued": 0}


async def test_the_queue_depth_counts_each_message_waiting_and_falls_back_once_they_are_delivered():
    bot = FakeBot()
    before = telegram_counts()["queued"]
    sender = Sender(bot, FAST)
    try:
        stuck = [sender.send_soon(4, f"line {i}", markup=object()) for i in range(3)]  # markup: not merged
        merged = [sender.send_soon(1, f"news {i}") for i in range(2)]
        await asyncio.sleep(0.05)
        assert telegram_counts()["queued"] == before + 3, "chat 1's two, merged, went; chat 4's three wait"
        assert all(f.done() for f in merged)
        bot.release.set()
        await asyncio.wait_for(asyncio.gather(*stuck), 10)
        assert telegram_counts()["queued"] == before
    finally:
        await sender.close()


async def test_messages_still_queued_when_the_sender_closes_leave_the_queue_depth():
    bot = FakeBot()
    before = telegram_counts()["queued"]
    sender = Sender(bot, FAST)
    for i in range(4):
        sender.send_soon(4, f"line {i}", markup=object())
    await asyncio.sleep(0.01)
    assert telegram_counts()["queued"] == before + 4
    await sender.close()
    assert telegram_counts()["queued"] == before
