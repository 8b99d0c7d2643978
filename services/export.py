"""``avalon export GAME`` (a game's id, or its code as the history and the game's end show it): a
game's event log as JSON lines, read from the database as it is; and ``avalon stats rebuild``, the
record of finished games made again from that log (``services/engine/records.py``).

Export only reads; both never create a database (an SQLite file that is not there is said, not made),
never migrates one, and tries a database server once (the driver's connect timeout) instead of
waiting for it the way a service does. Each failure is one line: no database, or one it cannot
reach, or one at another schema (exit status 1); no such game (2)."""

from __future__ import annotations

import sys
from pathlib import Path

from avalon.services.app import open_store, unknown_revision
from avalon.shared.runtime import StartupError, one_line

NO_GAME = 2


async def export(url: str, game: str) -> int:
    store = await _existing_store(url)
    try:
        game_id = await _game_named(store, game)
        loaded = await store.load(game_id) if game_id is not None else None
        if loaded is None:
            print(f"avalon export: error: no game {game!r} in {_safe_url(url)}", file=sys.stderr)
            return NO_GAME
        for envelope in await store.event_log(game_id, include_internal=loaded.state.over):
            print(envelope.model_dump_json())
        return 0
    finally:
        await store.close()


async def _game_named(store, game: str) -> str | None:
    """The game's id: ``game`` itself if there is such a game, else the finished game with that code
    (a code two games share is refused, naming both)."""
    from avalon.services.engine.record_queries import games_by_code
    from avalon.shared.game.codes import read_code

    if await store.load(game) is not None or (code := read_code(game)) is None:
        return game
    found = await games_by_code(store.engine, code)
    if len(found) > 1:
        raise StartupError(f"{len(found)} games have the code {code}: export one by its id ({', '.join(found)})")
    return found[0] if found else None


async def rebuild_records(url: str) -> int:
    """``avalon stats rebuild``: the record of finished games made again from the event log."""
    from avalon.services.engine.records import rebuild

    store = await _existing_store(url)
    try:
        count = await rebuild(store.engine)
    finally:
        await store.close()
    print(f"avalon stats: the record of {count} finished games rebuilt from the event log")
    return 0


async def _existing_store(url: str):
    """The store at ``url`` if it holds the narrator's games at this version's schema, else a
    ``StartupError`` saying why (exit status 1)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from avalon.shared.db import database_down, revisions

    where = _safe_url(url)
    if url.startswith("sqlite"):
        path = make_url(url).database or ""
        if path != ":memory:" and not Path(path).is_file():
            raise StartupError(f"no database at {path} (DATABASE_URL): no games there")
    store = open_store(url)
    try:
        try:
            current, head, known = await revisions(store.engine)
        except (SQLAlchemyError, OSError, TimeoutError) as error:
            cause = getattr(error, "orig", None) or error
            what = "unreachable" if database_down(error) else "cannot be read"
            raise StartupError(f"database at {where} {what}: {one_line(cause)}") from None
        if current is None:
            raise StartupError(f"database at {where} holds no narrator's games (no schema)")
        if current not in known:
            raise StartupError(f"database at {where}: {unknown_revision(current)}")
        if current != head:
            raise StartupError(f"database at {where}: its schema is at revision {current!r}, older than this "
                               f"version's {head!r}: run avalon migrate first")
    except BaseException:
        await store.close()
        raise
    return store


def _safe_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rsplit('@', 1)[1] if '@' in rest else rest}"
