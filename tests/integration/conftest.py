"""Fixtures for the bus integration tests.

They run against a REAL RabbitMQ (``AMQP_URL``, default the local broker with
guest/guest). When the broker cannot be reached the RabbitMQ tests FAIL with a
message saying so; they never skip (CI starts the broker). The in-process
variants of the shared tests need no broker.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

import aio_pika
import pytest

from avalon.shared.bus import InProcessBus
from avalon.shared.bus.rabbit import RabbitBus

DEFAULT_AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"

_reachability: dict[str, str | None] = {}  # url -> None (reachable) or why not


@pytest.fixture(scope="session")
def amqp_url() -> str:
    return os.environ.get("AMQP_URL", DEFAULT_AMQP_URL)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


async def require_rabbitmq(url: str) -> None:
    """Fail (never skip) the calling test when the broker is unreachable; checked once per URL."""
    if url not in _reachability:
        try:
            connection = await asyncio.wait_for(aio_pika.connect(url), timeout=5)
            await connection.close()
            _reachability[url] = None
        except Exception as e:  # noqa: BLE001 - any failure to connect is the message
            _reachability[url] = f"{type(e).__name__}: {e}"
    if _reachability[url] is not None:
        pytest.fail(
            f"RabbitMQ is not reachable at {_without_password(url)} ({_reachability[url]}). "
            "These integration tests need a real broker: start one (`rabbitmq-server -detached`, "
            "or `docker run -d -p 5672:5672 rabbitmq:3.10`) or point AMQP_URL at one.",
            pytrace=False,
        )


@pytest.fixture
def rabbit_prefix() -> str:
    """A unique namespace for one test's exchanges and queues."""
    return f"test.{uuid.uuid4().hex[:12]}"


@asynccontextmanager
async def rabbit_buses(url: str, prefix: str) -> AsyncIterator[Callable[..., Awaitable[RabbitBus]]]:
    """Yields ``make(**kwargs)``: started RabbitBus instances sharing ``prefix``; afterwards every one is
    closed and everything under the prefix is deleted."""
    await require_rabbitmq(url)
    buses: list[RabbitBus] = []

    async def make(*, start: bool = True, via: str | None = None, **kwargs: object) -> RabbitBus:
        """``via``: another URL to the same broker (a test's proxy), instead of ``url``."""
        bus = RabbitBus(via or url, prefix=prefix, **kwargs)  # type: ignore[arg-type]
        buses.append(bus)
        if start:
            await bus.start()
        return bus

    try:
        yield make
    finally:
        for bus in buses:
            await bus.close()
        for bus in buses:  # each knows its own subscriptions; deleting twice is harmless
            await bus.delete_everything()


@asynccontextmanager
async def memory_buses() -> AsyncIterator[Callable[..., Awaitable[InProcessBus]]]:
    buses: list[InProcessBus] = []

    async def make(**kwargs: object) -> InProcessBus:
        bus = InProcessBus(**kwargs)  # type: ignore[arg-type]
        buses.append(bus)
        await bus.start()
        return bus

    try:
        yield make
    finally:
        for bus in buses:
            await bus.close()


@pytest.fixture
async def make_rabbit_bus(amqp_url: str, rabbit_prefix: str):
    async with rabbit_buses(amqp_url, rabbit_prefix) as make:
        yield make


@pytest.fixture
async def rabbit_bus(make_rabbit_bus) -> RabbitBus:
    return await make_rabbit_bus()


@pytest.fixture(params=["memory", "rabbit"])
async def make_bus(request, amqp_url: str, rabbit_prefix: str):
    """Either implementation, for the tests of the semantics both keep."""
    if request.param == "memory":
        async with memory_buses() as make:
            yield make
    else:
        async with rabbit_buses(amqp_url, rabbit_prefix) as make:
            yield make


@pytest.fixture
async def bus(make_bus):
    return await make_bus()


@pytest.fixture(params=["sqlite", "postgres"])
async def db_url(request, tmp_path):
    """A database URL for each test: a fresh SQLite file, then a scratch PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}"
        return
    from tests.integration.engine_support import create_pg_database, drop_pg_database

    url, name = await create_pg_database()
    yield url
    await drop_pg_database(name)
