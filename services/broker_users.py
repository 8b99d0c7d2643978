"""``avalon broker-users``: one RabbitMQ user per service, each allowed only what it does.

- the engine (``<prefix>-engine``; the deadline scheduler runs inside it) declares the commands
  exchange and queue, the events exchange and the dead letters; consumes commands; publishes events,
  and commands (the scheduler's);
- each gateway (``<prefix>-telegram``, ``<prefix>-email``) publishes commands, declares and consumes
  its own event queue ``<prefix>.events.<channel>``, and may bind it to its own channel's events only
  (a topic permission); it can neither publish an event nor read another channel's;
- ``avalon migrate`` uses no broker at all.

The command creates (or updates: it is idempotent, and changes a password) those users through
RabbitMQ's management HTTP API as the admin of ``AMQP_URL``, then declares the engine's exchanges and
queues, so that a gateway may start before the engine. ``--print`` writes the same as ``rabbitmqctl``
commands instead, for a broker without the management plugin. The regular expressions come from the
bus's own names (shared/bus/rabbit/topology.py), so ``BUS_PREFIX`` is honoured.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import re
import shlex
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from pydantic_settings import BaseSettings, SettingsConfigDict

from avalon.shared.runtime import BadSetting, StartupError, configure_logging, one_line, retry

log = logging.getLogger("avalon.broker_users")

#: a regular expression no name matches (RabbitMQ's own way of saying "nothing")
NOTHING = "^$"


@dataclass(frozen=True)
class Grant:
    """What one service's broker user may do in the vhost (RabbitMQ's three regular expressions) and,
    for a gateway, the routing keys it may bind on the events exchange (a topic permission)."""

    role: str
    user: str
    configure: str
    write: str
    read: str
    topic_exchange: str | None = None
    topic_write: str = NOTHING
    topic_read: str = NOTHING


def gateways() -> tuple[str, ...]:
    """Every channel a gateway serves (each gets a user): the composition root's list."""
    from avalon.services.channels import CHANNELS

    return tuple(channel.name for channel in CHANNELS)


def roles() -> tuple[str, ...]:
    return ("engine", *gateways())


def user_name(prefix: str, role: str) -> str:
    return f"{prefix}-{role}"


def password_variable(role: str) -> str:
    return f"{role.upper()}_AMQP_PASSWORD"


def _only(*names: str, partitions: str | None = None) -> str:
    """Exactly these names; ``partitions``: and the command partitions named after it (``<it>.<n>``)."""
    alternatives = [re.escape(name) for name in sorted(set(names))]
    if partitions is not None:
        alternatives.append(re.escape(partitions) + r"\.[0-9]+")
    return "^(" + "|".join(alternatives) + ")$"


def grants(prefix: str) -> dict[str, Grant]:
    """Every service's grant under ``prefix``, from the bus's naming."""
    from avalon.shared.bus.rabbit import RabbitBus

    bus = RabbitBus("amqp://names.only/", prefix=prefix)  # never started: its names only
    names = bus.topology
    commands, events = names.commands_exchange_name, names.events_exchange_name  # the queue is `commands` too
    dlx, dead = names.dlx_name, names.dead_queue_name
    found = {"engine": Grant(
        "engine", user_name(prefix, "engine"),
        # the command partitions past the first are `commands.<n>`
        configure=_only(commands, events, dlx, dead, partitions=commands),
        write=_only(commands, events, dlx, dead, partitions=commands),  # publish; bind; x-dead-letter-exchange
        read=_only(commands, dlx, partitions=commands),  # consume commands; bind the queues to their exchanges
    )}
    for channel in gateways():
        queue = bus.event_queue_name(channel)
        found[channel] = Grant(
            channel, user_name(prefix, channel),
            configure=_only(queue),
            # `commands` names the exchange and the queue: write on one is write on the other (so it
            # may bind the engine's queue to its own channel's events too: noise the engine dead-letters);
            # the dlx, because declaring its queue with x-dead-letter-exchange needs write on it
            write=_only(commands, queue, dlx),
            read=_only(events, queue),
            topic_exchange=events, topic_read="^" + re.escape(channel + "."),
        )
    return found


# -- the management API ---------------------------------------------------------------------


