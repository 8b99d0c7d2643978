"""The staging: what an event asked to send is committed, with the mark that the event is handled
and the channel's memory of that game, in one transaction; only then is the event acknowledged,
and its rows handed to the queues. Events staged while a commit is under way are committed together
in the next one (each still all or nothing): under load, one transaction for many events, not one
each. A redelivered event (its mark is there) adds nothing.

Also here: a message no event asked for (``post``), an event that produced nothing to send
(``record_dead``), the game's memory changed without an event (``save_game``), and reading the
marks and the memories back (``handled``, ``games``)."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from avalon.shared import ops
from avalon.shared.db import upsert

from ..rows import ChannelGameRow, HandledEvent, OutboxRow
from .messages import Outgoing, Row

log = logging.getLogger(__name__)


@dataclass
class _Staged:
    event_id: str
    game_id: str
    messages: list[Outgoing]
    game_blob: bytes | None
    done: asyncio.Future
    ids: list[int] = field(default_factory=list)


class Staging:
    def __init__(self, engine, channel: str, enqueue: Callable[[list[Row]], None]) -> None:
        self.engine = engine  # a SQLAlchemy AsyncEngine on the project's database
        self.channel = channel
        self.enqueue = enqueue  # the rows committed, to be sent
        self._waiting: list[_Staged] = []  # events waiting for the next commit
        self._committing: asyncio.Task | None = None
        self._dead = ops.DEAD_MESSAGES.labels(service="delivery", channel=channel)

    async def stage(self, event_id: str, game_id: str, messages: list[Outgoing], game_blob: bytes | None = None
                    ) -> bool:
        """Commit these messages, the mark that ``event_id`` is handled and the game's memory, at
        once. False (and nothing written) when the event was handled before: a redelivery."""
        staged = _Staged(event_id, game_id, messages, game_blob, asyncio.get_running_loop().create_future())
        self._waiting.append(staged)
        if self._committing is None or self._committing.done():
            self._committing = asyncio.create_task(self._commit_waiting())
        return await asyncio.shield(staged.done)

    async def close(self) -> None:
        """What is being committed is committed (or not: then it is sent again)."""
        if self._committing is not None:
            await asyncio.gather(self._committing, return_exceptions=True)

    async def _commit_waiting(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                await self._commit(batch)
            except IntegrityError:  # one of them was handled before: each on its own, to know which
                for staged in batch:
                    await self._commit_alone(staged)
                continue
            except Exception as error:  # noqa: BLE001 - each caller decides (the database may be away)
                for staged in batch:
                    if not staged.done.done():
                        staged.done.set_exception(error)
                continue
            for staged in batch:
                self._committed(staged)

    async def _commit_alone(self, staged: _Staged) -> None:
        try:
            await self._commit([staged])
        except IntegrityError:
            if not staged.done.done():
                staged.done.set_result(False)  # handled before (the mark's primary key)
        except Exception as error:  # noqa: BLE001
            if not staged.done.done():
                staged.done.set_exception(error)
        else:
            self._committed(staged)

    async def _commit(self, batch: list[_Staged]) -> None:
        now = datetime.now(timezone.utc)
        async with self.engine.begin() as conn:
            await conn.execute(insert(HandledEvent), [{"channel": self.channel, "event_id": s.event_id}
                                                      for s in batch])
            rows = [dict(channel=self.channel, game_id=s.game_id, event_id=s.event_id, recipient=m.recipient,
                         body=json.dumps(m.body, ensure_ascii=False), state="pending", attempts=0, created_at=now)
                    for s in batch for m in s.messages]
            if rows:  # one statement for all of them, their ids in their order
                result = await conn.execute(insert(OutboxRow).returning(OutboxRow.id, sort_by_parameter_order=True),
                                            rows)
                ids = iter(list(result.scalars()))
                for s in batch:
                    s.ids = [next(ids) for _ in s.messages]
            games = {s.game_id: s.game_blob for s in batch if s.game_blob is not None}  # the latest of each
            if games:
                await conn.execute(self._upsert_games(), [
                    {"channel": self.channel, "game_id": game, "blob": blob, "updated_at": now}
                    for game, blob in games.items()])

    def _committed(self, staged: _Staged) -> None:
        self.enqueue([Row(id, staged.event_id, staged.game_id, m.recipient, m.body)
                      for id, m in zip(staged.ids, staged.messages)])
        if not staged.done.done():
            staged.done.set_result(True)

    async def post(self, game_id: str, message: Outgoing, reason: str = "direct") -> None:
        """A message that no event asked for (a button's redraw), sent in order after what this
        recipient already has in the outbox (so an edit finds the message it edits)."""
        now = datetime.now(timezone.utc)
        async with self.engine.begin() as conn:
            result = await conn.execute(insert(OutboxRow).values(
                channel=self.channel, game_id=game_id, event_id=reason, recipient=message.recipient,
                body=json.dumps(message.body, ensure_ascii=False), state="pending", attempts=0,
                created_at=now).returning(OutboxRow.id))
            row_id = result.scalar_one()
        self.enqueue([Row(row_id, reason, game_id, message.recipient, message.body)])

    async def record_dead(self, event_id: str, game_id: str, recipient: str, error: str) -> None:
        """An event that produced nothing to send (it could not be rendered): marked handled, and a
        dead row in its place, logged and counted like any message given up on."""
        now = datetime.now(timezone.utc)
        async with self.engine.begin() as conn:
            exists = await conn.execute(select(HandledEvent.event_id).where(
                HandledEvent.channel == self.channel, HandledEvent.event_id == event_id))
            if exists.first() is None:
                await conn.execute(insert(HandledEvent).values(channel=self.channel, event_id=event_id))
            await conn.execute(insert(OutboxRow).values(
                channel=self.channel, game_id=game_id, event_id=event_id, recipient=recipient, body="{}",
                state="dead", attempts=1, last_error=error[:2000], created_at=now, done_at=now))
        self._dead.inc()
        log.error("%s outbox: event %s for %s is dead: %s", self.channel, event_id, recipient, error)

    async def save_game(self, game_id: str, game_blob: bytes) -> None:
        """The channel's memory of a game changed without an event (a player's message did it)."""
        async with self.engine.begin() as conn:
            await conn.execute(self._upsert_games(), {"channel": self.channel, "game_id": game_id, "blob": game_blob,
                                                      "updated_at": datetime.now(timezone.utc)})

    async def handled(self, event_id: str) -> bool:
        async with self.engine.connect() as conn:
            found = await conn.execute(select(HandledEvent.event_id).where(
                HandledEvent.channel == self.channel, HandledEvent.event_id == event_id))
            return found.first() is not None

    async def games(self) -> dict[str, tuple[bytes, datetime]]:
        """The channel's memory of every game as last staged, and when: the least recently changed first."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(select(ChannelGameRow.game_id, ChannelGameRow.blob, ChannelGameRow.updated_at)
                                      .where(ChannelGameRow.channel == self.channel)
                                      .order_by(ChannelGameRow.updated_at))
            return {game: (blob, _aware(at)) for game, blob, at in rows.all()}

    def _upsert_games(self):
        return upsert(self.engine, ChannelGameRow, ["channel", "game_id"], ["blob", "updated_at"])


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)  # SQLite drops the zone
