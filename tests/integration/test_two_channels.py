"""One game, two channels: three players on a channel with no group (each reads the public story
in private, as email players will) and two on another, each channel a minimal one built on the
delivery core (roster, recipients, outbox). Every player gets every public event and only their
own private ones, and every name is rendered, whichever channel its player sits on."""

from __future__ import annotations

import asyncio
import random

from avalon.services.engine.deadlines import DeadlineScheduler
from avalon.services.channels import channel_map
from avalon.services.engine.service import EngineService
from avalon.services.engine.store import Store
from avalon.shared.bus import InProcessBus
from avalon.shared.delivery.outbox import Outbox, Outgoing
from avalon.shared.delivery.roster import Roster
from avalon.shared.narration.render import Context, Narrator, Recipient
from avalon.shared.protocol import CommandEnvelope

GAME = "mixed-1"
PEOPLE = {"test:1": "Ann", "test:2": "Bob", "test:3": "Cleo", "mail:dan@example.org": "Dan",
          "mail:eve@example.org": "Eve"}


class MiniChannel:
    """A channel on the core: its players read everything in private (no group)."""

    def __init__(self, name: str, prefix: str, bus, engine, rng: random.Random) -> None:
        self.name, self.bus, self.rng = name, bus, rng
        self.roster = Roster(prefix)
        self.narrator = Narrator()
        self.inbox: dict[str, list[tuple[str, str]]] = {}  # player -> (event id, text)
        self.outbox = Outbox(engine, name, self.deliver)
        self.answered: set = set()

    async def start(self) -> None:
        await self.outbox.start()
        await self.bus.subscribe_events(self.name, f"{self.name}.#", self.on_event)

    async def deliver(self, row, slot_ref):
        self.inbox.setdefault(row.recipient, []).append((row.event_id, row.body["text"]))
        return None

    async def on_event(self, envelope) -> None:
        readers = self.roster.recipients(envelope)
        names = Context(self.roster.names())
        out = []
        for reader in readers:
            text = self.narrator.render(envelope, Recipient(reader.player, reader.languages), "email", names).text
            out.append(Outgoing(reader.player, {"text": text}))
        if await self.outbox.stage(envelope.message_id, envelope.game_id, out):
            e = envelope.event
            if e.type == "choices_offered" and self.roster.mine(e.player) and (e.player, e.phase_id) not in self.answered:
                self.answered.add((e.player, e.phase_id))
                await act(self.bus, e, self.rng)


async def send(bus, actor: str, body: dict, phase_id: int | None = None, game: str = GAME) -> None:
    await bus.send_command(CommandEnvelope(game_id=game, actor=actor, channel="test", phase_id=phase_id,
                                           command=body))


async def act(bus, offer, rng: random.Random) -> None:
    kinds = {c.kind.value: c for c in offer.choices}
    me, pid = offer.player, offer.phase_id
    if c := kinds.get("propose_team"):
        await send(bus, me, {"type": "propose_team", "team": rng.sample(list(c.targets), c.count),
                             "excalibur": None}, pid)
    elif "cast_vote" in kinds:
        await send(bus, me, {"type": "cast_vote", "approve": rng.random() < 0.8}, pid)
    elif c := kinds.get("play_card"):
        await send(bus, me, {"type": "play_card", "card": rng.choice([x.value for x in c.cards])}, pid)
    elif c := kinds.get("use_lady"):
        await send(bus, me, {"type": "use_lady", "target": rng.choice(list(c.targets))}, pid)
    elif c := kinds.get("assassinate"):
        await send(bus, me, {"type": "assassinate", "target": rng.choice(list(c.targets))}, pid)


async def test_a_game_across_two_channels_reaches_every_player_with_every_name(tmp_path):
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'mixed.db'}")
    await store.migrate()
    bus = InProcessBus()
    await bus.start()
    engine = EngineService(store, bus, DeadlineScheduler(bus), channels=channel_map())
    rng = random.Random(3)
    channels = [MiniChannel("test", "test:", bus, store.engine, rng),
                MiniChannel("email", "mail:", bus, store.engine, rng)]
    for channel in channels:
        await channel.start()
    await engine.start()
    try:
        for player, name in PEOPLE.items():
            await send(bus, player, {"type": "update_profile", "display_name": name}, game=f"profile:{player}")
        players = list(PEOPLE)
        await send(bus, players[0], {"type": "create_game", "options": {"lady": True}})
        for player in players[1:]:
            await send(bus, player, {"type": "join"})
        await send(bus, players[0], {"type": "start_game"})
        for _ in range(600):
            await bus.idle()
            loaded = await store.load(GAME)
            if loaded is not None and loaded.state.over:
                break
            await asyncio.sleep(0.02)
        assert loaded.state.over, "the game did not end"
        await bus.idle()
        for channel in channels:
            await channel.outbox.idle()
        log = await store.event_log(GAME)
    finally:
        await engine.stop()
        for channel in channels:
            await channel.outbox.close()
        await bus.close()
        await store.close()

    got = {p: {event for event, _ in c.inbox.get(p, [])} for c in channels for p in players if c.roster.mine(p)}
    texts = [text for c in channels for box in c.inbox.values() for _, text in box]
    started = next(i for i, e in enumerate(log) if e.event.type == "game_started")
    assert all(set(e.readers) == set(players) for e in log[started:] if e.audience.kind.value == "public")
    for player in players:
        # public: every event from the moment they sat down (a lobby they had not joined yet is not theirs)
        public = [e.message_id for e in log if e.audience.kind.value == "public" and player in e.readers]
        mine = [e.message_id for e in log if player in e.audience.players]
        missing = [m for m in public + mine if m not in got[player]]
        assert not missing, f"{player} never got {missing[:5]}"
        strangers = [e.message_id for e in log if e.audience.kind.value == "players"
                     and player not in e.audience.players and e.message_id in got[player]]
        assert not strangers, f"{player} got another player's private events {strangers[:5]}"
    assert not [t for t in texts if "test:" in t or "mail:" in t], "every player is named, on both channels"
    for name in PEOPLE.values():
        assert any(name in t for t in texts)
