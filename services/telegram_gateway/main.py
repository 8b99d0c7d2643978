"""Running the Telegram gateway: long polling against Telegram or a custom Bot API server.

``avalon telegram`` runs it alone on RabbitMQ (compose); ``avalon run`` starts it in the
embedded process when ``TELEGRAM_BOT_TOKEN`` is set."""

from __future__ import annotations

import asyncio
import logging

from aiogram import Bot
from aiogram.client.default import DefaultBotProperties
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from shared.config import Settings

from .gateway import TelegramGateway

log = logging.getLogger(__name__)


def make_bot(settings: Settings) -> Bot:
    session = AiohttpSession(api=TelegramAPIServer.from_base(settings.telegram_api_url)) \
        if settings.telegram_api_url else AiohttpSession()
    return Bot(settings.telegram_bot_token, session=session, default=DefaultBotProperties(parse_mode="HTML"))


class TelegramRunner:
    def __init__(self, settings: Settings, bus) -> None:
        self.bot = make_bot(settings)
        self.gateway = TelegramGateway(self.bot, bus)
        self.dispatcher = self.gateway.dispatcher()
        self._polling: asyncio.Task | None = None

    async def start(self) -> None:
        await self.gateway.start()
        self._polling = asyncio.create_task(self.dispatcher.start_polling(self.bot, handle_signals=False))

    async def stop(self) -> None:
        await self.dispatcher.stop_polling()
        if self._polling is not None:
            self._polling.cancel()
            await asyncio.gather(self._polling, return_exceptions=True)
        await self.gateway.close()
        await self.bot.session.close()


async def run_telegram(settings: Settings) -> None:
    from services.engine.main import _serve_until_signal
    from shared.bus.rabbit import RabbitBus

    if not settings.telegram_bot_token:
        raise SystemExit("avalon telegram: set TELEGRAM_BOT_TOKEN")
    bus = RabbitBus(settings.amqp_url, prefix=settings.bus_prefix, delivery_limit=settings.delivery_limit)
    await bus.start()
    runner = TelegramRunner(settings, bus)
    await runner.start()
    log.info("telegram gateway ready")
    try:
        await _serve_until_signal()
    finally:
        await runner.stop()
        await bus.close()
