"""The slots: a sent message's reference (its id on the channel) remembered by name, so that a
later message with ``"edit_slot": NAME`` edits the one sent with ``"slot": NAME`` in place, even
after a restart. A reference is known here the moment its message is sent; it reaches the table
with the marks of the messages sent (``SentMarks``), which take what is not written yet."""

from __future__ import annotations

from sqlalchemy import select

from ..rows import SlotRow


class Slots:
    def __init__(self, channel: str) -> None:
        self.channel = channel
        self._refs: dict[str, str] = {}
        self._unwritten: dict[str, str] = {}  # sent, not yet in the table

    async def load(self, conn) -> None:
        """The slots this channel wrote before (at start)."""
        rows = await conn.execute(select(SlotRow.slot, SlotRow.ref).where(SlotRow.channel == self.channel))
        self._refs = dict(rows.all())

    def get(self, name: str) -> str | None:
        return self._refs.get(name)

    def remember(self, name: str, ref: str) -> None:
        self._refs[name] = self._unwritten[name] = ref

    @property
    def unwritten(self) -> bool:
        return bool(self._unwritten)

    def take_unwritten(self) -> dict[str, str]:
        """What is not written yet, to be written now (``put_back`` if that fails)."""
        refs, self._unwritten = self._unwritten, {}
        return refs

    def put_back(self, refs: dict[str, str]) -> None:
        """References that could not be written: written with the next (a newer one of a slot wins)."""
        self._unwritten = {**refs, **self._unwritten}
