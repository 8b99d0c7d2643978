"""The email gateway's rows: the mailbox position (the IMAP watcher's ``StateStore``), the mail
already read, and each address's standing (failing, a stranger answered today)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from .imap import MailboxState
from .tables import ContactRow, MailboxRow, SeenMailRow


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class MailStore:
    def __init__(self, engine) -> None:
        self.engine = engine  # the project's database (shared.db.make_engine)

    def _insert(self, table):
        return (postgresql if self.engine.dialect.name == "postgresql" else sqlite).insert(table)

    # -- the mailbox (imap.StateStore) ------------------------------------------------------

    async def load(self, key: str) -> MailboxState:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(MailboxRow.uidvalidity, MailboxRow.last_uid)
                                      .where(MailboxRow.key == key))).first()
        return MailboxState(row.uidvalidity, row.last_uid) if row else MailboxState()

    async def save(self, key: str, state: MailboxState) -> None:
        values = {"uidvalidity": state.uidvalidity, "last_uid": state.last_uid, "updated_at": _now()}
        async with self.engine.begin() as conn:
            await conn.execute(self._insert(MailboxRow).values(key=key, **values)
                               .on_conflict_do_update(index_elements=["key"], set_=values))

    # -- mail read once ---------------------------------------------------------------------

    async def first_time(self, message_id: str, sender: str | None) -> bool:
        """True the first time a mail with this id is seen (and now remembered); False after."""
        try:
            async with self.engine.begin() as conn:
                await conn.execute(insert(SeenMailRow).values(message_id=message_id[:300], sender=sender,
                                                              outcome="", seen_at=_now()))
        except IntegrityError:
            return False
        return True

    async def forget(self, message_id: str) -> None:
        """A mail whose handling failed before its command reached the bus: read it again later."""
        from sqlalchemy import delete

        async with self.engine.begin() as conn:
            await conn.execute(delete(SeenMailRow).where(SeenMailRow.message_id == message_id[:300]))

    async def outcome(self, message_id: str, outcome: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(update(SeenMailRow).where(SeenMailRow.message_id == message_id[:300])
                               .values(outcome=outcome[:40]))

    # -- addresses ----------------------------------------------------------------------------

    async def contact(self, address: str) -> ContactRow | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(ContactRow).where(ContactRow.address == address))).first()
        return row[0] if row else None

    async def mark_failing(self, address: str, failure: str | None) -> bool:
        """Record that mail to ``address`` bounces; True when it was not known to fail before."""
        known = await self.contact(address)
        values = {"failing": True, "failure": (failure or "")[:2000], "updated_at": _now()}
        async with self.engine.begin() as conn:
            await conn.execute(self._insert(ContactRow).values(address=address, **values)
                               .on_conflict_do_update(index_elements=["address"], set_=values))
        return not (known and known.failing)

    async def mark_working(self, address: str) -> None:
        """A person wrote from ``address``: it works again."""
        async with self.engine.begin() as conn:
            await conn.execute(update(ContactRow).where(ContactRow.address == address, ContactRow.failing.is_(True))
                               .values(failing=False, failure=None, updated_at=_now()))

    async def may_answer_stranger(self, address: str, *, every: timedelta = timedelta(days=1)) -> bool:
        """A stranger is answered at most once a ``every``: True (and noted) when they may be now."""
        now = _now()
        known = await self.contact(address)
        if known is not None and known.answered_at is not None and now - _aware(known.answered_at) < every:
            return False
        values = {"answered_at": now, "updated_at": now}
        async with self.engine.begin() as conn:
            await conn.execute(self._insert(ContactRow).values(address=address, failing=False, **values)
                               .on_conflict_do_update(index_elements=["address"], set_=values))
        return True
