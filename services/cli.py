"""The ``avalon`` command line.

Every error a user can meet (a bad setting, an unreachable or refusing server, Ctrl-C, a closed
pipe) ends in one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys

from services.engine import simulate_cli
from shared.runtime import StartupError

#: Exit statuses: a start-up that cannot succeed, a bad setting or argument, Ctrl-C, a closed pipe.
FAILED, BAD_SETTING, INTERRUPTED, BROKEN_PIPE = 1, 2, 130, 141


def _settings():
    from shared.config import Settings

    return Settings()


def _serve(**what):
    """A long-running command: the composition root with these parts."""

    def run(args) -> int:
        from services import app
        from services import channels as registry

        settings = _settings()
        _logging(settings.log_level)
        channels = what.get("channels")
        if channels is None:  # avalon run: every configured channel
            channels = registry.configured_channels(settings)
        for name in channels:
            if not getattr(settings, registry.spec(name).configured_by):
                raise StartupError(f"the {name} channel is not configured: {registry.spec(name).how}")
        _run_async(app.run_app(settings, embedded=what.get("embedded", False), engine=what.get("engine", False),
                               channels=channels))
        return 0

    return run


def _migrate(args) -> int:
    from services import app

    settings = _settings()
    _logging(settings.log_level)
    _run_async(app.run_migrations(settings))
    return 0


def _logging(level: str) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # a line per migration step / update / job / IMAP answer it does not use
    for noisy in ("alembic", "aiogram.event", "apscheduler", "aioimaplib"):
        if logging.getLogger(noisy).getEffectiveLevel() < logging.WARNING and level != "DEBUG":
            logging.getLogger(noisy).setLevel(logging.WARNING)


def _run_async(coro) -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        asyncio.run(coro)
    else:
        uvloop.run(coro)


def _schema(args) -> int:
    from shared.protocol import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _export(args) -> int:
    """Print a game's whole event log (JSON lines), internal records included once it is over."""
    from services.app import migrate, open_store

    async def run() -> int:
        url = _settings().database_url
        store = open_store(url)
        try:
            await migrate(store, url)
            loaded = await store.load(args.game_id)
            if loaded is None:
                print(f"avalon export: error: no game {args.game_id!r}", file=sys.stderr)
                return BAD_SETTING
            for envelope in await store.event_log(args.game_id, include_internal=loaded.state.over):
                print(envelope.model_dump_json())
            return 0
        finally:
            await store.close()

    return asyncio.run(run())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="avalon", description="The Resistance: Avalon narrator")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run the narrator embedded: the engine and every configured channel, "
                   "in-process bus, SQLite").set_defaults(run=_serve(embedded=True, engine=True))
    sub.add_parser("engine", help="run the engine service alone on RabbitMQ (compose)").set_defaults(
        run=_serve(engine=True, channels=[]))
    from services.channels import CHANNELS

    for channel in CHANNELS:
        sub.add_parser(channel.name, help=f"run the {channel.title} gateway alone on RabbitMQ (compose)"
                       ).set_defaults(run=_serve(channels=[channel.name]))
    sub.add_parser("migrate", help="bring the database schema up to date, then exit").set_defaults(run=_migrate)
    from services import broker_users

    broker_users.add_parser(sub)
    simulate_cli.add_parser(sub)
    from services import demo  # imported here: a Ctrl-C while it loads is handled like any other

    demo.add_parser(sub)
    p = sub.add_parser("schema", help="print the JSON Schema of every message on the bus")
    p.set_defaults(run=_schema)
    p = sub.add_parser("export", help="print a game's event log as JSON lines (with the deal once it is over)")
    p.add_argument("game_id")
    p.set_defaults(run=_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    from pydantic import ValidationError

    try:
        args = build_parser().parse_args(argv)
        status = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below
        return status
    except KeyboardInterrupt:
        print("avalon: interrupted", file=sys.stderr)
        return INTERRUPTED
    except _interrupted():
        print("avalon: interrupted during start-up", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # `avalon schema | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE
    except ValidationError as error:
        print(f"avalon: error: {_bad_setting(error)}", file=sys.stderr)
        return BAD_SETTING
    except StartupError as error:
        print(f"avalon: error: {error}", file=sys.stderr)
        return FAILED


def _interrupted():
    from services.app import Interrupted

    return Interrupted


def _bad_setting(error) -> str:
    """pydantic-settings' error as one line: which variable, what it holds, what is wrong."""
    problems = []
    for item in error.errors():
        name = "_".join(str(part) for part in item.get("loc", ())).upper() or "setting"
        value = item.get("input")
        shown = f"={value!r}" if isinstance(value, (str, int, float)) and "PASSWORD" not in name \
            and "TOKEN" not in name and "SECRET" not in name else ""
        problems.append(f"{name}{shown}: {item.get('msg', 'invalid')}")
    return "bad setting " + "; ".join(problems)


if __name__ == "__main__":
    sys.exit(main())
