"""The ``avalon`` command line.

Every error a user can meet (a bad setting, an unreachable or refusing server, Ctrl-C, a closed
pipe) ends in one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

# Only the standard library's lightest modules at import time: everything else is imported inside
# main(), where a Ctrl-C while it loads is handled like any other.
import os
import sys

#: Exit statuses: a start-up that cannot succeed (a refused login, an unreachable database for
#: `avalon export`), a bad setting or argument, Ctrl-C, a closed pipe.
FAILED, BAD_SETTING, INTERRUPTED, BROKEN_PIPE = 1, 2, 130, 141


def _settings(command: str, channels: list[str] | None = None):
    from avalon.services import settings_check

    return settings_check.load(command, channels)


def _serve(command: str, **what):
    """A long-running command: the composition root with these parts."""

    def run(args) -> int:
        from avalon.services import app
        from avalon.services import channels as registry

        settings = _settings(command, what.get("channels"))
        _logging(settings.log_level)
        channels = what.get("channels")
        if channels is None:  # avalon run: every configured channel
            channels = registry.configured_channels(settings)
        _run_async(app.run_app(settings, embedded=what.get("embedded", False), engine=what.get("engine", False),
                               channels=channels))
        return 0

    return run


def _migrate(args) -> int:
    from avalon.services import app

    settings = _settings("migrate")
    _logging(settings.log_level)
    _run_async(app.run_migrations(settings))
    return 0


def _logging(level: str) -> None:
    from avalon.shared.runtime import configure_logging

    configure_logging(level)


def _run_async(coro):
    import asyncio

    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        return asyncio.run(coro)
    return uvloop.run(coro)


def _schema(args) -> int:
    import json

    from avalon.shared.protocol import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _export(args) -> int:
    """Print a game's whole event log (JSON lines), internal records included once it is over. It
    never creates a database, and gives up on one it cannot reach (exit status 1)."""
    from avalon.services.export import export

    settings = _settings("export")
    return _run_async(export(settings.database_url, args.game_id))


def _stats_rebuild(args) -> int:
    """Make the record of finished games again from the event log (the same database)."""
    from avalon.services.export import rebuild_records

    settings = _settings("stats")
    return _run_async(rebuild_records(settings.database_url))


def build_parser():
    import argparse

    from avalon.services import broker_users, demo, partitions_cli
    from avalon.services.channels import CHANNELS
    from avalon.services.engine import simulate_cli
    from avalon.services.settings_check import help_for

    parser = argparse.ArgumentParser(prog="avalon", description="The Resistance: Avalon narrator. "
                                     "`avalon COMMAND --help` says what a command reads from the environment.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("run", help="run the narrator embedded: the engine and every configured channel, "
                   "in-process bus, SQLite").set_defaults(run=_serve("run", embedded=True, engine=True))
    sub.add_parser("engine", help="run the engine service alone on RabbitMQ (compose)").set_defaults(
        run=_serve("engine", engine=True, channels=[]))
    for channel in CHANNELS:
        sub.add_parser(channel.name, help=f"run the {channel.title} gateway alone on RabbitMQ (compose)"
                       ).set_defaults(run=_serve(channel.name, channels=[channel.name]))
    sub.add_parser("migrate", help="bring the database schema up to date, then exit").set_defaults(run=_migrate)
    broker_users.add_parser(sub)
    partitions_cli.add_parser(sub)
    simulate_cli.add_parser(sub)
    demo.add_parser(sub)
    p = sub.add_parser("schema", help="print the JSON Schema of every message on the bus")
    p.set_defaults(run=_schema)
    p = sub.add_parser("export", help="print a game's event log as JSON lines (with the deal once it is over)")
    p.add_argument("game_id", metavar="GAME", help="the game's code as its end and the history show it "
                   "(7KQ2-M9XD), or its id (a Telegram game's is tg<CHAT>_<N>, what follows join_ in its lobby's link)")
    p.set_defaults(run=_export)
    p = sub.add_parser("stats", help="the record of finished games: `avalon stats rebuild` makes it again from "
                       "the event log")
    p.add_argument("action", choices=["rebuild"], help="rebuild: delete the record and make it again from the "
                   "event log (who hid or had their records forgotten stays so)")
    p.set_defaults(run=_stats_rebuild)
    extra = {"export": "\n\nExit status: 0 printed; 1 no database at DATABASE_URL, or it cannot be reached; "
                      "2 a bad setting, or no such game.",
             "stats": "\n\nExit status: 0 rebuilt; 1 no database at DATABASE_URL, or it cannot be reached; "
                      "2 a bad setting.",
             "broker-users": broker_users.settings_help()}
    for name, command in sub.choices.items():
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        rows = extra.get(name) if isinstance(extra.get(name), dict) else None
        command.epilog = help_for(name, rows) + (extra[name] if isinstance(extra.get(name), str) else "")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``avalon`` command. ``argv`` None: the process's own command line (the program itself:
    its output then survives any terminal encoding, and a Ctrl-C once the status is known is ignored)."""
    if argv is None:
        _tolerant_output()
        _quiet_abandoned_threads()
    try:
        args = build_parser().parse_args(argv)
        status = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below
    except KeyboardInterrupt:
        status = _say("avalon: interrupted", INTERRUPTED)
    except BrokenPipeError:  # `avalon schema | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = BROKEN_PIPE
    except Exception as error:
        status = _failure(error)
        if status is None:
            raise
    if argv is None:
        _ignore_ctrl_c()
        if status == INTERRUPTED:
            # Everything is closed. Python would turn a KeyboardInterrupt it saw inside an exec() (a
            # dataclass being made while a module loaded) into its own death by SIGINT, even though
            # it was handled: the status is said here instead.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    return status


def _failure(error: Exception) -> int | None:
    """The one line and the exit status of an error a user can meet; None for a bug."""
    from pydantic import ValidationError

    from avalon.services.app import Interrupted
    from avalon.services.settings_check import plain
    from avalon.shared.runtime import BadSetting, StartupError

    if isinstance(error, Interrupted):
        return _say(f"avalon: interrupted {error}".strip(), INTERRUPTED)
    if isinstance(error, ValidationError):  # settings read outside settings_check (broker-users' own)
        return _say(f"avalon: error: {'; '.join(plain(error))}", BAD_SETTING)
    if isinstance(error, BadSetting):
        return _say(f"avalon: error: {error}", BAD_SETTING)
    if isinstance(error, StartupError):
        return _say(f"avalon: error: {error}", FAILED)
    return None


def _say(line: str, status: int) -> int:
    print(line, file=sys.stderr)
    return status


def _tolerant_output() -> None:
    """Whatever the terminal's encoding (PYTHONIOENCODING=latin-1, an old console), what it cannot
    show is written as escapes (\\u0622) instead of ending the command in a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _quiet_abandoned_threads() -> None:
    """A database driver's thread still finishing a query whose task a Ctrl-C abandoned cannot hand
    its answer to the event loop, which is closed by then: harmless as the process ends, and not to
    be printed as a traceback. Any other error of a thread still is."""
    import threading

    shown = threading.excepthook

    def hook(args) -> None:
        if not (isinstance(args.exc_value, RuntimeError) and str(args.exc_value) == "Event loop is closed"):
            shown(args)

    threading.excepthook = hook


def _ignore_ctrl_c() -> None:
    """The exit status is known and everything is closed: a Ctrl-C now would only print a traceback
    from the interpreter's shutdown."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    sys.exit(main())
