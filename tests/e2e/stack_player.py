"""Scripted players inside the compose stack: run in a container of the narrator's image
(``docker compose run --rm -T engine python3 - MODE ...`` with this file on stdin), so they use
the installed package, the stack's RabbitMQ and the narration files as the image carries them.

Modes (each prints one JSON line for tests/e2e/test_compose_stack.py):

- ``play GAME``: five players (``test:1``..``test:5``, channel ``test``) open, join, start and
  play a whole game through the stack's engine, answering every ``choices_offered``; every event
  is rendered for its readers in each of the six languages. Prints the events seen, the messages
  rendered per language and the winner. An event seen twice (a seq already seen: an engine that took
  the game over publishes again what the one before it may have published) is counted in
  ``duplicates`` and not handled again; every new event's ``prev_seq["test"]`` must be the seq of the
  one before it, else it is counted in ``gaps`` (a lost event).
  ``play GAME Q1 Q2 ...``: the same, holding the game after the Q-th ``quest_resolved``: it prints
  ``PAUSED Q`` and answers nothing more until the file ``/tmp/go-Q`` exists in its container (the
  test stops an engine meanwhile: ``docker exec CONTAINER touch /tmp/go-Q``). Each command sent is
  told on a line of its own (``SENT propose_team``), once the broker has it.
- ``queue PREFIX N``: declares the subscription ``PREFIX`` and sends N ``create_game`` commands
  (games ``PREFIX-1``..), for an engine that is not running.
- ``collect PREFIX N``: waits for the ``lobby_opened`` of those N games on that subscription.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys

from avalon.shared.bus.rabbit import RabbitBus
from avalon.shared.narration.render import LOCALES, Context, Narrator, Recipient
from avalon.shared.protocol import CommandEnvelope

PLAYERS = [f"test:{i}" for i in range(1, 6)]
NAMES = dict(zip(PLAYERS, ["Ann", "Bob", "Cleo", "Dan", "Eve"]))
TIMEOUT = 120.0
#: a whole game, the time the test holds it at its pauses included (the test's own steps time out first)
GAME_TIMEOUT = 600.0


def bus() -> RabbitBus:
    return RabbitBus(os.environ["AMQP_URL"], prefix=os.environ.get("BUS_PREFIX", "avalon"))


async def send(b: RabbitBus, game: str, actor: str, body: dict, phase_id: int | None = None) -> None:
    # a publish cut off by a RabbitMQ node stopping is sent again by the bus itself (the engine applies
    # its message id once): before it did, the game waited for good for a vote lost that way
    await b.send_command(CommandEnvelope(game_id=game, actor=actor, channel="test", phase_id=phase_id,
                                         command=body))
    print(f"SENT {body['type']}", flush=True)  # on the broker: the test may stop an engine now


async def play(game: str, pauses: tuple[int, ...] = ()) -> dict:
    b = bus()
    await b.start()
    narrator, rng = Narrator(), random.Random(7)
    rendered = {locale: 0 for locale in LOCALES}
    seen: list[str] = []
    over: asyncio.Future = asyncio.get_running_loop().create_future()
    answered: set[tuple[str, int]] = set()
    seqs: set[int] = set()
    last = 0  # the seq of the last event of the game's stream seen on this channel
    duplicates: list[int] = []
    gaps: list[list[int]] = []
    quests = 0

    async def on_event(envelope) -> None:
        nonlocal last, quests
        if envelope.game_id != game:
            return
        e = envelope.event
        if envelope.seq:  # 0: a reply outside the game's stream
            if envelope.seq in seqs:
                duplicates.append(envelope.seq)
                return
            seqs.add(envelope.seq)
            if envelope.prev_seq.get("test", last) != last:
                gaps.append([last, envelope.prev_seq["test"], envelope.seq])
            last = envelope.seq
        seen.append(e.type)
        if e.type == "quest_resolved":
            quests += 1
            if quests in pauses:
                print(f"PAUSED {quests}", flush=True)
                go = f"/tmp/go-{quests}"
                while not os.path.exists(go):
                    await asyncio.sleep(0.02)
        readers = [None] if envelope.audience.kind.value == "public" else list(envelope.audience.players)
        for locale in LOCALES:  # an event counts once every one of its readers has a text
            texts = [narrator.render(envelope, Recipient(reader, (locale,)), "email", Context(NAMES)).text
                     for reader in readers]
            rendered[locale] += all(t.strip() for t in texts)
        if e.type == "choices_offered" and (e.player, e.phase_id) not in answered:
            answered.add((e.player, e.phase_id))
            await act(b, game, e, rng)
        if e.type in ("game_ended", "game_cancelled") and not over.done():
            over.set_result(getattr(e, "winner", None))

    await b.subscribe_events(f"stack-play-{game}", "test.#", on_event)
    await send(b, game, PLAYERS[0], {"type": "create_game", "options": {}})
    for player in PLAYERS[1:]:
        await send(b, game, player, {"type": "join"})
    await send(b, game, PLAYERS[0], {"type": "start_game"})
    winner = await asyncio.wait_for(over, GAME_TIMEOUT)
    await b.close()
    return {"events": len(seen), "kinds": sorted(set(seen)), "rendered": rendered,
            "winner": getattr(winner, "value", str(winner)), "quests": quests, "last_seq": last,
            "duplicates": duplicates, "gaps": gaps}


async def act(b: RabbitBus, game: str, offer, rng: random.Random) -> None:
    kinds = {c.kind.value: c for c in offer.choices}
    me, pid = offer.player, offer.phase_id
    if c := kinds.get("propose_team"):
        await send(b, game, me, {"type": "propose_team", "team": rng.sample(list(c.targets), c.count),
                                 "excalibur": None}, pid)
    elif "cast_vote" in kinds:
        await send(b, game, me, {"type": "cast_vote", "approve": True}, pid)
    elif c := kinds.get("play_card"):
        card = "fail" if "fail" in [x.value for x in c.cards] and rng.random() < 0.5 else "success"
        await send(b, game, me, {"type": "play_card", "card": card}, pid)
    elif c := kinds.get("assassinate"):
        await send(b, game, me, {"type": "assassinate", "target": rng.choice(list(c.targets))}, pid)
    elif c := kinds.get("use_lady"):
        await send(b, game, me, {"type": "use_lady", "target": rng.choice(list(c.targets))}, pid)


async def queue(prefix: str, n: int) -> dict:
    b = bus()
    await b.start()

    async def nothing(envelope) -> None:
        raise RuntimeError("not now")  # requeued: the collector after the restart takes them

    await b.subscribe_events(prefix, "test.#", nothing)
    await b.close()  # the queue stays, bound: events published while we are away wait in it
    b = bus()
    await b.start()
    for i in range(1, n + 1):
        await send(b, f"{prefix}-{i}", f"test:host{i}", {"type": "create_game", "options": {}})
    await b.close()
    return {"queued": n}


async def collect(prefix: str, n: int) -> dict:
    b = bus()
    await b.start()
    opened: set[str] = set()
    done = asyncio.Event()

    async def on_event(envelope) -> None:
        if envelope.event.type == "lobby_opened" and envelope.game_id.startswith(prefix + "-"):
            opened.add(envelope.game_id)
            if len(opened) >= n:
                done.set()

    await b.subscribe_events(prefix, "test.#", on_event)
    try:
        await asyncio.wait_for(done.wait(), TIMEOUT)
    except asyncio.TimeoutError:
        pass
    await b.close()
    return {"opened": sorted(opened)}


def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the bus's lines, on stderr
    mode, *rest = argv
    if mode == "play":
        result = asyncio.run(play(rest[0], tuple(int(q) for q in rest[1:])))
    elif mode == "queue":
        result = asyncio.run(queue(rest[0], int(rest[1])))
    else:
        result = asyncio.run(collect(rest[0], int(rest[1])))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
