"""Where the IMAP watcher is in its folder (UIDVALIDITY and the last handled UID), and where that is
kept: the gateway's database (``store.MailStore``) or, for tests, memory."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol


@dataclass
class MailboxState:
    uidvalidity: int | None = None
    last_uid: int = 0


class StateStore(Protocol):
    async def load(self, key: str) -> MailboxState: ...
    async def save(self, key: str, state: MailboxState) -> None: ...


class MemoryStateStore:
    """A StateStore in memory (tests; a watcher that may re-read its folder after a restart)."""

    def __init__(self) -> None:
        self.states: dict[str, MailboxState] = {}

    async def load(self, key: str) -> MailboxState:
        return replace(self.states.get(key, MailboxState()))

    async def save(self, key: str, state: MailboxState) -> None:
        self.states[key] = replace(state)
