"""Takeovers over the bus for the fault suite: games of the suite's own gateway (``BusTable``) in which one
player (the victim) goes silent at their first vote, their seat is opened (by the host, or by the missed
deadline), and a newcomer takes it while the engine is SIGKILLed around the ``take_seat`` command; then
what the engine's log and the gateway's deliveries must say about it.

Kill moments: ``before`` (the engine is dead when the command is sent: it waits in the queue),
``random`` (a few milliseconds after the broker confirmed it), ``committed`` (as soon as the database has
the command's id), ``published`` (as soon as the gateway has seat_taken: the command is not yet acknowledged).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from avalon.services.engine.store import Store
from avalon.shared.protocol import CommandEnvelope, EventEnvelope
from tests.faults.bus_table import BusTable, Game
from tests.faults.world import ServiceProcess


@dataclass
class Takeover:
    game: Game
    victim: str
    newcomer: str
    by_deadline: bool
    held: asyncio.Event = field(default_factory=asyncio.Event)  # the victim went silent at a vote
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    taken: asyncio.Event = field(default_factory=asyncio.Event)  # the gateway has seat_taken
    vote_phase: int | None = None  # the vote the victim left unanswered
    envelope: CommandEnvelope | None = None  # the take_seat
    stale: CommandEnvelope | None = None  # the victim's vote, sent after the takeover
    moment: str = ""
    window: str = ""  # where the kill landed, as the database and the gateway said after it


class TakeoverTable(BusTable):
    """A ``BusTable`` whose takeover games have a victim, a newcomer, and every delivery kept."""

    def __init__(self, url: str, prefix: str, *, seed: int = 1) -> None:
        super().__init__(url, prefix, seed=seed)
        self.takeovers: dict[str, Takeover] = {}
        self.delivered: list[EventEnvelope] = []  # every delivery, duplicates included

    async def open_takeover_games(self, host_opened: int, deadline_opened: int, background: int) -> None:
        """Games 0.. with a takeover (the host opens the seat; then ``deadline_opened`` games whose seat
        opens after one missed vote, of 30 s), then ``background`` games played through."""
        n = host_opened + deadline_opened
        for g in range(n + background):
            game_id = f"{self.prefix}-g{g}"
            ids = [f"test:{game_id}-p{k}" for k in range(5)]
            game = Game(game_id, ids, sleeper=None)
            self.games[game_id] = game
            options: dict = {"lady": g % 2 == 0}
            if host_opened <= g < n:
                options |= {"timers": {"vote": 30}, "seat_opens_after": 1}
            if g < n:
                self.takeovers[game_id] = Takeover(game, ids[1 + g % 4], f"test:{game_id}-sub", g >= host_opened)
            await self._send(game, ids[0], {"type": "create_game", "options": options}, None, key="create")
            for p in ids[1:]:
                await self._send(game, p, {"type": "join"}, None, key="join")
            await self._send(game, ids[0], {"type": "start_game"}, None, key="start")

    async def _on_event(self, envelope: EventEnvelope) -> None:
        game = self.games.get(envelope.game_id)
        if game is None:
            return
        self.delivered.append(envelope)
        t = self.takeovers.get(game.id)
        e = envelope.event
        if t is not None:
            if e.type == "choices_offered" and e.player == t.victim:
                if not t.held.is_set() and any(c.kind.value == "cast_vote" for c in e.choices):
                    t.vote_phase = e.phase_id
                    t.held.set()
                if t.held.is_set():  # silent from their first vote on: received, never answered
                    game.answered.add((e.player, e.phase_id))
                    self.received[(envelope.game_id, envelope.seq)] += 1
                    return
            elif e.type == "seat_opened":
                t.opened.set()
            elif e.type == "seat_taken":
                t.taken.set()
        await super()._on_event(envelope)

    async def open_seat(self, t: Takeover) -> None:
        await self._send(t.game, t.game.players[0], {"type": "open_seat", "player": t.victim}, None, key="open")

    def take_seat(self, t: Takeover) -> CommandEnvelope:
        t.envelope = CommandEnvelope(message_id=f"{t.game.id}/{t.newcomer}/take", game_id=t.game.id,
                                     actor=t.newcomer, channel="test", command={"type": "take_seat",
                                                                                "player": t.victim})
        self.moves[t.envelope.message_id] = t.envelope
        return t.envelope

    async def stale_vote(self, t: Takeover) -> None:
        """The one replaced presses their old vote button after the takeover."""
        t.stale = CommandEnvelope(message_id=f"{t.game.id}/{t.victim}/stale", game_id=t.game.id, actor=t.victim,
                                  channel="test", phase_id=t.vote_phase, command={"type": "cast_vote",
                                                                                   "approve": True})
        await self.bus.send_command(t.stale)
        self.moves[t.stale.message_id] = t.stale


async def takeover_under_kill(table: TakeoverTable, engine: ServiceProcess, store: Store, t: Takeover,
                              moment: str, *, resend: bool, rng: random.Random,
                              outages: list[tuple[float, float]]) -> None:
    """``t``'s take_seat with the engine SIGKILLed at ``moment``, restarted, and (``resend``) the same
    message sent again as a gateway that saw no confirmation does; the bus delivers again what was not
    acknowledged. Returns once the gateway has seat_taken."""
    t.moment = moment
    envelope = table.take_seat(t)
    start = time.time()
    if moment == "before":
        engine.kill()
        await table.bus.send_command(envelope)
    else:
        await table.bus.send_command(envelope)
        if moment == "random":
            await asyncio.sleep(rng.uniform(0, 0.03))
        elif moment == "committed":
            while not await store.seen(envelope.message_id):
                await asyncio.sleep(0.001)
        elif moment == "published":
            await asyncio.wait_for(t.taken.wait(), 20)
        engine.kill()
    delivered = t.taken.is_set()
    committed = await store.seen(envelope.message_id)
    t.window = "delivered" if delivered else "committed, not delivered" if committed else "not committed"
    await engine.start()
    outages.append((start, time.time()))
    if resend:
        await table.bus.send_command(envelope)
    await asyncio.wait_for(t.taken.wait(), 30)


def check_takeover(t: Takeover, log: list[EventEnvelope], delivered: list[EventEnvelope]) -> list[str]:
    """What a takeover killed in the middle must leave: one seat_taken, one role card and one briefing to
    the newcomer alone (the second card of that seat), nothing private to the one replaced after it, their
    stale vote refused with seat_taken, and the stream without a gap or a double, its chain to the gateway
    intact."""
    g, problems = t.game.id, []
    seqs = [e.seq for e in log]
    if seqs != list(range(1, len(seqs) + 1)):
        problems.append(f"{g}: the stream's seqs are not 1..{len(seqs)}: {seqs}")
    chained = [e for e in log if "test" in e.prev_seq]
    for before, after in zip([None, *chained], chained):
        if after.prev_seq["test"] != (before.seq if before else 0):
            problems.append(f"{g} seq {after.seq}: prev_seq {after.prev_seq['test']}, the chain is broken")
    taken = [e for e in log if e.event.type == "seat_taken"]
    if [(e.event.player, e.event.previous) for e in taken] != [(t.newcomer, t.victim)]:
        problems.append(f"{g}: seat_taken {[(e.seq, e.event.player) for e in taken]}, not once")
        return problems
    seat = taken[0].event.seat
    cards = [e for e in log if e.event.type == "role_assigned" and e.event.player in (t.victim, t.newcomer)]
    if [e.readers for e in cards] != [(t.victim,), (t.newcomer,)] or cards[0].event.role != cards[1].event.role:
        problems.append(f"{g}: the seat's role cards {[(e.seq, e.readers, e.event.role) for e in cards]}")
    briefings = [e for e in log if e.event.type == "seat_briefing"]
    if [(e.readers, e.event.seat, e.event.previous) for e in briefings] != [((t.newcomer,), seat, t.victim)]:
        problems.append(f"{g}: seat_briefing {[(e.seq, e.readers) for e in briefings]}, not once to the newcomer")
    after = [e for e in log if e.seq > taken[0].seq and t.victim in e.readers]
    if after:
        problems.append(f"{g}: the one replaced still reads {[(e.seq, e.event.type) for e in after]}")
    got = {e.seq: e for e in delivered if e.game_id == g and e.seq}
    for kind in ("seat_taken", "role_assigned", "seat_briefing"):
        mine = [e for e in got.values() if e.event.type == kind and t.newcomer in e.readers]
        if len(mine) != 1:
            problems.append(f"{g}: the newcomer was delivered {len(mine)} distinct {kind}")
    answer = [e for e in delivered if t.stale is not None and e.caused_by == t.stale.message_id]
    said = {(e.event.type, getattr(getattr(e.event, "reason", None), "value", None), e.audience.players)
            for e in answer}
    if said != {("command_rejected", "seat_taken", (t.victim,))}:
        problems.append(f"{g}: the one replaced's stale vote was answered {sorted(map(str, said))}")
    return problems


def raw_duplicates(delivered: list[EventEnvelope], game_id: str) -> int:
    """Deliveries of one of the game's events beyond the first (at least once: a gateway drops them by seq)."""
    counts = Counter(e.seq for e in delivered if e.game_id == game_id and e.seq)
    return sum(n - 1 for n in counts.values())
