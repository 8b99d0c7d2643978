"""The metrics operators scrape from ``/metrics``, defined once, here, in this module's own
``REGISTRY`` (not the library's global default, so nothing a dependency registers leaks in and tests
can read values with ``sample``). Code on a hot path keeps the ``.labels(...)`` children it uses
(``COMMANDS_APPLIED`` etc.): a child's ``inc`` is a lock and an addition.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Gauge,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

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
PARTITIONS_HELD = Gauge(
    "avalon_engine_partitions", "Command partitions this engine serves now (each served by one engine at a "
    "time; a standby engine serves none)", registry=REGISTRY)
PARTITION_TAKEOVERS = Counter(
    "avalon_engine_partition_takeovers", "Command partitions this engine took over (at its start, from an "
    "engine that stopped or died, or handed on to even the load)", registry=REGISTRY)
PARTITIONS_HANDED_ON = Counter(
    "avalon_engine_partitions_handed_on", "Command partitions this engine handed to another to even the load",
    registry=REGISTRY)
PARTITION_COMMANDS = Counter(
    "avalon_engine_partition_commands", "Commands this engine took from each command partition", ["partition"],
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
