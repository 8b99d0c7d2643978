"""Each event of a game names the previous one its channel was sent (``EventEnvelope.prev_seq``):
what a channel can tell from it."""

from __future__ import annotations

import logging

from avalon.shared.protocol import EventEnvelope

log = logging.getLogger(__name__)


def check_chain(envelope: EventEnvelope, channel: str, last_seen: int) -> bool:
    """False, with one warning line, when events of this game sent to ``channel`` after ``last_seen``
    and before ``envelope`` never arrived (a loss the bus should not allow); True otherwise. A
    redelivery (seq not after last_seen) and a reply outside the stream (seq 0) are no gap."""
    previous = envelope.prev_seq.get(channel)
    if not envelope.seq or previous is None or envelope.seq <= last_seen or previous <= last_seen:
        return True
    log.warning("game %s: events %d..%d sent to %s never arrived here (now at %d)", envelope.game_id,
                last_seen + 1, previous, channel, envelope.seq)
    return False
