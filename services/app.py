"""The composition root: builds the bus, the store and the configured services, starts them,
waits for a signal, and stops them in reverse order.

``services/cli.py`` chooses what runs: ``avalon run`` (the engine and every configured channel
in one process, on the in-process bus), ``avalon engine`` and ``avalon telegram`` (one service on
RabbitMQ, for compose), ``avalon migrate`` (the schema, then exit). No service imports another's
entry point: this module is the only place that knows them all.

Start-up never crash-loops on something that comes back by itself: an unreachable broker,
database or Telegram is one log line per retry, with backoff, while the ops endpoints say what is
not ready yet. What waiting cannot fix (a malformed setting, a refused login) is a
``StartupError``: one line and a non-zero exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal

from avalon.services.channels import CHANNELS, channel_map, spec
from avalon.shared.config import Settings
from avalon.shared.ops import readiness, serve_ops
from avalon.shared.runtime import BadSetting, StartupError, one_line, retry, settle_gc, stop_on_signal

log = logging.getLogger("avalon")


# -- the parts ---------------------------------------------------------------------------

def open_store(url: str):
    """The engine's store, or a ``StartupError`` naming the setting when the URL is unusable."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    from avalon.services.engine.store import Store

    try:
        return Store(url)
    except (ArgumentError, NoSuchModuleError, ValueError) as error:
        raise BadSetting([f"DATABASE_URL {_safe_url(url)!r} is not usable: {one_line(error)} (expected "
                          "sqlite+aiosqlite:///PATH or postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB)"]) from None


def _database_transient(url: str) -> tuple[type[BaseException], ...]:
    """Errors of a database server that is not there yet (SQLite has none: a file either opens or not)."""
    if url.startswith("sqlite"):
        return ()
    from sqlalchemy.exc import InterfaceError, OperationalError

    return (OSError, asyncio.TimeoutError, OperationalError, InterfaceError)


async def migrate(store, url: str) -> None:
    """The schema at its newest migration, waiting for a database server that is not up yet."""
    from alembic.util.exc import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    readiness.set_not_ready("database", "migrating")
    try:
        await retry(f"database at {_safe_url(url)} unreachable", store.migrate, log=log,
                    transient=_database_transient(url),
                    on_wait=lambda reason: readiness.set_not_ready("database", reason))
    except (SQLAlchemyError, OSError) as error:
        cause = getattr(error, "orig", None) or error  # the driver's own words, not SQLAlchemy's wrapping
        raise StartupError(f"database at {_safe_url(url)}: {one_line(cause)}") from None
    except CommandError as error:  # e.g. "Can't locate revision identified by '0009'"
        found = re.search(r"revision identified by '([^']+)'", str(error))
        if found is None:
            raise StartupError(f"database at {_safe_url(url)}: {one_line(error)}") from None
        raise StartupError(f"database at {_safe_url(url)}: {unknown_revision(found.group(1))}") from None
    readiness.set_ready("database")


def unknown_revision(revision: str) -> str:
    """A schema this version has no migration for, and what a host can do about it."""
    return (f"its schema is at revision {revision!r}, which this version of avalon does not know (a newer "
            "version migrated it): run that version, or restore a backup taken before it")


async def start_bus(settings: Settings, embedded: bool):
    if embedded:
        from avalon.shared.bus import InProcessBus

        store = open_store(settings.database_url)  # the bus's inbox is in the engine's database: its schema first
        try:
            await migrate(store, settings.database_url)
        finally:
            await store.close()
        bus = InProcessBus(delivery_limit=settings.delivery_limit, inbox_url=settings.database_url,
                           confirm_events=10.0)
        await bus.start()  # what a killed run left in the inbox is delivered before anything new
        readiness.register("bus", ready=True)
        return bus
    import aiormq.exceptions

    from avalon.shared.bus.rabbit import RabbitBus

    try:
        bus = RabbitBus(settings.amqp_url, prefix=settings.bus_prefix, delivery_limit=settings.delivery_limit,
                        partitions=settings.engine_partitions)
    except ValueError as error:
        raise StartupError(f"bad bus setting: {error}") from None
    where = _safe_url(settings.amqp_url)
    readiness.register("bus", reason="connecting")
    transient = (aiormq.exceptions.AMQPConnectionError, OSError, asyncio.TimeoutError)

    async def connect() -> None:
        try:
            await bus.start()
        except aiormq.exceptions.ProbableAuthenticationError:
            raise StartupError(f"RabbitMQ at {where} refused the user and password in AMQP_URL") from None

    try:
        with quiet("aiormq.connection", "aio_pika.robust_connection"):  # our one line per retry says it
            await retry(f"RabbitMQ at {where} unreachable", connect, log=log, transient=transient,
                        on_wait=lambda reason: readiness.set_not_ready("bus", reason))
    except (ValueError, TypeError) as error:
        raise StartupError(f"AMQP_URL {where!r} is not usable: {one_line(error)}") from None
    readiness.register("bus", check=lambda: None if bus._ready() else "reconnecting to RabbitMQ")
    return bus


