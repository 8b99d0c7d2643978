"""Running the Telegram gateway: long polling against Telegram or a custom Bot API server, or a
webhook. ``services/app.py`` starts it: alone on RabbitMQ (``avalon telegram``, compose) or in
the embedded process when ``TELEGRAM_BOT_TOKEN`` is set (``avalon run``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiogram import Bot
from aiogram.client.default import DefaultBotProperties
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramNetworkError, TelegramServerError, TelegramUnauthorizedError
from aiogram.utils.token import TokenValidationError
from aiogram.webhook.aiohttp_server import SimpleRequestHandler, setup_application
from aiohttp import web

from avalon.shared.config import Settings
from avalon.shared.ops import readiness
from avalon.shared.runtime import BadSetting, StartupError, one_line, retry
from avalon.shared.throttle import from_settings as throttle_from_settings

from .gateway import TelegramGateway
from .sender import Limits

log = logging.getLogger(__name__)


def make_bot(settings: Settings) -> Bot:
    session = AiohttpSession(api=TelegramAPIServer.from_base(settings.telegram_api_url)) \
        if settings.telegram_api_url else AiohttpSession()
    return Bot(settings.telegram_bot_token, session=session, default=DefaultBotProperties(parse_mode="HTML"))


WEBHOOK_PATH = "/telegram/webhook"
#: What a Bot API that is not there (yet) looks like; anything else at start-up is reported.
UNREACHABLE = (TelegramNetworkError, TelegramServerError, OSError, asyncio.TimeoutError)


class TelegramRunner:
    """Long polling by default; a webhook (with Telegram's secret token checked) when configured.

    ``start()`` tries the Bot API once; when Telegram cannot be reached (a network outage, a blocked
    API host, a Bot API server still starting), it says so in one line and keeps trying in the
    background with backoff, and the gateway starts as soon as it answers. A refused token is a
    ``StartupError`` (raised, or handed to ``on_fatal`` once in the background)."""

    def __init__(self, settings: Settings, bus, *, on_fatal=None) -> None:
        self.settings = settings
        if settings.telegram_webhook_url and not settings.telegram_webhook_secret:
            raise BadSetting(["TELEGRAM_WEBHOOK_SECRET is required with TELEGRAM_WEBHOOK_URL"])
        try:
            self.bot = make_bot(settings)
        except TokenValidationError:
            raise BadSetting(["TELEGRAM_BOT_TOKEN is not a bot token (expected the form 123456:ABC-DEF..., "
                              "as @BotFather gives it)"]) from None
        interval, per_group, per_second = settings.telegram_limits.split(",")
        limits = Limits(per_chat_interval=float(interval), group_per_minute=int(per_group),
                        global_per_second=int(per_second))
        self.gateway = TelegramGateway(self.bot, bus, database_url=settings.database_url, limits=limits,
                                       throttle=throttle_from_settings(settings))
        self.dispatcher = self.gateway.dispatcher()
        self.on_fatal = on_fatal
        self._poller = None  # long polling's (polling.Poller), once serving without a webhook
        self._connecting: asyncio.Task | None = None
        self._web: web.AppRunner | None = None
        readiness.register("telegram", reason="connecting to the Bot API")

    @property
    def api(self) -> str:
        return self.settings.telegram_api_url or "https://api.telegram.org"

    async def start(self) -> None:
        """Once it returns, ``stop()`` undoes it; if it raises (a refused token) or is cancelled (a
        signal during start-up), what it had opened (the Bot API's HTTP session, the outbox) is closed."""
        try:
            await self._start()
        except BaseException:
            with contextlib.suppress(Exception):
                await self.stop()
            raise

    async def _start(self) -> None:
        await self.gateway.start(gated=True)  # subscribed now: events wait for Telegram on the bus
        try:
            me = await self.bot.get_me()
        except TelegramUnauthorizedError:
            raise self._refused() from None
        except UNREACHABLE as error:
            readiness.set_not_ready("telegram", one_line(error))
            log.warning("Telegram Bot API at %s unreachable: %s; retrying in the background", self.api,
                        one_line(error))
            self._connecting = asyncio.create_task(self._connect_later())
            return
        await self._serve(me.username or "")

    async def _connect_later(self) -> None:
        try:
            me = await retry(f"Telegram Bot API at {self.api} unreachable", self.bot.get_me, log=log,
                             transient=UNREACHABLE, first_delay=1.0, max_delay=60.0,
                             on_wait=lambda reason: readiness.set_not_ready("telegram", reason))
            await self._serve(me.username or "")
        except asyncio.CancelledError:
            raise
        except TelegramUnauthorizedError:
            self._fatal(self._refused())
        except Exception as error:  # noqa: BLE001 - reported as the process's end, not lost in a task
            self._fatal(StartupError(f"the Telegram gateway could not start: {one_line(error)}"))

    def _fatal(self, error: StartupError) -> None:
        if self.on_fatal is None:
            log.error("%s", error)
        else:
            self.on_fatal(error)

    def _refused(self) -> StartupError:
        return StartupError(f"Telegram ({self.api}) refused TELEGRAM_BOT_TOKEN (401 Unauthorized): "
                            "copy the token from @BotFather again")

    async def _serve(self, username: str) -> None:
        self.gateway.bot_username = username
        await self.gateway.open()
        s = self.settings
        if not s.telegram_webhook_url:
            await self.bot.delete_webhook(drop_pending_updates=False)
            # updates are handled side by side (a reply paced for one chat holds up no other); what
            # each changed in the gateway's memory is saved as soon as it is handled (_save_after); each
            # is committed to the database before Telegram is told it arrived (polling.py): a kill loses none
            self._poller = self.gateway.poller(self.dispatcher)
            self._poller.start()
        else:
            app = web.Application()
            # answered once handled: Telegram sends an update again until it gets that answer, so a
            # gateway killed while handling one loses none (in the background, it would be lost)
            SimpleRequestHandler(dispatcher=self.dispatcher, bot=self.bot, handle_in_background=False,
                                 secret_token=s.telegram_webhook_secret).register(app, path=WEBHOOK_PATH)
            setup_application(app, self.dispatcher, bot=self.bot)
            self._web = web.AppRunner(app)
            await self._web.setup()
            host, _, port = s.telegram_webhook_listen.rpartition(":")
            await web.TCPSite(self._web, host or "0.0.0.0", int(port)).start()
            await self.bot.set_webhook(s.telegram_webhook_url.rstrip("/") + WEBHOOK_PATH,
                                       secret_token=s.telegram_webhook_secret,
                                       allowed_updates=self.dispatcher.resolve_used_update_types())
        readiness.set_ready("telegram")
        log.info("telegram gateway ready: @%s via %s (%s)", username, self.api,
                 "webhook" if s.telegram_webhook_url else "long polling")

    async def stop(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)
        if self._poller is not None:  # before the session and the database it uses are closed
            await self._poller.stop()
        if self._web is not None:
            await self._web.cleanup()
        await self.gateway.close()
        await self.bot.session.close()
        readiness.unregister("telegram")
