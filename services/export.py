"""``avalon export GAME_ID``: a game's event log as JSON lines, read from the database as it is.

It only reads: it never creates a database (an SQLite file that is not there is said, not made),
never migrates one, and tries a database server once (the driver's connect timeout) instead of
waiting for it the way a service does. Each failure is one line: no database, or one it cannot
reach, or one at another schema (exit status 1); no such game (2)."""

from __future__ import annotations

import sys
from pathlib import Path

from avalon.services.app import open_store, unknown_revision
from avalon.shared.runtime import StartupError, one_line

NO_GAME = 2


async def export(url: str, game_id: str) -> int:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from avalon.shared.db import database_down, revisions

    where = _safe_url(url)
    if url.startswith("sqlite"):
        path = make_url(url).database or ""
        if path != ":memory:" and not Path(path).is_file():
            raise StartupError(f"no database at {path} (DATABASE_URL): nothing to export")
    store = open_store(url)
    try:
        try:
            current, head, known = await revisions(store.engine)
        except (SQLAlchemyError, OSError, TimeoutError) as error:
            cause = getattr(error, "orig", None) or error
            what = "unreachable" if database_down(error) else "cannot be read"
            raise StartupError(f"database at {where} {what}: {one_line(cause)}") from None
        if current is None:
            raise StartupError(f"database at {where} holds no narrator's games (no schema): nothing to export")
        if current not in known:
            raise StartupError(f"database at {where}: {unknown_revision(current)}")
        if current != head:
            raise StartupError(f"database at {where}: its schema is at revision {current!r}, older than this "
                               f"version's {head!r}: run avalon migrate first")
        loaded = await store.load(game_id)
        if loaded is None:
            print(f"avalon export: error: no game {game_id!r} in {where}", file=sys.stderr)
            return NO_GAME
        for envelope in await store.event_log(game_id, include_internal=loaded.state.over):
            print(envelope.model_dump_json())
        return 0
    finally:
        await store.close()


def _safe_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rsplit('@', 1)[1] if '@' in rest else rest}"
