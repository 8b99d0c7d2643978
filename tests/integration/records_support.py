"""Random finished games committed through the real store (as the engine commits them), and the
record recounted straight from the event log, for the record tests and bench/stats_bench.py."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from avalon.shared.protocol import EventEnvelope, audience_model, event_body
from avalon.services.engine.rules import CreateGame, Join, Options, StartGame, apply, new_game
from avalon.services.engine.simulate import random_command
from avalon.services.engine.store import Store

BASE = datetime(2026, 1, 1, tzinfo=timezone.utc)
OPTIONS = (Options(), replace(Options(), lady=True), replace(Options(), lady=True, excalibur=True))


def random_game(game_id: str, seed: int, people: list[str], table: str = "") -> list[tuple[object, list]]:
    """(state after, core events) per command of a random game of 5 to 10 of ``people``."""
    rng = random.Random(seed)
    seats = rng.sample(people, rng.randint(5, min(10, len(people))))
    options = OPTIONS[seed % len(OPTIONS)]
    commands = [CreateGame(actor=seats[0], game_id=game_id, seed=seed, options=options, table=table)]
    commands += [Join(actor=p) for p in seats[1:]] + [StartGame(actor=seats[0])]
    state, steps = new_game(), []
    while True:
        command = commands.pop(0) if commands else random_command(state, rng, 0.05)
        result = apply(state, command)
        if not hasattr(result, "state"):
            raise AssertionError(f"a legal command was refused: {command}: {result}")
        state = result.state
        steps.append((state, list(result.events)))
        if state.over:
            return steps


def envelopes(game_id: str, first_seq: int, events: list, at: datetime) -> list[EventEnvelope]:
    return [EventEnvelope(message_id=f"{game_id}:{first_seq + i}", game_id=game_id, seq=first_seq + i,
                          occurred_at=at, audience=audience_model(e.audience), event=event_body(e))
            for i, e in enumerate(events)]


def game_requests(game_id: str, seed: int, people: list[str], *, table: str = "",
                  at: datetime | None = None) -> list[dict]:
    """A random game's commits, one per command, as the engine makes them (``Store.commit_many``)."""
    at = at or BASE
    seq, requests = 1, []
    for index, (state, events) in enumerate(random_game(game_id, seed, people, table)):
        batch = envelopes(game_id, seq, events, at)
        request = dict(game_id=game_id, message_id=f"{game_id}#{index}", outcome="accepted",
                       events=[(e, ("test",)) for e in batch], state=state, expected_version=seq - 1)
        if index == 0:
            request["new_game_seed"] = seed
            request["expected_version"] = 0
        seq += len(batch)
        requests.append(request)
    return requests


async def commit_game(store: Store, game_id: str, seed: int, people: list[str], *, table: str = "",
                      at: datetime | None = None, per_command: bool = True) -> None:
    """One random game committed as the engine would: a commit per command (``per_command``), or the
    whole game in one commit (quicker, for a bench)."""
    requests = game_requests(game_id, seed, people, table=table, at=at)
    if not per_command:
        for request in requests[1:]:  # one batch: the game's row written once, from its first version
            request["expected_version"] = 0
        await store.commit_many(requests)
        return
    for request in requests:
        await store.commit_many([request])


async def commit_games(store: Store, count: int, people: list[str], tables: list[str], *, seed: int = 0,
                       per_command: bool = True, base: datetime = BASE) -> list[str]:
    ids = []
    for n in range(count):
        game_id = f"rg{seed}_{n}"
        await commit_game(store, game_id, seed * 100_000 + n, people, table=tables[n % len(tables)],
                          at=base + timedelta(minutes=n), per_command=per_command)
        ids.append(game_id)
    return ids


async def recount(store: Store, game_ids: list[str], forgotten: set[str] = frozenset()) -> dict:
    """Every stat straight from the event log: person -> counters; table (and host) -> person -> [games,
    wins]; table -> the games' ids, the latest first."""
    people: dict[str, Counter] = defaultdict(Counter)
    boards: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    hosts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    games_of: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
    for game_id in game_ids:
        log = await store.event_log(game_id, include_internal=True)
        created = next(e.event for e in log if e.event.type == "game_created")
        ended = [e for e in log if e.event.type == "game_ended"]
        assert len(ended) == 1
        end = ended[0].event
        table = created.table or created.host
        games_of[table].append((ended[0].occurred_at, game_id))
        teams = dict(end.teams)
        for person, role in end.roles:
            if person in forgotten:
                continue
            won = teams[person] is end.winner
            c = people[person]
            c["games"] += 1
            c["wins"] += won
            c[f"role:{role.value}"] += 1
            c[f"role_wins:{role.value}"] += won
            c[f"team:{teams[person].value}"] += 1
            c[f"size:{len(end.roles)}"] += 1
            c[f"size_wins:{len(end.roles)}"] += won
            shot = end.cause.value in ("merlin_assassinated", "assassin_missed", "shot_forfeited")
            if role.value == "merlin" and shot:
                c["merlin_shot_at"] += 1
                c["merlin_survived"] += end.cause.value != "merlin_assassinated"
            if role.value == "assassin" and shot:
                c["assassin_shots"] += 1
                c["assassin_hits"] += end.cause.value == "merlin_assassinated"
            for board in (boards[table], hosts[created.host]):
                board[person][0] += 1
                board[person][1] += won
    history = {t: [g for _, g in sorted(games, key=lambda x: (-x[0].timestamp(), x[1]))]
               for t, games in games_of.items()}
    return {"people": people, "boards": boards, "hosts": hosts, "history": history}


def counters_of(stats) -> Counter:
    """A PersonStats as the recount's counters."""
    c = Counter(games=stats.games, wins=stats.wins, merlin_shot_at=stats.merlin_shot_at,
                merlin_survived=stats.merlin_survived, assassin_shots=stats.assassin_shots,
                assassin_hits=stats.assassin_hits)
    for t in stats.by_role:
        c[f"role:{t.key}"] += t.games
        c[f"role_wins:{t.key}"] += t.wins
    for t in stats.by_team:
        c[f"team:{t.key}"] += t.games
    for t in stats.by_size:
        c[f"size:{t.key}"] += t.games
        c[f"size_wins:{t.key}"] += t.wins
    return +c  # zeros dropped, as in the recount
