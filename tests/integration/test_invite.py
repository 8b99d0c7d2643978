"""Invitations across channels: the host of a lobby invites an email player (``invite``), the engine
tells both of them (``player_invited``, on the channels of both), and the invitee takes the seat by
joining as their ``mail:`` id. Over the engine service on the in-process bus, against real SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest

from avalon.shared.bus import InProcessBus
from avalon.shared.narration.render import Context, Narrator, Recipient
from avalon.shared.protocol import CommandEnvelope, EventEnvelope
from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store

from .engine_support import wait_processed

GAME = "tg-100_1"
HOST = "tg:1"
BOB = "mail:bob@example.org"
TELEGRAM = [f"tg:{i}" for i in range(1, 6)]


class Table:
    """The engine service, and what each channel's subscriber received."""

    def __init__(self, url: str) -> None:
        self.bus = InProcessBus()
        self.store = Store(url)
        self.engine = EngineService(self.store, self.bus, DeadlineScheduler(self.bus), channels=channel_map())
        self.got: dict[str, list[EventEnvelope]] = {"telegram": [], "email": []}

    async def start(self) -> "Table":
        await self.bus.start()
        for channel, seen in self.got.items():
            async def record(envelope, seen=seen):
                seen.append(envelope)
            await self.bus.subscribe_events(channel, f"{channel}.#", record)
        await self.engine.start()
        return self

    async def send(self, actor: str, body: dict, *, game: str = GAME, channel: str = "telegram") -> CommandEnvelope:
        envelope = CommandEnvelope(game_id=game, actor=actor, channel=channel, command=body)
        await self.bus.send_command(envelope)
        await wait_processed(self.store, envelope.message_id)
        await self.bus.idle()
        return envelope

    async def invite(self, actor: str, player: str, **where) -> CommandEnvelope:
        return await self.send(actor, {"type": "invite", "player": player}, **where)

    async def lobby(self, players: list[str], **options) -> None:
        await self.send(players[0], {"type": "create_game", "options": options})
        for player in players[1:]:
            await self.send(player, {"type": "join"})

    def replies(self, channel: str, command: CommandEnvelope) -> list[EventEnvelope]:
        return [e for e in self.got[channel] if e.caused_by == command.message_id]

    def refusal(self, command: CommandEnvelope) -> str:
        """The reason the engine gave the actor (on Telegram) for refusing ``command``."""
        (reply,) = self.replies("telegram", command)
        assert reply.event.type == "command_rejected" and reply.audience.players == (command.actor,)
        return getattr(reply.event.reason, "value", reply.event.reason)

    async def close(self) -> None:
        await self.engine.stop()
        await self.bus.close()
        await self.store.close()


@pytest.fixture
async def table(db_url):
    t = await Table(db_url).start()
    yield t
    await t.close()


async def test_the_host_invites_an_email_player_and_both_channels_hear_it(table):
    await table.send(HOST, {"type": "update_profile", "display_name": "Ann"}, game=f"profile:{HOST}")
    await table.lobby(TELEGRAM[:3])
    command = await table.invite(HOST, BOB)

    (mail,) = table.replies("email", command)
    (group,) = table.replies("telegram", command)
    for envelope in (mail, group):
        assert envelope.event.type == "player_invited"
        assert (envelope.event.by, envelope.event.player) == (HOST, BOB)
        assert envelope.readers == (HOST, BOB) and envelope.audience.players == (HOST, BOB)
        assert envelope.seq == 0 and envelope.message_id == f"invite:{command.message_id}"
        assert envelope.people[HOST].display_name == "Ann" and BOB in envelope.people
    assert "player_invited" not in [e.event.type for e in await table.store.event_log(GAME)], \
        "an invitation is not a move of the game: the game's stream does not keep it"
    loaded = await table.store.load(GAME)
    assert BOB not in loaded.state.players, "invited is not seated"
    letter = Narrator().render(mail, Recipient(BOB, ("en",)), "email", Context({HOST: "Ann"}))
    assert "Ann invites you" in letter.text and "Reply to this email" in letter.text


async def test_the_invitee_takes_the_seat_by_joining_as_their_mail_id(table):
    await table.lobby(TELEGRAM[:3])
    await table.invite(HOST, BOB)
    joined = await table.send(BOB, {"type": "join"}, channel="email")

    loaded = await table.store.load(GAME)
    assert loaded.state.players == (*TELEGRAM[:3], BOB)
    (seated,) = [e for e in table.replies("email", joined) if e.event.type == "player_joined"]
    assert seated.event.player == BOB and BOB in seated.readers
    assert [e.event.type for e in table.replies("telegram", joined)] == ["player_joined"], \
        "the Telegram group hears that the mail player sat down"


async def test_only_the_host_may_invite(table):
    await table.lobby(TELEGRAM[:3])
    refused = await table.invite("tg:2", BOB)
    assert table.refusal(refused) == "not_host"
    assert table.got["email"] == [], "no invitation reaches the invitee"


async def test_once_the_game_has_started_nobody_can_be_invited(table):
    await table.lobby(TELEGRAM)
    await table.send(HOST, {"type": "start_game"})
    refused = await table.invite(HOST, BOB)
    assert table.refusal(refused) == "wrong_phase"
    assert not [e for e in table.got["email"] if e.event.type == "player_invited"]


NOT_EMAIL_PLAYERS = ["mail:bob", "mail:bob@localhost", "mail:a@b@example.org", "mail:bob smith@example.org",
                     "mail:@example.org", "mail:bob@example.", "mail:bob@.org", "mail:Bob@Example.org", "tg:42",
                     "bob@example.org"]


async def test_an_invitee_who_is_no_email_player_is_refused_as_malformed(table):
    await table.lobby(TELEGRAM[:3])
    for invitee in NOT_EMAIL_PLAYERS:
        refused = await table.invite(HOST, invitee)
        assert table.refusal(refused) == "malformed", invitee
    assert table.got["email"] == []


async def test_a_seated_player_is_refused_as_already_joined(table):
    await table.lobby(TELEGRAM[:3])
    await table.invite(HOST, BOB)
    await table.send(BOB, {"type": "join"}, channel="email")
    again = await table.invite(HOST, BOB)
    assert table.refusal(again) == "already_joined"


async def test_a_full_lobby_takes_no_invitation(table):
    await table.lobby(TELEGRAM, max_players=5)
    refused = await table.invite(HOST, BOB)
    assert table.refusal(refused) == "lobby_full"


async def test_an_invitation_to_a_game_that_does_not_exist_is_refused(table):
    refused = await table.invite(HOST, BOB, game="tg-100_404")
    assert table.refusal(refused) == "unknown_game"


async def test_an_email_host_invites_and_the_invitation_goes_to_email_alone(table):
    ann = "mail:ann@example.org"
    await table.send(ann, {"type": "create_game", "options": {}}, channel="email")
    command = await table.invite(ann, BOB, channel="email")
    (mail,) = table.replies("email", command)
    assert (mail.event.type, mail.readers) == ("player_invited", (ann, BOB))
    assert table.replies("telegram", command) == []
