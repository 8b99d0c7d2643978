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
from aiogram.webhook.aiohttp_server import SimpleRequestHandler, setup_application
from aiohttp import web

from shared.config import Settings

from .gateway import TelegramGateway

log = logging.getLogger(__name__)


def make_bot(settings: Settings) -> Bot:
    session = AiohttpSession(api=TelegramAPIServer.from_base(settings.telegram_api_url)) \
        if settings.telegram_api_url else AiohttpSession()
    return Bot(settings.telegram_bot_token, session=session, default=DefaultBotProperties(parse_mode="HTML"))


WEBHOOK_PATH = "/telegram/webhook"


class TelegramRunner:
    """Long polling by default; a webhook (with Telegram's secret token checked) when configured."""

    def __init__(self, settings: Settings, bus) -> None:
        self.settings = settings
        self.bot = make_bot(settings)
        self.gateway = TelegramGateway(self.bot, bus, database_url=settings.database_url)
        self.dispatcher = self.gateway.dispatcher()
        self._polling: asyncio.Task | None = None
        self._web: web.AppRunner | None = None

    async def start(self) -> None:
        await self.gateway.start()
        s = self.settings
        if not s.telegram_webhook_url:
            await self.bot.delete_webhook(drop_pending_updates=False)
            self._polling = asyncio.create_task(self.dispatcher.start_polling(self.bot, handle_signals=False))
            return
        if not s.telegram_webhook_secret:
            raise SystemExit("TELEGRAM_WEBHOOK_SECRET is required with TELEGRAM_WEBHOOK_URL")
        app = web.Application()
        SimpleRequestHandler(dispatcher=self.dispatcher, bot=self.bot,
                             secret_token=s.telegram_webhook_secret).register(app, path=WEBHOOK_PATH)
        setup_application(app, self.dispatcher, bot=self.bot)
        self._web = web.AppRunner(app)
        await self._web.setup()
        host, _, port = s.telegram_webhook_listen.rpartition(":")
        await web.TCPSite(self._web, host or "0.0.0.0", int(port)).start()
        await self.bot.set_webhook(s.telegram_webhook_url.rstrip("/") + WEBHOOK_PATH,
                                   secret_token=s.telegram_webhook_secret,
                                   allowed_updates=self.dispatcher.resolve_used_update_types())

    async def stop(self) -> None:
        if self._polling is not None:
            await self.dispatcher.stop_polling()
            self._polling.cancel()
            await asyncio.gather(self._polling, return_exceptions=True)
        if self._web is not None:
            await self._web.cleanup()
        await self.gateway.close()
        await self.bot.session.close()


async def run_telegram(settings: Settings) -> None:
    from services.engine.main import stop_on_signal
    from shared.bus.rabbit import RabbitBus
    from shared.runtime import settle_gc

    if not settings.telegram_bot_token:
        raise SystemExit("avalon telegram: set TELEGRAM_BOT_TOKEN")
    stop = stop_on_signal()
    bus = RabbitBus(settings.amqp_url, prefix=settings.bus_prefix, delivery_limit=settings.delivery_limit)
    await bus.start()
    runner = TelegramRunner(settings, bus)
    await runner.start()
    log.info("telegram gateway ready")
    settle_gc()
    try:
        await stop.wait()
    finally:
        await runner.stop()
        await bus.close()
