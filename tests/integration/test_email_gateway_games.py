"""The email gateway over a real RabbitMQ: a game whose events are held up (its memory is being
written) does not hold up the other games' mail, and a game's own events are still handled in the
order they came."""

from __future__ import annotations

import asyncio
import uuid
from email.message import EmailMessage

from avalon.services.email_gateway.compose import Identity
from avalon.services.email_gateway.gateway import EmailGateway
from avalon.services.email_gateway.tokens import Tokens
from avalon.shared.db import make_engine, migrate
from avalon.shared.narration.render import Context, Narrator, Recipient
from avalon.shared.protocol import AudienceKind, AudienceModel, CommandRejected, EventEnvelope, utcnow

ANN, BOB = "mail:ann@example.org", "mail:bob@example.org"


class RecordingSmtp:
    def __init__(self) -> None:
        self.sent: list[EmailMessage] = []

    async def send(self, message) -> None:
        self.sent.append(message)

    async def close(self) -> None:
        return None

    def told(self, player: str) -> str:
        """Every mail sent to the player, one after another."""
        address = player.split(":", 1)[1]
        return "\n".join(m.get_body(("plain",)).get_content() for m in self.sent if address in str(m["To"]))


def rejected(game: str, seq: int, player: str, reason: str) -> EventEnvelope:
    return EventEnvelope(message_id=str(uuid.uuid4()), game_id=game, seq=seq, occurred_at=utcnow(),
                         audience=AudienceModel(kind=AudienceKind.PLAYERS, players=(player,)),
                         event=CommandRejected(command_type="join", reason=reason, message=reason))


def said(envelope: EventEnvelope) -> str:
    """What the event tells its reader (the words its mail carries)."""
    rendered = Narrator().render(envelope, Recipient(envelope.audience.players[0], ("en",)), "email",
                                 Context({}, {"title": envelope.game_id}))
    return rendered.text.strip()


async def until(check, what: str, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.02)


async def test_a_held_up_game_does_not_hold_up_another_games_mail_and_keeps_its_own_order(
        make_rabbit_bus, tmp_path):
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")
    await migrate(engine)
    bus = await make_rabbit_bus()
    smtp = RecordingSmtp()
    gateway = EmailGateway(bus, engine, identity=Identity("narrator@example.org"), tokens=Tokens("x" * 32),
                           smtp=smtp, linger=0.0, first_delay=0.01)
    await gateway.start()
    first, second = rejected("slow", 1, ANN, "already_joined"), rejected("slow", 2, ANN, "game_over")
    other = rejected("quick", 1, BOB, "not_a_player")
    assert len({said(first), said(second), said(other)}) == 3
    try:
        # game "slow": its memory is being written (as when a player's mail changes it): its events wait
        writing = gateway.book._writing.setdefault("slow", asyncio.Lock())
        async with writing:
            for envelope in (first, second, other):
                await bus.publish_event(envelope, "email")
            await until(lambda: said(other) in smtp.told(BOB), "game quick's mail is sent while game slow waits")
            assert smtp.told(ANN) == "", "game slow's events wait for its memory"
        await until(lambda: said(second) in smtp.told(ANN), "game slow's second event reaches ann")
        told = smtp.told(ANN)
        assert said(first) in told and told.index(said(first)) < told.index(said(second)), told
    finally:
        await gateway.close()
        await engine.dispose()