class ManagementError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Management:
    """A few calls of RabbitMQ's management HTTP API (standard library only)."""

    def __init__(self, url: str, user: str, password: str, *, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": self._auth, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                text = answer.read()
        except urllib.error.HTTPError as error:
            raise ManagementError(error.code, error.read().decode(errors="replace")[:300]) from None
        return json.loads(text) if text.strip() else None

    def put(self, path: str, body: Any) -> None:
        self.call("PUT", path, body)

    def delete(self, path: str) -> None:
        self.call("DELETE", path)


def _q(part: str) -> str:
    return quote(part, safe="")


def ensure_users(api: Management, *, vhost: str, prefix: str, passwords: Mapping[str, str]) -> list[Grant]:
    """Creates or updates the user of each role in ``passwords`` with its grant in ``vhost``."""
    every = grants(prefix)
    done = []
    for role, password in passwords.items():
        grant = every[role]
        api.put(f"/api/users/{_q(grant.user)}", {"password": password, "tags": ""})
        api.put(f"/api/permissions/{_q(vhost)}/{_q(grant.user)}",
                {"configure": grant.configure, "write": grant.write, "read": grant.read})
        if grant.topic_exchange:
            api.put(f"/api/topic-permissions/{_q(vhost)}/{_q(grant.user)}",
                    {"exchange": grant.topic_exchange, "write": grant.topic_write, "read": grant.topic_read})
        done.append(grant)
    return done


def rabbitmqctl_commands(*, vhost: str, prefix: str, roles_: tuple[str, ...] | None = None) -> list[str]:
    """The same users as shell commands, each password read from its variable."""
    every = grants(prefix)
    lines = []
    for role in roles_ or tuple(every):
        grant, secret = every[role], f'"${password_variable(role)}"'
        user = shlex.quote(grant.user)
        lines.append(f"rabbitmqctl add_user {user} {secret} 2>/dev/null || rabbitmqctl change_password {user} {secret}")
        lines.append(f"rabbitmqctl set_permissions -p {shlex.quote(vhost)} {user} "
                     + " ".join(shlex.quote(x) for x in (grant.configure, grant.write, grant.read)))
        if grant.topic_exchange:
            lines.append(f"rabbitmqctl set_topic_permissions -p {shlex.quote(vhost)} {user} "
                         + " ".join(shlex.quote(x) for x in (grant.topic_exchange, grant.topic_write, grant.topic_read)))
    return lines


# -- the command ------------------------------------------------------------------------------


class BrokerUserSettings(BaseSettings):
    """What ``avalon broker-users`` reads besides the common settings (``AMQP_URL``: the admin's)."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    #: the management API; empty: http://<the host of AMQP_URL>:15672
    rabbitmq_management_url: str | None = None
    engine_amqp_password: str | None = None
    telegram_amqp_password: str | None = None
    email_amqp_password: str | None = None
    #: Under compose (which passes them; absent elsewhere): the channels whose profile is on, and the
    #: channels .env configures (compose writes the name of each whose setting is set, comma separated).
    compose_profiles: str | None = None
    configured_channels: str | None = None


def _names(text: str | None) -> set[str]:
    return {part.strip() for part in (text or "").split(",") if part.strip()}


def compose_check(extra: BrokerUserSettings) -> tuple[list[str], list[str]]:
    """Under compose, before any user is made: what stops the stack (a channel's profile on without its
    password or its setting) and what a host should know (a channel configured whose profile is off)."""
    from avalon.services.channels import CHANNELS

    if extra.compose_profiles is None:  # not run by compose: nothing to compare
        return [], []
    running, configured = _names(extra.compose_profiles), _names(extra.configured_channels)
    problems, warnings = [], []
    for channel in CHANNELS:
        variable = password_variable(channel.name)
        if channel.name in running and not getattr(extra, variable.lower()):
            problems.append(f"{variable} is not set: COMPOSE_PROFILES runs the {channel.title} gateway, which "
                            "logs in to RabbitMQ with it (set it in .env, e.g. `openssl rand -hex 16`)")
        if channel.name in running and channel.name not in configured:
            problems.append(f"{channel.configured_by.upper()} is not set, but COMPOSE_PROFILES runs the "
                            f"{channel.title} gateway: {channel.how}")
        if channel.name in configured and channel.name not in running:
            warnings.append(f"{channel.configured_by.upper()} is set but COMPOSE_PROFILES does not have "
                            f"{channel.name}: no {channel.title} gateway runs (add it in .env: "
                            f"COMPOSE_PROFILES={','.join(sorted(running | {channel.name}))})")
    return problems, warnings


def settings_help() -> dict[str, str]:
    """What `avalon broker-users --help` says of the settings it reads besides the bus's."""
    return {"AMQP_URL": "the broker's admin, who makes the users",
            "RABBITMQ_MANAGEMENT_URL": "RabbitMQ's management API (default: the host of AMQP_URL, port 15672)",
            **{password_variable(role): f"the password of the {role} service's broker user" for role in roles()},
            "COMPOSE_PROFILES": "(compose) the channels that run: each needs its password and its setting",
            "CONFIGURED_CHANNELS": "(compose) the channels .env configures: one whose profile is off is warned of"}


@dataclass(frozen=True)
class Admin:
    management_url: str
    user: str
    password: str
    vhost: str


def admin_from(amqp_url: str, management_url: str | None = None) -> Admin:
    """The admin's login and vhost from an AMQP URL (as aio-pika reads it; of a cluster's nodes, the
    first), and the management API's URL."""
    from avalon.shared.bus.rabbit.link import broker_urls

    parts = urlsplit(broker_urls(amqp_url)[0])
    host = parts.hostname or "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    vhost = unquote(parts.path[1:]) if len(parts.path) > 1 else "/"
    return Admin(management_url or f"http://{host}:15672", unquote(parts.username or "guest"),
                 unquote(parts.password or "guest"), vhost)


async def create(amqp_url: str, prefix: str, delivery_limit: int, passwords: Mapping[str, str],
                 management_url: str | None = None, partitions: int = 1) -> list[Grant]:
    """Every user of ``passwords`` through the management API (waiting for it), then the engine's
    exchanges and queues (waiting for the broker). A refusal is a StartupError."""
    admin = admin_from(amqp_url, management_url)
    api = Management(admin.management_url, admin.user, admin.password)

    def users() -> list[Grant]:
        try:
            return ensure_users(api, vhost=admin.vhost, prefix=prefix, passwords=passwords)
        except ManagementError as error:
            if error.status >= 500:  # the broker is still starting
                raise ConnectionError(str(error)) from None
            if error.status == 401:
                raise StartupError(f"RabbitMQ's management API at {admin.management_url} refused the user and "
                                   f"password in AMQP_URL ({admin.user!r}: it must be an administrator)") from None
            raise StartupError(f"RabbitMQ's management API at {admin.management_url} (vhost {admin.vhost!r}): "
                               f"{one_line(error)}") from None

    done = await retry(f"RabbitMQ's management API at {admin.management_url} unreachable (is the "
                       "rabbitmq_management plugin on? without it: avalon broker-users --print)",
                       lambda: asyncio.to_thread(users), log=log, transient=(OSError,))
    await declare_topology(amqp_url, prefix, delivery_limit, partitions)
    return done


async def declare_topology(amqp_url: str, prefix: str, delivery_limit: int, partitions: int = 1) -> None:
    """The engine's exchanges and queues, as the admin: a gateway's user may then start first."""
    import aiormq.exceptions

    from avalon.shared.bus.rabbit import RabbitBus

    bus = RabbitBus(amqp_url, prefix=prefix, delivery_limit=delivery_limit, partitions=partitions)

    async def declare() -> None:
        try:
            await bus.start()
        except aiormq.exceptions.ProbableAuthenticationError:
            raise StartupError("RabbitMQ refused the user and password in AMQP_URL") from None
        except aiormq.exceptions.AMQPChannelError as error:  # e.g. a queue declared with other arguments
            raise StartupError(f"declaring {prefix}.*: {one_line(error)}") from None
        await bus.close()

    await retry("RabbitMQ unreachable", declare, log=log,
                transient=(aiormq.exceptions.AMQPConnectionError, OSError, asyncio.TimeoutError))


def run(args: argparse.Namespace) -> int:
    from avalon.services import settings_check

    settings, extra = settings_check.load("broker-users"), BrokerUserSettings()
    configure_logging(settings.log_level)
    vhost = admin_from(settings.amqp_url).vhost
    if args.print:
        print(f"# broker users for BUS_PREFIX={settings.bus_prefix} in vhost {vhost}, "
              f"each password from its variable ({', '.join(password_variable(r) for r in roles())})")
        print("\n".join(rabbitmqctl_commands(vhost=vhost, prefix=settings.bus_prefix)))
        return 0
    problems, warnings = compose_check(extra)
    if problems:
        raise BadSetting(problems)
    for warning in warnings:
        log.warning("%s", warning)
    passwords = {role: getattr(extra, password_variable(role).lower()) or "" for role in roles()}
    if not any(passwords.values()):
        print(f"avalon: error: set {', '.join(password_variable(r) for r in roles())} (a password for each "
              "service's broker user)", file=sys.stderr)
        return 2
    for role in [r for r, p in passwords.items() if not p and extra.compose_profiles is None]:
        log.warning("no broker user for the %s: %s is empty", "engine" if role == "engine" else f"{role} gateway",
                    password_variable(role))
    done = asyncio.run(create(settings.amqp_url, settings.bus_prefix, settings.delivery_limit,
                              {r: p for r, p in passwords.items() if p}, extra.rabbitmq_management_url,
                              settings.engine_partitions))
    for grant in done:
        print(f"{grant.user} in vhost {vhost}: configure {grant.configure} write {grant.write} read {grant.read}"
              + (f"; binds on {grant.topic_exchange} {grant.topic_read}" if grant.topic_exchange else ""))
    print(f"{settings.bus_prefix}.*: declared")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("broker-users", help="create or update one RabbitMQ user per service, each with only the "
                       "permissions it needs (compose runs it before the services)")
    p.add_argument("--print", action="store_true",
                   help="print the same as rabbitmqctl commands instead (for a broker without the management plugin)")
    p.set_defaults(run=run)
