"""Reading a channel's rows back: those still to send when the process starts, the dead ones and
the count in each state (what operators see)."""

from __future__ import annotations

import json

from sqlalchemy import func, select

from ..rows import OutboxRow
from .messages import Row


async def rows_in_state(conn, channel: str, state: str) -> list[Row]:
    """The channel's rows in ``state`` (pending, dead), in the order they were committed."""
    rows = await conn.execute(
        select(OutboxRow.id, OutboxRow.event_id, OutboxRow.game_id, OutboxRow.recipient, OutboxRow.body,
               OutboxRow.attempts)
        .where(OutboxRow.channel == channel, OutboxRow.state == state).order_by(OutboxRow.id))
    return [Row(id, event, game, recipient, json.loads(body), attempts)
            for id, event, game, recipient, body, attempts in rows.all()]


async def counts(conn, channel: str) -> dict[str, int]:
    """How many of the channel's rows are in each state."""
    rows = await conn.execute(select(OutboxRow.state, func.count()).where(
        OutboxRow.channel == channel).group_by(OutboxRow.state))
    return {state: count for state, count in rows.all()}
