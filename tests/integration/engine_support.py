"""Support for the engine service tests: fresh databases and scripted players."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import replace

import asyncpg

from avalon.shared.protocol import CommandEnvelope, from_core_command
from avalon.services.engine.rules import CreateGame, Join, Options, StartGame
from avalon.services.engine.simulate import random_command
from avalon.services.engine.store import Store

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


async def create_pg_database() -> tuple[str, str]:
    """A new empty PostgreSQL database; returns (sqlalchemy url, name)."""
    name = f"avalon_t_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(PG_ADMIN)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}", name


async def drop_pg_database(name: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def player_ids(n: int) -> list[str]:
    return [f"test:p{i + 1}" for i in range(n)]


def lobby_commands(game_id: str, players: int, options: Options | None = None) -> list[CommandEnvelope]:
    ids = player_ids(players)
    options = options or replace(Options(), lady=True)
    out = [from_core_command(CreateGame(actor=ids[0], game_id=game_id, seed=0, options=options), game_id)]
    out += [from_core_command(Join(actor=p), game_id) for p in ids[1:]]
    out.append(from_core_command(StartGame(actor=ids[0]), game_id))
    return out


async def wait_processed(store: Store, message_id: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await store.seen(message_id):
        if time.monotonic() > deadline:
            raise AssertionError(f"command {message_id} was not processed within {timeout} s")
        await asyncio.sleep(0.02)


async def play_to_the_end(send, store: Store, game_id: str, *, seed: int = 1, max_steps: int = 2000,
                          timeout: float = 20.0) -> int:
    """Scripted players: read the game as it stands, send one legal command, wait for it."""
    rng = random.Random(seed)
    for step in range(max_steps):
        loaded = await store.load(game_id)
        if loaded.state.over:
            return step
        command = random_command(loaded.state, rng)
        envelope = from_core_command(command, game_id)
        await send(envelope)
        await wait_processed(store, envelope.message_id, timeout)
    raise AssertionError(f"game {game_id} did not end in {max_steps} commands")
