"""The HTTP server of the ops endpoints: ``/healthz``, ``/readyz`` and ``/metrics``."""

from __future__ import annotations

import json
import logging

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from .metrics import REGISTRY
from .ready import Readiness, readiness

log = logging.getLogger(__package__)  # "avalon.shared.ops", as before the package was split


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
        details = ready.details()
        if details:
            body["details"] = details
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
    process's ``shared.ops.readiness`` when None."""
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
