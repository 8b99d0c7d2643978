"""What the outbox holds and what a channel's wire may answer: a message for one recipient
(``Outgoing``), the row it becomes once committed (``Row``), and the two failures that mean more
than "try again" (``Undeliverable``, ``Unavailable``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable


class Undeliverable(Exception):
    """This message cannot be delivered and trying again will not help: dead at once."""


class Unavailable(Exception):
    """The server this channel sends through is down (unreachable, or closing the connection): not
    this message's fault, so it waits and is tried again with backoff, spending no attempt."""


@dataclass(frozen=True)
class Outgoing:
    """One message for one recipient. ``body`` is JSON for the channel's wire. A body with
    ``"slot": NAME`` is remembered once sent (its ``ref``), so that a later body with
    ``"edit_slot": NAME`` can edit it in place."""

    recipient: str
    body: dict[str, Any]


@dataclass
class Row:
    id: int
    event_id: str
    game_id: str
    recipient: str
    body: dict[str, Any]
    attempts: int = 0


#: deliver(row, slot_ref) -> the sent message's reference (for a slot), or None
Deliver = Callable[[Row, str | None], Awaitable[str | None]]
#: deliver_merged(rows): the rows of one recipient and one game sent as one message
DeliverMerged = Callable[[list[Row]], Awaitable[None]]
