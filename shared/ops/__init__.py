"""What operators see of a running service: health, readiness and Prometheus metrics.

Each service process (``avalon engine``, ``avalon telegram``, ``avalon run``) serves, with
``serve_ops(listen, readiness)``:

- ``/healthz``: 200 while the process answers at all;
- ``/readyz``: 200 once every component registered in ``readiness`` is ready, else 503 with a
  short JSON body naming what is not ready and why (503 too while nothing is registered yet);
- ``/metrics``: the metrics below in the Prometheus text format.

The metrics are defined once, here, in this module's own ``REGISTRY`` (not the library's global
default, so nothing a dependency registers leaks in and tests can read values with ``sample``).
Code on a hot path keeps the ``.labels(...)`` children it uses (``COMMANDS_APPLIED`` etc.): a child's
``inc`` is a lock and an addition.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    GCCollector,
    Gauge,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)

log = logging.getLogger(__name__)

# -- the metrics -------------------------------------------------------------------------

disable_created_metrics()  # no `*_created` twin of every counter: timestamps nobody graphs
REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)  # process_cpu_seconds_total, process_resident_memory_bytes, ...
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

COMMANDS = Counter(
    "avalon_commands", "Commands the engine handled, by result: applied (committed: a move, the board, a "
    "profile), ignored (committed with no effect: a stale deadline or reminder), rejected (refused with a "
    "reason), duplicate (a command id seen before: dropped)", ["result"], registry=REGISTRY)
EVENTS_PUBLISHED = Counter(
    "avalon_events_published", "Events the engine handed to the bus, by channel (an event for two channels "
    "counts once for each)", ["channel"], registry=REGISTRY)
OUTBOX_DEPTH = Gauge(
    "avalon_outbox_depth", "Waiting to go out: the engine's events committed but not yet published "
    "(service=engine); the Telegram gateway's messages queued to send (service=telegram)", ["service"],
    registry=REGISTRY)
DEAD_MESSAGES = Counter(
    "avalon_dead_messages", "Messages given up on: commands dead-lettered (service=engine, channel=commands), "
    "messages a gateway could not deliver after every retry or to a chat that blocked the bot "
    "(service=telegram, channel=telegram)", ["service", "channel"], registry=REGISTRY)
DELIVERIES = Counter(
    "avalon_deliveries", "A gateway's calls to its channel's API to deliver a message, by result: sent, or "
    "failed (each failed attempt, retried or not; a give-up also counts in avalon_dead_messages_total)",
    ["channel", "result"], registry=REGISTRY)
ERRORS = Counter(
    "avalon_errors", "Errors logged by a service, by where they happened", ["service", "where"],
    registry=REGISTRY)
COMPONENT_READY = Gauge(
    "avalon_component_ready", "1 when a component registered for /readyz is ready, else 0", ["component"],
    registry=REGISTRY)

#: The children on the engine's hot path.
COMMANDS_APPLIED = COMMANDS.labels(result="applied")
COMMANDS_IGNORED = COMMANDS.labels(result="ignored")
COMMANDS_REJECTED = COMMANDS.labels(result="rejected")
COMMANDS_DUPLICATE = COMMANDS.labels(result="duplicate")
ENGINE_OUTBOX = OUTBOX_DEPTH.labels(service="engine")
TELEGRAM_QUEUE = OUTBOX_DEPTH.labels(service="telegram")
TELEGRAM_SENT = DELIVERIES.labels(channel="telegram", result="sent")
TELEGRAM_FAILED = DELIVERIES.labels(channel="telegram", result="failed")

_published: dict[str, Counter] = {}


def events_published(channel: str):
    """The ``avalon_events_published_total{channel}`` child for a channel (kept after the first look-up)."""
    child = _published.get(channel)
    if child is None:
        child = _published[channel] = EVENTS_PUBLISHED.labels(channel=channel)
    return child


def sample(name: str, **labels: str) -> float:
    """A metric's current value as exposed (``avalon_commands_total``, result="applied"); 0 when the
    series does not exist yet."""
    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


# -- readiness ---------------------------------------------------------------------------

Check = Callable[[], "bool | str | None"]


@dataclass
class _Component:
    ready: bool
    reason: str
    check: Check | None = None


class Readiness:
    """Components of a process and whether each is ready, for ``/readyz``.

    ``register("bus")`` (not ready, "starting"), then ``set_ready("bus")`` or
    ``set_not_ready("bus", "reconnecting")``; setting an unregistered name registers it. A component
    may instead be registered with a ``check``: called at each ``/readyz``, it returns True or None
    (ready), or False or a reason (not ready); a check that raises is not ready, the error its reason.
    The process is ready when at least one component is registered and all are ready.

    ``export``: mirror each component in ``avalon_component_ready{component}`` (the module's
    ``readiness`` does; instances made for tests do not, so they leave the process's series alone).
    """

    def __init__(self, *, export: bool = False) -> None:
        self._components: dict[str, _Component] = {}
        self._export = export

    def _gauge(self, name: str, ready: bool) -> None:
        if self._export:
            COMPONENT_READY.labels(component=name).set(1 if ready else 0)

    def register(self, name: str, *, ready: bool = False, reason: str = "starting",
                 check: Check | None = None) -> None:
        self._components[name] = _Component(ready, "" if ready else reason, check)
        self._gauge(name, ready)

    def set_ready(self, name: str) -> None:
        self.set(name, True)

    def set_not_ready(self, name: str, reason: str) -> None:
        self.set(name, False, reason)

    def set(self, name: str, ready: bool, reason: str = "") -> None:
        component = self._components.get(name)
        if component is None:
            self.register(name, ready=ready, reason=reason or "not ready")
            return
        component.ready, component.reason = ready, "" if ready else (reason or "not ready")
        self._gauge(name, ready)

    def unregister(self, name: str) -> None:
        if self._components.pop(name, None) is not None and self._export:
            with contextlib.suppress(KeyError):
                COMPONENT_READY.remove(name)

    def clear(self) -> None:
        for name in list(self._components):
            self.unregister(name)

    @property
    def names(self) -> list[str]:
        return list(self._components)

    def evaluate(self) -> dict[str, tuple[bool, str]]:
        """Every component: (ready, why not); checks are run now."""
        out = {}
        for name, component in self._components.items():
            ready, reason = component.ready, component.reason
            if component.check is not None:
                ready, reason = _run_check(component.check)
                self._gauge(name, ready)
            out[name] = (ready, reason)
        return out

    def status(self) -> dict[str, str]:
        """Every component: "ready", or why it is not."""
        return {name: "ready" if ready else reason for name, (ready, reason) in self.evaluate().items()}

    def not_ready(self) -> dict[str, str]:
        """The components that are not ready, with their reasons."""
        return {name: reason for name, (ready, reason) in self.evaluate().items() if not ready}

    def is_ready(self) -> bool:
        return bool(self._components) and not self.not_ready()


def _run_check(check: Check) -> tuple[bool, str]:
    try:
        result = check()
    except Exception as error:  # noqa: BLE001 - the error is the reason
        return False, f"{type(error).__name__}: {error}"[:200]
    if result is None or result is True:
        return True, ""
    if result is False:
        return False, "not ready"
    return False, str(result)


#: The process's readiness: services register their components here.
readiness = Readiness(export=True)


# -- the HTTP server ---------------------------------------------------------------------

class OpsServer:
    """A running ops server (or a disabled one: ``enabled`` False, ``close()`` does nothing)."""

    def __init__(self, runner=None, host: str | None = None, port: int | None = None) -> None:
        self._runner = runner
        self.host = host
        self.port = port

    @property
    def enabled(self) -> bool:
        return self._runner is not None

    @property
    def url(self) -> str | None:
        if self.port is None:
            return None
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


def parse_listen(listen: str | None) -> tuple[str, int] | None:
    """``host:port``, ``:port`` or ``port`` (all interfaces), ``[::1]:port``; "" or "off": None."""
    text = (listen or "").strip()
    if text.lower() in ("", "off"):
        return None
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = "", text
    host = host.strip("[]") or "0.0.0.0"
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"ops listen address {listen!r}: expected host:port, :port, a port, or off") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"ops listen address {listen!r}: the port is out of range")
    return host, number


def make_app(ready: Readiness | None = None, registry: CollectorRegistry = REGISTRY):
    """The aiohttp application with /healthz, /readyz and /metrics."""
    from aiohttp import web

    ready = readiness if ready is None else ready

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        states = ready.evaluate()
        status = {name: "ready" if ok else reason for name, (ok, reason) in states.items()}
        pending = {name: reason for name, (ok, reason) in states.items() if not ok}
        if not status:
            pending = {"process": "no component registered yet"}
        body = {"ready": not pending, "components": status}
        if pending:
            body["not_ready"] = pending
        return web.Response(status=503 if pending else 200, text=json.dumps(body) + "\n",
                            content_type="application/json")

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app


async def serve_ops(listen: str | None, readiness: Readiness | None = None, *,
                    registry: CollectorRegistry = REGISTRY) -> OpsServer:
    """Serve /healthz, /readyz and /metrics on ``listen`` (e.g. ``0.0.0.0:9100``; port 0: any free
    port, then read ``.port``) until ``await server.close()``. ``listen`` "" or "off": nothing is
    served and a disabled server is returned (its ``close()`` does nothing). ``readiness``: the
    module's ``readiness`` when None."""
    from aiohttp import web

    address = parse_listen(listen)
    if address is None:
        return OpsServer()
    host, port = address
    runner = web.AppRunner(make_app(readiness, registry), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = runner.addresses[0][1] if runner.addresses else port
    log.info("ops endpoints on %s:%s (/healthz /readyz /metrics)", host, bound)
    return OpsServer(runner, host, bound)
