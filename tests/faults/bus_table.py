"""Many games played over the bus by scripted players behind a gateway of the suite's own (channel
``test``), and the accounting that says whether a fault lost or doubled anything.

The players answer every ``choices_offered`` they are sent, once, with a command whose id is fixed
by (game, player, phase) (once more only when it was refused for naming someone whose seat was taken
meanwhile: then with the newcomer in their place, as a gateway redraws the buttons): a send the
broker did not confirm is sent again with the same id until it is confirmed, as a gateway does. A
confirmed send is a move; the player never sends it again, so a move the engine loses stays lost
(and its game stalls) instead of being papered over.

Each game may have a sleeper who lets its first vote run to the deadline, so that deadlines come due
across the faults.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import text

from avalon.services.engine.store import Store
from avalon.shared.bus.rabbit import RabbitBus
from avalon.shared.protocol import CommandEnvelope, EventEnvelope
from tests.faults.ledger import Tally

#: Events that are one player's move: the same (type, player, phase) twice is a doubled move.
MOVES = {"team_proposed": "leader", "vote_cast": "player", "card_played": "player", "lady_used": "holder",
         "excalibur_used": "holder", "merlin_accused": "shooter"}
VOTE_SECONDS = 30  # the shortest deadline the rules allow: the sleepers' votes time out after it


@dataclass
class Game:
    id: str
    players: list[str]
    sleeper: str | None  # lets the first vote run out
    slept: bool = False
    over: bool = False
    answered: set[tuple[str, int]] = field(default_factory=set)


class BusTable:
    """The suite's own gateway on channel ``test``: its players, what it was sent, what it sent."""

    def __init__(self, url: str, prefix: str, *, seed: int = 1) -> None:
        self.url, self.prefix = url, prefix
        self.rng = random.Random(seed)
        self.bus: RabbitBus | None = None
        self.games: dict[str, Game] = {}
        self.received: Counter[tuple[str, int]] = Counter()  # (game, seq) -> deliveries
        self.moves: dict[str, CommandEnvelope] = {}  # confirmed commands by message id
        self.send_retries = 0
        self.offers: dict[tuple[str, str], object] = {}  # (game, player) -> the last choices_offered
        self.successors: dict[tuple[str, str], str] = {}  # (game, player replaced) -> who took the seat
        self.refused: dict[tuple[str, str], tuple[int, str]] = {}  # (game, actor) -> (phase, the one gone)
        self._tasks: set[asyncio.Task] = set()
        self.everyone_done = asyncio.Event()

    async def start(self) -> None:
        self.bus = RabbitBus(self.url, prefix=self.prefix)
        await self.bus.start()
        await self.bus.subscribe_events("faults", "test.#", self._on_event)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.bus is not None:
            await self.bus.close()

    # -- playing ------------------------------------------------------------------------

    async def open_games(self, n: int, *, players: int = 5, sleepers: int = 0, lady_every: int = 3) -> None:
        """Opens n games (the first ``sleepers`` of them with a sleeper) and starts them."""
        for g in range(n):
            game_id = f"{self.prefix}-g{g}"
            ids = [f"test:{self.prefix}-g{g}-p{k}" for k in range(players)]
            game = Game(game_id, ids, sleeper=ids[-1] if g < sleepers else None)
            self.games[game_id] = game
            options: dict = {"lady": g % lady_every == 0 and players >= 5}
            if game.sleeper:
                options["timers"] = {"vote": VOTE_SECONDS}
            await self._send(game, ids[0], {"type": "create_game", "options": options}, None, key="create")
            for p in ids[1:]:
                await self._send(game, p, {"type": "join"}, None, key="join")
            await self._send(game, ids[0], {"type": "start_game"}, None, key="start")

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _on_event(self, envelope: EventEnvelope) -> None:
        game = self.games.get(envelope.game_id)
        if game is None:
            return
        self.received[(envelope.game_id, envelope.seq)] += 1
        e = envelope.event
        if e.type == "choices_offered":
            self.offers[(game.id, e.player)] = e
            if (e.player, e.phase_id) not in game.answered:
                game.answered.add((e.player, e.phase_id))
                if e.player == game.sleeper and not game.slept and any(c.kind.value == "cast_vote" for c in e.choices):
                    game.slept = True  # this vote runs to its deadline
                    return
                self._answer(game, e, key=f"{e.phase_id}")
        elif e.type == "command_rejected":
            self._refused(game, envelope)
        elif e.type == "seat_taken":
            self.successors[(game.id, e.previous)] = e.player
            for (g, actor), (phase, gone) in list(self.refused.items()):
                if g == game.id and gone == e.previous:  # the refusal came first
                    del self.refused[(g, actor)]
                    self._again(game, actor, phase)
        elif e.type in ("game_ended", "game_cancelled"):
            game.over = True
            if all(g.over for g in self.games.values()):
                self.everyone_done.set()

    def _answer(self, game: Game, offer, *, key: str) -> None:
        body = self._choose(offer)
        if body is not None:
            self._spawn(self._send(game, offer.player, body, offer.phase_id, key=key))

    def _refused(self, game: Game, envelope: EventEnvelope) -> None:
        """A move refused because it named someone who has left the table (its buttons crossed a seat's
        takeover): answered again, as a player does, from their buttons with the newcomer in the place of
        the one who left (as a gateway's table redraws them on seat_taken), once seat_taken is here."""
        move, e = self.moves.get(envelope.caused_by or ""), envelope.event
        if move is None or move.phase_id is None or getattr(e.reason, "value", e.reason) != "unknown_player":
            return
        gone = e.params.get("player")
        if (game.id, gone) in self.successors:
            self._again(game, move.actor, move.phase_id)
        else:
            self.refused[(game.id, move.actor)] = (move.phase_id, gone)

    def _again(self, game: Game, actor: str, phase_id: int) -> None:
        offer = self.offers.get((game.id, actor))
        if offer is None or offer.phase_id != phase_id:
            return  # the phase moved on meanwhile: its new buttons are answered as they come

        def swap(p: str) -> str:
            return self.successors.get((game.id, p), p)
        fresh = offer.model_copy(update={"choices": tuple(
            c.model_copy(update={"targets": tuple(swap(p) for p in c.targets)}) for c in offer.choices)})
        self._answer(game, fresh, key=f"{phase_id}-again")

    def _choose(self, offer) -> dict | None:
        kinds = {c.kind.value: c for c in offer.choices}
        rng = self.rng
        if c := kinds.get("propose_team"):
            return {"type": "propose_team", "team": rng.sample(list(c.targets), c.count), "excalibur": None}
        if "cast_vote" in kinds:
            return {"type": "cast_vote", "approve": rng.random() < 0.8}
        if c := kinds.get("play_card"):
            fail = "fail" in [x.value for x in c.cards] and rng.random() < 0.5
            return {"type": "play_card", "card": "fail" if fail else "success"}
        if c := kinds.get("assassinate"):
            return {"type": "assassinate", "target": rng.choice(list(c.targets))}
        if c := kinds.get("use_lady"):
            return {"type": "use_lady", "target": rng.choice(list(c.targets))}
        return None

    async def _send(self, game: Game, actor: str, body: dict, phase_id: int | None, *, key: str) -> None:
        """Until the broker confirms it (the same id every time): then it is a move."""
        envelope = CommandEnvelope(message_id=f"{game.id}/{actor}/{key}", game_id=game.id, actor=actor,
                                   channel="test", phase_id=phase_id, command=body)
        deadline = time.monotonic() + 120
        while True:
            try:
                await self.bus.send_command(envelope)
                break
            except Exception:  # noqa: BLE001 - the broker is away: try again, as a gateway does
                self.send_retries += 1
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.25)
        self.moves[envelope.message_id] = envelope

    async def wait_all_over(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self.everyone_done.wait(), timeout)
        except asyncio.TimeoutError:
            stuck = [g.id for g in self.games.values() if not g.over]
            raise AssertionError(f"{len(stuck)} of {len(self.games)} games did not end: {stuck[:10]}") from None

    # -- accounting ---------------------------------------------------------------------

    async def account(self, database_url: str, suite: str, *, faults: int,
                      outages: list[tuple[float, float]]) -> Tally:
        """What the engine's database says happened, against what the players sent and were sent.

        ``outages``: (start, end) wall-clock times (time.time()) when the engine could not act on a
        deadline (killed, broker or database away): a deadline that came due during one is kept if
        it fired within slack of the outage's end."""
        store = Store(database_url)
        tally = Tally(suite, games=len(self.games), faults=faults, moves=len(self.moves))
        problems: list[str] = []
        try:
            async with store.engine.connect() as conn:
                processed = {row[0] for row in await conn.execute(text("SELECT message_id FROM processed_commands"))}
            lost = sorted(set(self.moves) - processed)
            tally.moves_lost = len(lost)
            if lost:
                problems.append(f"moves never applied: {lost[:5]}")
            for game in self.games.values():
                log = await store.event_log(game.id, include_internal=True)
                self._check_game(game, log, tally, problems, outages)
        finally:
            await store.close()
        tally.duplicates = sum(n - 1 for n in self.received.values() if n > 1)
        self.problems = problems
        return tally

    def _check_game(self, game: Game, log: list[EventEnvelope], tally: Tally, problems: list[str],
                    outages: list[tuple[float, float]]) -> None:
        phase_id, moves, causes, fired = -1, Counter(), defaultdict(list), Counter()
        deadlines: dict[int, datetime] = {}
        for envelope in log:
            e = envelope.event
            if e.type == "phase_opened":
                phase_id = e.phase_id
                if envelope.deadline_at is not None:
                    deadlines[e.phase_id] = envelope.deadline_at
            if e.type in MOVES:
                moves[(e.type, getattr(e, MOVES[e.type]), phase_id)] += 1
            if envelope.caused_by:
                causes[envelope.caused_by].append(envelope.seq)
            if "test" in envelope.prev_seq:  # sent to this gateway: each reader was to get it
                tally.events += max(1, len(envelope.readers))
                if self.received[(game.id, envelope.seq)] == 0:
                    tally.events_lost += max(1, len(envelope.readers))
                    problems.append(f"{game.id} seq {envelope.seq} ({e.type}) never delivered")
            if e.type == "deadline_missed":
                tally.deadlines += 1
                fired[e.phase_id] += 1
                due = deadlines[e.phase_id].timestamp()
                at = envelope.occurred_at.timestamp()
                late_ok = max([due] + [end for start, end in outages if start <= due + 5]) + 15
                if not due - 2 <= at <= late_ok:
                    tally.deadlines_missed += 1
                    problems.append(f"{game.id} phase {e.phase_id}: deadline {deadlines[e.phase_id]}, "
                                    f"timed out at {envelope.occurred_at}")
        doubled = [key for key, n in moves.items() if n > 1]
        doubled += [cause for cause, seqs in causes.items() if max(seqs) - min(seqs) + 1 != len(seqs)]
        doubled += [f"deadline of phase {p} fired {n} times" for p, n in fired.items() if n > 1]
        tally.moves_doubled += len(doubled)
        if doubled:
            problems.append(f"{game.id} doubled: {doubled[:5]}")
        if not any(env.event.type == "game_ended" for env in log):
            problems.append(f"{game.id} has no game_ended")
        if game.sleeper is not None and not game.slept:
            problems.append(f"{game.id}: its sleeper never slept")


def seconds_since(start: float) -> str:
    return f"{time.monotonic() - start:.1f} s"


__all__ = ["BusTable", "Game", "MOVES", "VOTE_SECONDS", "seconds_since", "timedelta"]
