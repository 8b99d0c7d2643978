"""Entry points: ``avalon engine`` (the engine alone, on RabbitMQ) and ``avalon run``
(the embedded default: engine plus configured gateways, in-process bus, SQLite)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from shared.bus import InProcessBus
from shared.config import Settings
from shared.runtime import settle_gc

from .deadlines import DeadlineScheduler
from .service import EngineService
from .store import Store

log = logging.getLogger("avalon")


def stop_on_signal() -> asyncio.Event:
    """Set on SIGINT/SIGTERM. Installed before anything starts, so a signal during start-up
    still ends in a clean shutdown rather than the default abrupt exit."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def run_engine(settings: Settings) -> None:
    from shared.bus.rabbit import RabbitBus

    bus = RabbitBus(settings.amqp_url, prefix=settings.bus_prefix, delivery_limit=settings.delivery_limit)
    await _run(settings, bus)


async def run_embedded(settings: Settings) -> None:
    await _run(settings, InProcessBus(delivery_limit=settings.delivery_limit), gateways=True)


async def _run(settings: Settings, bus, *, gateways: bool = False) -> None:
    stop = stop_on_signal()
    store = Store(settings.database_url)
    await bus.start()
    engine = EngineService(store, bus, DeadlineScheduler(bus))
    await engine.start()
    log.info("engine ready: database %s", settings.database_url.split("@")[-1])
    telegram = None
    if gateways and settings.telegram_bot_token:
        from services.telegram_gateway.main import TelegramRunner

        telegram = TelegramRunner(settings, bus)
        await telegram.start()
        log.info("telegram gateway ready")
    settle_gc()
    try:
        await stop.wait()
    finally:
        if telegram is not None:
            await telegram.stop()
        await engine.stop()
        await bus.close()
        await store.close()


def add_parsers(sub) -> None:
    p = sub.add_parser("engine", help="run the engine service on RabbitMQ (compose)")
    p.set_defaults(run=lambda args: _main(run_engine))
    p = sub.add_parser("run", help="run the narrator embedded: in-process bus and SQLite")
    p.set_defaults(run=lambda args: _main(run_embedded))
    p = sub.add_parser("telegram", help="run the Telegram gateway alone on RabbitMQ (compose)")
    p.set_defaults(run=lambda args: _main(_telegram))


async def _telegram(settings: Settings) -> None:
    from services.telegram_gateway.main import run_telegram

    await run_telegram(settings)


def _main(target) -> int:
    settings = Settings()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        asyncio.run(target(settings))
    else:
        uvloop.run(target(settings))
    return 0
