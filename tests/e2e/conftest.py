"""The end-to-end tests use the integration tests' broker fixtures, and a Telegram world:
fake Bot API on loopback, the real gateway and engine, RabbitMQ between them."""

from __future__ import annotations

import asyncio

import pytest
from aiogram.client.default import DefaultBotProperties

from services.engine.deadlines import DeadlineScheduler
from services.engine.service import EngineService
from services.engine.store import Store
from services.telegram_gateway.gateway import TelegramGateway
from services.telegram_gateway.sender import Limits
from shared.bus.rabbit import RabbitBus
from tests.fakes.telegram_api import FakeTelegram
from tests.integration.conftest import amqp_url, rabbit_prefix, require_rabbitmq  # noqa: F401

NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Finn", "Gus"]
FAST = Limits(per_chat_interval=0.0, group_per_minute=10**6, global_per_second=10**6)


@pytest.fixture
async def world(amqp_url, rabbit_prefix, tmp_path, request):
    await require_rabbitmq(amqp_url)
    fake = await FakeTelegram().start()
    engine_bus, gateway_bus = RabbitBus(amqp_url, prefix=rabbit_prefix), RabbitBus(amqp_url, prefix=rabbit_prefix)
    await engine_bus.start()
    await gateway_bus.start()
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'engine.db'}")
    engine = EngineService(store, engine_bus, DeadlineScheduler(engine_bus))
    bot = fake.make_bot(default=DefaultBotProperties(parse_mode="HTML"))
    limits = getattr(request, "param", FAST) or Limits(per_chat_interval=0.2, group_per_minute=10**6)
    gateway = TelegramGateway(bot, gateway_bus, limits=limits)
    await gateway.start()
    await engine.start()
    dispatcher = gateway.dispatcher()
    polling = asyncio.create_task(dispatcher.start_polling(bot, handle_signals=False, polling_timeout=1))
    users = [fake.user(1000 + i, name) for i, name in enumerate(NAMES)]
    group = fake.group(-100500, "Camelot", members=users)
    try:
        yield fake, group, users, gateway
    finally:
        await dispatcher.stop_polling()
        polling.cancel()
        await asyncio.gather(polling, return_exceptions=True)
        await gateway.close()
        await engine.stop()
        await bot.session.close()
        await gateway_bus.close()
        await engine_bus.close()
        await engine_bus.delete_everything("telegram")
        await store.close()
        await fake.stop()


