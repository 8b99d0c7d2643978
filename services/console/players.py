"""The console channel's inbound side: scripted players, who read what the engine offers them and
answer at once with one of the commands offered (a few dice, seeded), as the people of a group
would with its buttons. They also keep the game moving: should it ever wait for nobody, the open
deadline is brought forward to now (on the engine's clock) instead of being waited for."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta, timezone

from avalon.shared.game import Card, CommandKind, Options
from avalon.shared.protocol import ChoicesOffered, CommandEnvelope, EventEnvelope

K = CommandKind


class DemoClock:
    """The engine's clock in a demo: the wall clock, moved on past each deadline the demo does not
    wait for (the open phase's, once)."""

    def __init__(self) -> None:
        self.phase: tuple[int, int] | None = None  # the open phase: (phase id, timeout seconds)
        self.hurried: set[int] = set()
        self.skew = timedelta(0)  # how far the engine's clock runs ahead of the wall clock

    def __call__(self) -> datetime:
        return datetime.now(timezone.utc) + self.skew

    def hurry(self) -> tuple[int, int] | None:
        """Move past the open phase's deadline (once per phase); returns that phase, or None."""
        if self.phase is None or self.phase[0] in self.hurried:
            return None
        self.hurried.add(self.phase[0])
        self.skew += timedelta(seconds=self.phase[1])
        return self.phase


class ScriptedPlayers:
    def __init__(self, bus, scheduler, game_id: str, players: list[str], names: dict[str, str], words: dict,
                 rng: random.Random) -> None:
        self.bus, self.scheduler, self.game_id = bus, scheduler, game_id
        self.players, self.names, self.words, self.rng = players, names, words, rng
        self.clock = DemoClock()
        self.outstanding: set[str] = set()  # commands sent whose first event has not come back yet
        self.over = asyncio.Event()
        self.settled = asyncio.Event()  # the game is over, or every command sent has been answered
        self._sent = 0

    async def open(self, options: Options) -> None:
        """The host opens the lobby, everyone joins, the host deals."""
        host = self.players[0]
        await self.send(host, {"type": "create_game", "options": options})
        for player in self.players[1:]:
            await self.send(player, {"type": "join"})
        await self.send(host, {"type": "start_game"})

    async def send(self, actor: str, body: dict, phase_id: int | None = None) -> None:
        self._sent += 1
        envelope = CommandEnvelope(message_id=f"demo:{self._sent}", game_id=self.game_id, actor=actor,
                                   channel="console", phase_id=phase_id, command=body)
        self.outstanding.add(envelope.message_id)
        await self.bus.send_command(envelope)

    async def until_over(self) -> None:
        """Wait for the end; a game waiting for nobody has its deadline brought forward to now."""
        while True:
            await self.settled.wait()
            self.settled.clear()
            if self.over.is_set():
                return
            await self.bus.idle()  # what is still on its way first
            if self.outstanding or self.over.is_set():
                continue
            hurried = self.clock.hurry()  # (never in a demo so far: every offer is answered)
            if hurried is not None:
                phase_id, timeout = hurried
                self.outstanding.add(f"timeout:{self.game_id}:{phase_id}")  # the scheduler's command id
                self.scheduler.arm(self.game_id, phase_id, datetime.now(timezone.utc), timeout)

    async def on_event(self, envelope: EventEnvelope) -> None:
        self.outstanding.discard(envelope.caused_by or "")
        e = envelope.event
        if e.type == "phase_opened":
            self.clock.phase = (e.phase_id, e.timeout_seconds)
        if e.type == "choices_offered":
            await self.act(e)
        if e.type in ("game_ended", "game_cancelled"):
            self.over.set()
        if self.over.is_set() or not self.outstanding:
            self.settled.set()

    async def act(self, offer: ChoicesOffered) -> None:
        """Answer an offer at once with one of the commands offered (a few dice, seeded)."""
        rng, me, pid = self.rng, offer.player, offer.phase_id
        choices = {c.kind: c for c in offer.choices}
        if c := choices.get(K.PROPOSE_TEAM):
            team = rng.sample(list(c.targets), c.count)
            sword = rng.choice([p for p in team if p != me]) if c.excalibur else None
            await self.send(me, {"type": "propose_team", "team": team, "excalibur": sword}, pid)
        elif K.CAST_VOTE in choices:
            await self.send(me, {"type": "cast_vote", "approve": rng.random() < 0.7}, pid)
        elif c := choices.get(K.PLAY_CARD):
            fail = Card.FAIL in c.cards and (Card.SUCCESS not in c.cards or rng.random() < 0.5)
            await self.send(me, {"type": "play_card", "card": "fail" if fail else "success"}, pid)
        elif c := choices.get(K.USE_EXCALIBUR):
            target = rng.choice(c.targets) if c.targets and rng.random() < 0.5 else None
            await self.send(me, {"type": "use_excalibur", "target": target}, pid)
        elif c := choices.get(K.USE_LADY):
            await self.send(me, {"type": "use_lady", "target": rng.choice(c.targets)}, pid)
        elif c := choices.get(K.ASSASSINATE) or choices.get(K.ACCUSE):
            target = rng.choice(c.targets)
            if K.CONFER in choices:  # a word in the evil council first
                merlin = self.words["roles"]["merlin"]
                await self.send(me, {"type": "confer", "text": f"{merlin}: {self.names[target]}?"}, pid)
            await self.send(me, {"type": c.kind.value, "target": target}, pid)
        elif K.SPEAK_LAST_WORD in choices:
            await self.send(me, {"type": "speak_last_word", "text": f"{self.words['roles']['merlin']}?"}, pid)
