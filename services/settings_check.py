"""Which settings each ``avalon`` command reads, and all of them checked before anything starts.

Every bad setting of a command is named at once, in plain words (the variable, what it holds unless
it is a secret, what is expected), as one ``BadSetting`` (exit status 2 in ``services/cli.py``): a
value that does not parse, a channel's setting that is missing, a combination that cannot work.
``avalon COMMAND --help`` lists the same settings (``help_for``)."""

from __future__ import annotations

from pydantic import ValidationError

from avalon.services.channels import CHANNELS, spec
from avalon.shared.config import Settings
from avalon.shared.runtime import BadSetting

#: Words in a variable's name that make its value a secret: it is never shown.
SECRET = ("PASSWORD", "TOKEN", "SECRET")
DATABASE = ("database_url",)
SERVICE = ("log_level", "ops_listen")
BUS = ("amqp_url", "bus_prefix", "delivery_limit", "engine_partitions")
#: The database URLs the narrator can use (its drivers are asyncio ones).
DRIVERS = ("sqlite+aiosqlite", "postgresql+asyncpg")


def channel_settings(name: str) -> tuple[str, ...]:
    return tuple(field for field in Settings.model_fields if field.startswith(spec(name).settings))


def reads(command: str) -> tuple[str, ...]:
    """The settings (field names) a command reads; the channels' commands read their channel's."""
    channels = {c.name for c in CHANNELS}
    if command == "run":  # every channel's, on the in-process bus
        extra = tuple(f for c in CHANNELS for f in channel_settings(c.name))
        return DATABASE + ("delivery_limit",) + SERVICE + tuple(dict.fromkeys(extra))
    if command == "engine":
        return DATABASE + BUS + SERVICE
    if command in channels:
        return DATABASE + BUS + SERVICE + channel_settings(command)
    if command == "migrate":
        return DATABASE + ("log_level",)
    if command in ("export", "stats"):
        return DATABASE
    if command in ("broker-users", "partitions"):
        return BUS + ("log_level",)
    return ()


def help_for(command: str, extra: dict[str, str] | None = None) -> str:
    """The epilog of ``avalon COMMAND --help``: what it reads from the environment (or ``.env``)."""
    rows = {}
    for field in reads(command):
        info = Settings.model_fields[field]
        default = "" if info.default in (None, "") else f" (default {info.default})"
        rows[field.upper()] = f"{info.description}{default}"
    rows.update(extra or {})
    if not rows:
        return "It reads no setting from the environment."
    width = max(len(name) for name in rows)
    lines = [f"  {name.ljust(width)}  {text}" for name, text in rows.items()]
    return "It reads these settings from the environment or ./.env (see README.md, Settings):\n" + "\n".join(lines)


def load(command: str, channels: list[str] | None = None) -> Settings:
    """The settings, or a ``BadSetting`` naming every problem of this command at once. ``channels``:
    those that will run (``avalon run``: every configured one, found here when None)."""
    read = reads(command)
    problems, settings = _parsed(read)
    if channels is None:  # avalon run: every configured channel; avalon <channel>: that one
        every = [c.name for c in CHANNELS]
        channels = [name for name in every if getattr(settings, spec(name).configured_by)] if command == "run" \
            else [command] if command in every else []
    if "database_url" in read:
        problems += _database_url(settings.database_url)
    if "ops_listen" in read:
        problems += _ops_listen(settings.ops_listen)
    for name in channels:
        channel = spec(name)
        if not getattr(settings, channel.configured_by):
            problems.append(f"{channel.configured_by.upper()} is not set: {channel.how}")
        problems += channel.problems(settings)
    if problems:
        raise BadSetting(list(dict.fromkeys(problems)))
    return settings


def _parsed(read: tuple[str, ...]) -> tuple[list[str], Settings]:
    """The settings as given, and what does not parse among those the command reads (one it does
    not read is no reason to stop it); the settings then hold the defaults there, so that the other
    checks still see everything else."""
    try:
        return [], Settings()
    except ValidationError as error:
        errors = [e for e in error.errors() if e.get("loc") and str(e["loc"][0]) in read]
        bad = {str(e["loc"][0]) for e in error.errors() if e.get("loc")}
    return plain(errors), Settings(**{name: Settings.model_fields[name].default for name in bad})


def plain(errors) -> list[str]:
    """pydantic-settings' errors (a ValidationError, or some of its errors()) in plain words: the
    variable, its value unless secret, what is expected."""
    problems = []
    for item in errors.errors() if isinstance(errors, ValidationError) else errors:
        name = "_".join(str(part) for part in item.get("loc", ())).upper() or "a setting"
        value = item.get("input")
        shown = f"={value!r}" if isinstance(value, (str, int, float)) and not any(w in name for w in SECRET) else ""
        problems.append(f"{name}{shown}: {_expected(item)}")
    return problems


def _expected(item: dict) -> str:
    kind, message = item.get("type", ""), str(item.get("msg", "invalid"))
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return "expected a whole number"
    if kind in ("float_parsing", "float_type"):
        return "expected a number"
    if message.startswith("Value error, "):
        return message.removeprefix("Value error, ")
    return message.replace("Input should be", "expected")


def _database_url(url: str) -> list[str]:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    expected = "expected sqlite+aiosqlite:///PATH or postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB"
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return [f"DATABASE_URL={_safe_url(url)!r} is not a database URL: {expected}"]
    if parsed.drivername not in DRIVERS:
        return [f"DATABASE_URL={_safe_url(url)!r} names {parsed.drivername!r}: {expected}"]
    if parsed.drivername.startswith("sqlite") and not parsed.database:
        return [f"DATABASE_URL={_safe_url(url)!r} names no file: {expected}"]
    return []


def _ops_listen(listen: str) -> list[str]:
    from avalon.shared.ops.server import parse_listen

    try:
        parse_listen(listen)
    except ValueError:
        return [f"OPS_LISTEN={listen!r}: expected HOST:PORT, :PORT, a port, or off"]
    return []


def _safe_url(url: str) -> str:
    """A URL without its password."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "…@" + rest.rsplit("@", 1)[1]
    return f"{scheme}{sep}{rest}"
