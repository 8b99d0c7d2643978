"""The end-to-end tests use the integration tests' broker fixtures, and a Telegram world:
fake Bot API on loopback, the real gateway and engine, RabbitMQ between them."""

from __future__ import annotations

import asyncio

import pytest
from aiogram.client.default import DefaultBotProperties

from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.services.telegram_gateway.gateway import TelegramGateway
from avalon.services.telegram_gateway.sender import Limits
from avalon.shared.bus.rabbit import RabbitBus
from tests.fakes.telegram_api import FakeTelegram
from tests.integration.conftest import amqp_url, rabbit_prefix, require_rabbitmq  # noqa: F401

NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Finn", "Gus"]
FAST = Limits(per_chat_interval=0.0, group_per_minute=10**6, global_per_second=10**6)


class GatewayProcess:
    """The gateway as one process would run it: its bot, bus connection, dispatcher and polling."""

    def __init__(self, fake, amqp_url: str, prefix: str, database_url: str, limits: Limits) -> None:
        self.fake, self.amqp_url, self.prefix, self.database_url, self.limits = (
            fake, amqp_url, prefix, database_url, limits)

    async def start(self) -> TelegramGateway:
        self.bus = RabbitBus(self.amqp_url, prefix=self.prefix)
        await self.bus.start()
        self.bot = self.fake.make_bot(default=DefaultBotProperties(parse_mode="HTML"))
        self.gateway = TelegramGateway(self.bot, self.bus, limits=self.limits, database_url=self.database_url)
        await self.gateway.start()
        self.dispatcher = self.gateway.dispatcher()
        self.poller = self.gateway.poller(self.dispatcher, timeout=1)
        self.poller.start()
        return self.gateway

    async def stop(self) -> None:
        await self.poller.stop()
        await self.gateway.close()
        await self.bot.session.close()
        await self.bus.close()


@pytest.fixture
async def telegram_world(amqp_url, rabbit_prefix, tmp_path, request):
    await require_rabbitmq(amqp_url)
    fake = await FakeTelegram().start()
    engine_bus = RabbitBus(amqp_url, prefix=rabbit_prefix)
    await engine_bus.start()
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}")
    engine = EngineService(store, engine_bus, DeadlineScheduler(engine_bus), channels=channel_map())
    limits = getattr(request, "param", FAST) or Limits(per_chat_interval=0.2, group_per_minute=10**6)
    gateway = GatewayProcess(fake, amqp_url, rabbit_prefix, f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
                             limits)
    await gateway.start()
    await engine.start()
    users = [fake.user(1000 + i, name) for i, name in enumerate(NAMES)]
    group = fake.group(-100500, "Camelot", members=users)
    try:
        yield fake, group, users, gateway
    finally:
        await gateway.stop()
        await engine.stop()
        await engine_bus.close()
        await engine_bus.delete_everything("telegram")
        await store.close()
        await fake.stop()


@pytest.fixture
async def world(telegram_world):
    fake, group, users, process = telegram_world
    return fake, group, users, process.gateway
