"""The bus's one connection to the broker: aio-pika's robust connection, which reconnects by itself
and restores the channels, their QoS and what was declared on them; and what the bus says of it
(a loss once, the return once)."""

from __future__ import annotations

import asyncio
import functools
import logging

import aio_pika
import aiormq
from aio_pika.abc import AbstractChannel, AbstractRobustConnection
from aio_pika.exceptions import AMQPError, ChannelInvalidStateError

from avalon.shared import quiet

log = logging.getLogger(__package__)  # the bus speaks under one name, "avalon.shared.bus.rabbit", whichever piece
quiet.install()  # a broker restart is one line lost, one line back: see quiet.py

#: seconds between reconnection attempts (overridable with ?reconnect_interval= in AMQP_URL)
RECONNECT_INTERVAL = 0.5
#: what a handler meets when the broker connection goes away under it
CONNECTION_ERRORS = (AMQPError, ChannelInvalidStateError, ConnectionError, aiormq.exceptions.AMQPError)
#: how long closing waits for the broker to cancel a consumer or close a channel
CLOSE_TIMEOUT = 5.0


def broker_urls(url: str) -> list[str]:
    """The nodes of ``AMQP_URL``: one URL, or several separated by commas (the nodes of a cluster)."""
    urls = [part.strip() for part in url.split(",") if part.strip()]
    if not urls:
        raise ValueError("AMQP_URL is empty")
    return urls


async def connect_any(url: str, *, robust: bool = False):
    """A plain (or robust) connection to the first node of ``url`` that answers (tools, tests)."""
    urls = broker_urls(url)
    for index, one in enumerate(urls):
        try:
            return await (aio_pika.connect_robust(one) if robust else aio_pika.connect(one))
        except CONNECTION_ERRORS + (OSError,):
            if index == len(urls) - 1:
                raise
    raise AssertionError("unreachable")


class ClusterConnection(aio_pika.RobustConnection):
    """A robust connection to one of several nodes: each (re)connection attempt goes to the next node
    of ``urls`` in turn, so losing a node of a cluster costs a reconnection, not the bus. (aio-pika
    reconnects to its one URL: the attempt is its private ``__connect_transport``, wrapped here.)"""

    def __init__(self, url, *args, urls: list[str], first: int = 0, **kwargs) -> None:
        super().__init__(url, *args, **kwargs)
        self._urls = [aio_pika.connection.make_url(u) for u in urls]
        self._next = first

    async def _RobustConnection__connect_transport(self) -> None:
        self.url = self._urls[self._next % len(self._urls)]
        self._next += 1
        await aio_pika.RobustConnection._RobustConnection__connect_transport(self)  # type: ignore[attr-defined]


class BrokerLink:
    """The connection while the bus is started (``connection``, None before and after), whether it is
    lost right now (``lost``: told once, not per command in flight) and whether we are closing it.
    ``url``: one node, or a cluster's nodes separated by commas (tried in turn)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.urls = broker_urls(url)
        self.connection: AbstractRobustConnection | None = None
        self.lost = False
        self._closing = False
        #: called (with no argument) when the connection is lost, not when we close it
        self.on_lost: list = []

    async def open(self) -> AbstractRobustConnection:
        self._closing = False
        # back within a second of the broker (aio-pika waits 5 s between tries by default)
        extra = {} if "reconnect_interval" in self.url else {"reconnect_interval": RECONNECT_INTERVAL}
        if len(self.urls) == 1:
            self.connection = await aio_pika.connect_robust(self.url, **extra)
        else:
            self.connection = await self._first_node(extra)
        self.connection.close_callbacks.add(self._on_connection_lost)
        self.connection.reconnect_callbacks.add(self._on_reconnected)
        return self.connection

    async def _first_node(self, extra: dict) -> AbstractRobustConnection:
        """The first node of the cluster that answers (each in turn); then it reconnects node by node."""
        for index, url in enumerate(self.urls):
            # the first attempt is the connection's own too: it goes to urls[first]
            factory = functools.partial(ClusterConnection, urls=self.urls, first=index)
            try:
                return await aio_pika.connect_robust(url, connection_class=factory, **extra)
            except CONNECTION_ERRORS + (OSError,):
                if index == len(self.urls) - 1:
                    raise
                log.info("RabbitMQ node %d of %d unreachable; trying the next", index + 1, len(self.urls))
        raise AssertionError("unreachable")

    def require(self) -> AbstractRobustConnection:
        if self.connection is None:
            raise RuntimeError("RabbitBus is not started: await bus.start() first")
        return self.connection

    @property
    def connected(self) -> bool:
        """Open and not reconnecting right now."""
        return self.connection is not None and self.connection.connected.is_set()  # type: ignore[attr-defined]

    def closing(self) -> None:
        """Our own close begins: the connection's end is no loss to report."""
        self._closing = True

    async def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.close()

    def _on_connection_lost(self, _sender=None, error: BaseException | None = None, *_args) -> None:
        if not self._closing:
            for listener in self.on_lost:
                listener()
        if not self.lost and not self._closing:
            self.lost = True
            why = f" ({' '.join(str(error).split())[:200]})" if error else ""
            log.warning("RabbitMQ connection lost%s: reconnecting every %s s (commands in flight are "
                        "delivered again)", why, RECONNECT_INTERVAL)

    def _on_reconnected(self, *_args) -> None:
        if self.lost:
            log.info("RabbitMQ connection back")
        self.lost = False


async def close_channel(channel: AbstractChannel | None) -> None:
    """Close a channel, if it is open, for a while at most; one line if the broker does not answer."""
    if channel is not None and not channel.is_closed:
        try:
            await asyncio.wait_for(channel.close(), CLOSE_TIMEOUT)
        except Exception:
            log.warning("could not close a channel cleanly", exc_info=True)
