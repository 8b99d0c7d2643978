"""What operators see of a running service: health, readiness and Prometheus metrics.

Each service process (``avalon engine``, ``avalon telegram``, ``avalon run``) serves, with
``serve_ops(listen, readiness)``:

- ``/healthz``: 200 while the process answers at all;
- ``/readyz``: 200 once every component registered in ``readiness`` is ready, else 503 with a
  short JSON body naming what is not ready and why (503 too while nothing is registered yet);
- ``/metrics``: the metrics of ``metrics.py`` in the Prometheus text format.

One module per concept: ``metrics.py`` (the metrics, defined once), ``ready.py`` (the components
and whether each is ready), ``server.py`` (the HTTP server of the three endpoints). Every name is
importable from ``shared.ops`` itself: ``ops.COMMANDS_APPLIED``, ``ops.readiness``, ``ops.serve_ops``.
"""

from __future__ import annotations

from .metrics import (
    COMMANDS,
    COMMANDS_APPLIED,
    COMMANDS_DUPLICATE,
    COMMANDS_IGNORED,
    COMMANDS_REJECTED,
    COMPONENT_READY,
    DEAD_MESSAGES,
    DELIVERIES,
    ENGINE_OUTBOX,
    ERRORS,
    EVENTS_PUBLISHED,
    OUTBOX_DEPTH,
    PARTITION_COMMANDS,
    PARTITION_TAKEOVERS,
    PARTITIONS_HANDED_ON,
    PARTITIONS_HELD,
    REGISTRY,
    TELEGRAM_FAILED,
    TELEGRAM_QUEUE,
    TELEGRAM_SENT,
    events_published,
    sample,
)
from .ready import Check, Readiness, readiness
from .server import OpsServer, make_app, parse_listen, serve_ops

__all__ = [
    "COMMANDS", "COMMANDS_APPLIED", "COMMANDS_DUPLICATE", "COMMANDS_IGNORED", "COMMANDS_REJECTED",
    "COMPONENT_READY", "DEAD_MESSAGES", "DELIVERIES", "ENGINE_OUTBOX", "ERRORS", "EVENTS_PUBLISHED",
    "OUTBOX_DEPTH", "PARTITION_COMMANDS", "PARTITION_TAKEOVERS", "PARTITIONS_HANDED_ON", "PARTITIONS_HELD",
    "REGISTRY", "TELEGRAM_FAILED", "TELEGRAM_QUEUE", "TELEGRAM_SENT", "events_published",
    "sample", "Check", "Readiness", "readiness", "OpsServer", "make_app", "parse_listen", "serve_ops",
]