@contextlib.contextmanager
def quiet(*loggers: str):
    """Silence these loggers (below CRITICAL) for a while."""
    saved = [(logging.getLogger(name), logging.getLogger(name).level) for name in loggers]
    for logger, _ in saved:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)


def _safe_url(url: str) -> str:
    """A URL without its password, for logs (a cluster's nodes each without theirs)."""
    if "," in url:
        return ",".join(_safe_url(one.strip()) for one in url.split(",") if one.strip())
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = rest.rsplit("@", 1)[1]
    return f"{scheme}{sep}{rest}"


class Interrupted(Exception):
    """Ctrl-C (SIGINT) stopped the process, once everything had stopped; or any signal did before it
    had started."""


# -- running -----------------------------------------------------------------------------

class App:
    def __init__(self, settings: Settings, *, embedded: bool, engine: bool, channels: list[str]) -> None:
        self.settings = settings
        self.embedded = embedded
        self.engine = engine
        self.channels = channels
        self._failed: asyncio.Future | None = None

    def fail(self, error: BaseException) -> None:
        """A part that runs in the background could not start: the process ends with its message."""
        if self._failed is not None and not self._failed.done():
            self._failed.set_exception(error)

    async def run(self) -> None:
        stop = stop_on_signal()
        self._failed = asyncio.get_running_loop().create_future()
        async with contextlib.AsyncExitStack() as stack:
            ops = await self._serve_ops()
            stack.push_async_callback(ops.close)
            starting = asyncio.create_task(self._start(stack))
            stopping = asyncio.create_task(stop.wait())
            try:
                await asyncio.wait({starting, stopping, self._failed}, return_when=asyncio.FIRST_COMPLETED)
                if not starting.done():  # a signal (or a fatal error) during start-up
                    starting.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await starting
                    if self._failed.done():
                        self._failed.result()
                    log.info("stopped during start-up")
                    raise Interrupted("during start-up")

                starting.result()
                settle_gc()
                await asyncio.wait({stopping, self._failed}, return_when=asyncio.FIRST_COMPLETED)
                if self._failed.done():
                    self._failed.result()
            finally:
                stopping.cancel()
                readiness.clear()
        if stop.signal == signal.SIGINT:  # everything is stopped; a service manager's SIGTERM ends in 0
            raise Interrupted

    async def _serve_ops(self):
        try:
            return await serve_ops(self.settings.ops_listen, readiness)
        except ValueError as error:
            raise BadSetting([f"OPS_LISTEN: {error}"]) from None
        except OSError as error:  # the port is taken: the narrator still runs, without its endpoints
            from avalon.shared.ops import OpsServer

            log.warning("ops endpoints not served on %s: %s", self.settings.ops_listen, one_line(error))
            return OpsServer()

    async def _start(self, stack: contextlib.AsyncExitStack) -> None:
        s = self.settings
        for name in self.channels:  # a missing setting is said at once, not after the broker answers
            spec(name).check_settings(s)
        bus = await start_bus(s, self.embedded)
        stack.push_async_callback(bus.close)
        for name in self.channels:  # subscribed before the engine publishes: nothing is missed
            await self._start_channel(stack, name, bus)
        if self.engine:
            await self._start_engine(stack, bus)
        if self.embedded:
            self._say_channels()

    async def _start_engine(self, stack, bus) -> None:
        from avalon.services.engine.deadlines import DeadlineScheduler
        from avalon.services.engine.service import EngineService

        url = self.settings.database_url
        store = open_store(url)
        stack.push_async_callback(store.close)
        await migrate(store, url)
        engine = EngineService(store, bus, DeadlineScheduler(bus), channels=channel_map())
        readiness.register("engine", reason="starting")
        await engine.start()
        stack.push_async_callback(engine.stop)
        readiness.set_ready("engine")
        keeper = engine.partitions
        readiness.detail("partitions", lambda: {"served": sorted(keeper.held), "of": keeper.partitions,
                                                "takeovers": keeper.takeovers})
        stack.callback(readiness.detail, "partitions", None)
        log.info("engine ready: database %s", _safe_url(url))

    async def _start_channel(self, stack, name: str, bus) -> None:
        runner = spec(name).load_runner()(self.settings, bus, on_fatal=self.fail)
        await runner.start()
        stack.push_async_callback(runner.stop)

    def _say_channels(self) -> None:
        running = set(self.channels)
        if running:
            log.info("channels: %s", ", ".join(sorted(running)))
        else:
            log.warning("no channel is running: players cannot reach the narrator yet")
        for spec in CHANNELS:
            if spec.name not in running:
                log.info("to add %s: %s (in the environment or .env; see README.md)", spec.name, spec.how)
        if not running:
            log.info("to watch a game narrated without any channel: avalon demo")


async def run_app(settings: Settings, *, embedded: bool, engine: bool, channels: list[str]) -> None:
    await App(settings, embedded=embedded, engine=engine, channels=channels).run()


async def run_migrations(settings: Settings) -> None:
    """``avalon migrate``: the schema at its newest migration, then exit (compose runs it once
    before the services)."""
    store = open_store(settings.database_url)
    try:
        await migrate(store, settings.database_url)
        log.info("database %s migrated", _safe_url(settings.database_url))
    finally:
        await store.close()
