"""What aio-pika, aiormq and asyncpg log while RabbitMQ or PostgreSQL is away, reduced to what a
host needs to read.

When the broker restarts, the AMQP libraries log, per connection: an ERROR with a traceback for the
close, an ERROR and a WARNING for every reconnection attempt (two a second with our 0.5 s interval)
and an ERROR with a traceback per channel whose close callback found no transport. The bus says it
itself instead, once: "connection lost (why): reconnecting" and "connection back"
(shared/bus/rabbit/link.py). This filter drops those expected records and lets one reconnection failure
through every ``EVERY`` seconds, without its traceback, so a long outage still shows it is being
retried. The same for asyncpg's pool, which retries its minimum of connections with a WARNING and a
traceback each time while the database is away (the engine says "database unreachable" and "database
back" itself). Anything else those loggers say passes untouched.
"""

from __future__ import annotations

import logging
import time

EVERY = 30.0  # seconds between "still reconnecting" lines during an outage

#: (logger, start of the message) of the records an expected connection loss produces
_EXPECTED = {
    "aiormq.connection": ("Unexpected connection close from remote", "Cancelling cause reader exited abnormally"),
    "aio_pika.robust_connection": ("Connection to %s closed. Reconnecting",),
    "aio_pika.tools": ("Callback %r error: %s: %s",),
}
_ATTEMPTS = {
    "aiormq.connection": "error when creating transport",
    "aio_pika.robust_connection": "Connection attempt to",
    "asyncpg.pool": "Failed to restore the pool connection floor",
}


class ConnectionNoise(logging.Filter):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.logger = name
        self.last_attempt = float("-inf")

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if any(message.startswith(prefix) for prefix in _EXPECTED.get(self.logger, ())):
            if self.logger == "aio_pika.tools" and "RobustChannel._on_close" not in record.getMessage():
                return True
            return False
        attempt = _ATTEMPTS.get(self.logger)
        if attempt and message.startswith(attempt):
            if self.logger == "aiormq.connection":
                return False  # the same failure as aio-pika's line, which is kept (rate-limited)
            now = time.monotonic()
            if now - self.last_attempt < EVERY:
                return False
            self.last_attempt = now
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def install() -> None:
    """Idempotent: one filter per logger."""
    for name in {*_EXPECTED, *_ATTEMPTS}:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ConnectionNoise) for f in logger.filters):
            logger.addFilter(ConnectionNoise(name))
