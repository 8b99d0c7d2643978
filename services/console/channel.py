"""What a group and its players read, printed: the console channel on the delivery core.

It draws an event as a Telegram group sees it (public events once, for the group; private ones
for each player; no message per vote or card played; the team and the vote chosen with the
group's buttons rather than in private), as plain text in the demo's language, and its "wire" is
the transcript: each message delivered is kept with the outbox row that carried it, so the
transcript reads in the order the messages were sent whatever order the outbox's workers took.
Times are shown on the demo's clock: a game night from ``clock``, a minute per message."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from avalon.shared.delivery.channel import GROUP_CHOICES, TALLIES, Game
from avalon.shared.delivery.outbox import Outgoing, Row
from avalon.shared.delivery.roster import Reader
from avalon.shared.narration.render import Context, Narrator, Recipient
from avalon.shared.protocol import EventEnvelope

SCHEME = "demo"


@dataclass(frozen=True)
class Message:
    """One message as its reader received it: ``reader`` None is the group."""

    reader: str | None
    kind: str
    text: str


@dataclass
class Page:
    """The console's own part of a game: nothing but the language it is printed in."""

    language: str = "en"


@dataclass
class Transcript:
    """Every message delivered, by the outbox row that carried it (rows are numbered as staged)."""

    rows: dict[int, Message] = field(default_factory=dict)

    def messages(self) -> list[Message]:
        return [self.rows[n] for n in sorted(self.rows)]


class ConsoleChannel:
    name = "console"
    scheme = SCHEME
    has_group = True

    def __init__(self, names: dict[str, str], language: str, clock: datetime) -> None:
        self.names = names  # player id -> the name printed
        self.language = language
        self.clock = clock
        self.narrator = Narrator()
        self.transcript = Transcript()
        self.drawn = 0  # messages drawn so far: the demo clock's minutes

    def own_part(self, game_id: str) -> Page:
        return Page(self.language)

    def group_languages(self, game: Game) -> tuple[str, ...]:
        return (game.own.language,)

    def draw(self, game: Game, envelope: EventEnvelope, readers: list[Reader]) -> list[Outgoing]:
        e = envelope.event
        if e.type in TALLIES:
            return []
        if e.type == "choices_offered" and {c.kind.value for c in e.choices} <= GROUP_CHOICES:
            return []
        at = self.clock + timedelta(minutes=self.drawn)
        shown = envelope.model_copy(update={
            "occurred_at": at,
            "deadline_at": at + timedelta(seconds=e.timeout_seconds) if envelope.deadline_at else None})
        out = []
        for reader in readers:
            text = self.narrator.render(shown, Recipient(reader.player, reader.languages), self.name,
                                        Context(self.names)).text
            out.append(Outgoing(reader.player or "group", {"reader": reader.player, "kind": e.type, "text": text}))
        self.drawn += len(out)
        return out

    async def deliver(self, row: Row, slot_ref: str | None) -> None:
        body = row.body
        self.transcript.rows[row.id] = Message(body["reader"], body["kind"], body["text"])

    async def on_dead(self, row: Row, error: str) -> None:
        """Nothing to tell: the outbox logged and counted it."""

    async def on_lost(self, game: Game, envelope: EventEnvelope, error: Exception) -> None:
        """Nothing to tell: the pipeline logged and counted it."""
