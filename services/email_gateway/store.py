"""The email gateway's rows: the mailbox position (the IMAP watcher's ``StateStore``), the mail
already read, each address's standing (failing, a stranger answered today), and each host's standby
list."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from avalon.shared.db import upsert

from .imap import MailboxState
from .rows import ContactRow, MailboxRow, SeenMailRow, StandbyRow


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Contact:
    address: str
    failing: bool
    failure: str | None
    answered_at: datetime | None


class MailStore:
    def __init__(self, engine) -> None:
        self.engine = engine  # the project's database (shared.db.make_engine)

    # -- the mailbox (imap.StateStore) ------------------------------------------------------

    async def load(self, key: str) -> MailboxState:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(MailboxRow.uidvalidity, MailboxRow.last_uid)
                                      .where(MailboxRow.key == key))).first()
        return MailboxState(row.uidvalidity, row.last_uid) if row else MailboxState()

    async def save(self, key: str, state: MailboxState) -> None:
        values = {"uidvalidity": state.uidvalidity, "last_uid": state.last_uid, "updated_at": _now()}
        async with self.engine.begin() as conn:
            await conn.execute(upsert(self.engine, MailboxRow, ["key"], list(values)), {"key": key, **values})

    # -- mail read once ---------------------------------------------------------------------

    async def seen(self, message_id: str) -> bool:
        async with self.engine.connect() as conn:
            found = await conn.execute(select(SeenMailRow.message_id).where(
                SeenMailRow.message_id == message_id[:300]))
            return found.first() is not None

    async def remember(self, message_id: str, sender: str | None, outcome: str) -> None:
        """This mail has been acted on: the same mail again changes nothing."""
        try:
            async with self.engine.begin() as conn:
                await conn.execute(insert(SeenMailRow).values(message_id=message_id[:300], sender=sender,
                                                              outcome=outcome[:40], seen_at=_now()))
        except IntegrityError:
            pass  # read twice at once: remembered by the other

    # -- addresses ----------------------------------------------------------------------------

    async def contact(self, address: str) -> Contact | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(ContactRow.address, ContactRow.failing, ContactRow.failure,
                                             ContactRow.answered_at).where(ContactRow.address == address))).first()
        return Contact(row.address, bool(row.failing), row.failure, _aware(row.answered_at)) if row else None

    async def mark_failing(self, address: str, failure: str | None) -> bool:
        """Record that mail to ``address`` bounces; True when it was not known to fail before."""
        known = await self.contact(address)
        values = {"failing": True, "failure": (failure or "")[:2000], "updated_at": _now()}
        async with self.engine.begin() as conn:
            await conn.execute(upsert(self.engine, ContactRow, ["address"], list(values)), {"address": address, **values})
        return not (known and known.failing)

    async def mark_working(self, address: str) -> bool:
        """A person wrote from ``address``: it works again. True when it was failing until now."""
        async with self.engine.begin() as conn:
            done = await conn.execute(update(ContactRow).where(ContactRow.address == address,
                                                               ContactRow.failing.is_(True))
                                      .values(failing=False, failure=None, updated_at=_now()))
        return bool(done.rowcount)

    async def may_answer_stranger(self, address: str, *, every: timedelta = timedelta(days=1)) -> bool:
        """A stranger is answered at most once a ``every``: True (and noted) when they may be now."""
        now = _now()
        known = await self.contact(address)
        if known is not None and known.answered_at is not None and now - known.answered_at < every:
            return False
        values = {"answered_at": now, "updated_at": now}
        async with self.engine.begin() as conn:
            await conn.execute(upsert(self.engine, ContactRow, ["address"], list(values)),
                               {"address": address, "failing": False, **values})
        return True

    # -- the hosts' standby lists ------------------------------------------------------------

    async def standby(self) -> dict[str, tuple[str, ...]]:
        """Every host's standby list (host id -> addresses, in the order they were added)."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(select(StandbyRow.host, StandbyRow.address)
                                      .order_by(StandbyRow.host, StandbyRow.added_at, StandbyRow.address))
            lists: dict[str, tuple[str, ...]] = {}
            for host, address in rows:
                lists[host] = (*lists.get(host, ()), address)
        return lists

    async def add_standby(self, host: str, addresses: list[str]) -> None:
        """On ``host``'s standby list (an address already there stays where it is)."""
        values = {"added_at": _now()}
        async with self.engine.begin() as conn:
            dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
            for address in addresses:
                await conn.execute(dialect.insert(StandbyRow).on_conflict_do_nothing(),
                                   {"host": host, "address": address, **values})

    async def remove_standby(self, host: str, addresses: list[str]) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(delete(StandbyRow).where(StandbyRow.host == host, StandbyRow.address.in_(addresses)))
