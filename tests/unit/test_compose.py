"""docker-compose.yml and the Dockerfile, read as files: quick checks of what a host relies on.
The stack itself is built and run in tests/e2e/test_compose_stack.py."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import TypeAdapter

from avalon.services import broker_users
from avalon.services.channels import CHANNELS
from avalon.services.cli import build_parser
from avalon.services.settings_check import reads
from avalon.shared.config import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
README = (ROOT / "README.md").read_text()
NARRATOR = ("broker-users", "migrate", "engine", "telegram", "email")
BUS_USERS = ("engine", "telegram", "email")  # the services that log in to RabbitMQ, each as its own user
EMAIL_SETTINGS = [name.upper() for name in Settings.model_fields if name.startswith(("email_", "smtp_", "imap_"))]


def subcommands() -> set[str]:
    parser = build_parser()
    return set(next(a for a in parser._actions if a.dest == "command").choices)


def test_the_stack_has_a_broker_its_users_step_a_database_a_migration_step_the_engine_and_both_gateways():
    assert {"rabbitmq", "broker-users", "db", "migrate", "engine", "telegram", "email"} <= set(SERVICES)


def test_the_broker_keeps_its_node_name_so_its_queues_survive_down_and_up():
    assert SERVICES["rabbitmq"]["hostname"]
    assert any(v.endswith(":/var/lib/rabbitmq") for v in SERVICES["rabbitmq"]["volumes"])
    assert any(v.endswith(":/var/lib/postgresql/data") for v in SERVICES["db"]["volumes"])
    assert {"rabbitmq", "postgres"} <= set(COMPOSE["volumes"])


def test_gateways_run_only_behind_their_profile_so_the_engine_can_run_alone():
    assert SERVICES["telegram"]["profiles"] == ["telegram"]
    assert SERVICES["email"]["profiles"] == ["email"]
    for name in ("rabbitmq", "broker-users", "db", "migrate", "engine"):
        assert "profiles" not in SERVICES[name], name


def test_the_services_start_after_one_migration_step_a_healthy_database_and_a_started_broker():
    assert SERVICES["migrate"]["command"] == ["avalon", "migrate"]
    assert SERVICES["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    for name in ("engine", "telegram", "email"):
        needs = SERVICES[name]["depends_on"]
        assert needs["migrate"]["condition"] == "service_completed_successfully"
        assert needs["broker-users"]["condition"] == "service_completed_successfully", "its user exists first"
        # not service_healthy: the services connect with retries as soon as it listens, instead of
        # waiting for the broker's first (30 s) healthcheck; their own readiness includes the bus
        assert needs["rabbitmq"]["condition"] == "service_started"
        assert needs["db"]["condition"] == "service_healthy"


def seconds(duration: str) -> int:
    return int(duration.removesuffix("s"))


def test_healthchecks_are_true_and_quick_where_a_service_waits_on_them():
    # start_interval would be the way, but needs Docker Engine 25: the intervals themselves are short
    assert "127.0.0.1" in SERVICES["db"]["healthcheck"]["test"], "pg_isready over TCP, not the init socket"
    for name in ("db", "engine", "telegram", "email"):
        check = SERVICES[name]["healthcheck"]
        assert check["test"] and seconds(check["interval"]) <= 5 and "start_interval" not in check, name
    assert SERVICES["rabbitmq"]["healthcheck"]["test"]
    for name in ("engine", "telegram", "email"):
        assert "/readyz" in " ".join(SERVICES[name]["healthcheck"]["test"]), name
        assert SERVICES[name]["environment"]["OPS_LISTEN"].startswith("0.0.0.0:"), name


def test_every_narrator_service_runs_a_real_avalon_command_from_the_image_built_here():
    known = subcommands()
    for name in NARRATOR:
        service = SERVICES[name]
        assert service["command"][0] == "avalon" and service["command"][1] in known, name
        assert service["build"] == "." and service["pull_policy"] == "build", name
        assert service["restart"], name


def test_no_password_is_fixed_in_the_file_and_no_service_uses_the_guest_login():
    text = (ROOT / "docker-compose.yml").read_text()
    assert "guest" not in text
    assert SERVICES["db"]["environment"]["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    assert SERVICES["rabbitmq"]["environment"]["RABBITMQ_DEFAULT_PASS"].startswith("${RABBITMQ_PASSWORD:?")


def test_the_services_reach_postgresql_and_rabbitmq_by_their_compose_names_with_settings_from_env():
    fields = Settings.model_fields
    known = {*fields, *broker_users.BrokerUserSettings.model_fields}  # broker-users reads its own too
    for name in NARRATOR:
        env = SERVICES[name]["environment"]
        if name != "broker-users":
            assert env["DATABASE_URL"].startswith("postgresql+asyncpg://") and "@db:5432/" in env["DATABASE_URL"]
            assert "${POSTGRES_PASSWORD" in env["DATABASE_URL"]
        if name != "migrate":
            assert "@rabbitmq:5672/" in env["AMQP_URL"] and env["BUS_PREFIX"] == "${BUS_PREFIX:-avalon}"
        for key in env:
            assert key.lower() in known, f"{name}: {key} is not a setting"
    telegram = SERVICES["telegram"]["environment"]
    for setting in fields:
        if setting.startswith("telegram_") or setting in ("bus_prefix", "delivery_limit", "log_level"):
            assert setting.upper() in telegram, f"{setting.upper()} cannot be set through compose"


def test_each_service_logs_in_to_rabbitmq_as_its_own_user_and_only_broker_users_knows_the_admin():
    for role in BUS_USERS:
        url = SERVICES[role]["environment"]["AMQP_URL"]
        user = broker_users.user_name("${BUS_PREFIX:-avalon}", role)  # the name broker-users gives it
        # the engine always runs: its password is required; a gateway's only when its profile is on,
        # which broker-users checks (compose would require it even for a service whose profile is off)
        needed = ":?" if role == "engine" else ":-}"
        assert url.startswith(f"amqp://{user}:${{{broker_users.password_variable(role)}{needed}"), url
    assert set(BUS_USERS) == set(broker_users.roles()), "every service with a broker user runs in compose"
    text = (ROOT / "docker-compose.yml").read_text()
    admins = [name for name, service in SERVICES.items() if "${RABBITMQ_PASSWORD" in str(service)]
    assert sorted(admins) == ["broker-users", "rabbitmq"], admins
    assert "${RABBITMQ_PASSWORD" not in text.split("\nservices:")[0], "not in a block every service shares"


def test_the_migration_step_has_no_broker_login():
    assert not any("AMQP" in key or "RABBITMQ" in key for key in SERVICES["migrate"]["environment"])


def test_broker_users_runs_once_as_the_admin_with_every_services_password_before_the_services():
    service = SERVICES["broker-users"]
    env = service["environment"]
    assert service["command"] == ["avalon", "broker-users"] and service["restart"] == "no"
    assert env["AMQP_URL"].startswith("amqp://avalon:${RABBITMQ_PASSWORD:?")
    assert SERVICES["rabbitmq"]["environment"]["RABBITMQ_DEFAULT_USER"] == "avalon"
    assert env["RABBITMQ_MANAGEMENT_URL"] == "http://rabbitmq:15672"
    assert SERVICES["rabbitmq"]["image"].endswith("-management"), "the image has the management API"
    for role in BUS_USERS:
        variable = broker_users.password_variable(role)
        assert env[variable].startswith(f"${{{variable}:?" if role == "engine" else f"${{{variable}:-}}"), variable
    assert env["COMPOSE_PROFILES"] == "${COMPOSE_PROFILES:-}"
    # the channels .env configures, named without passing their secrets
    configured = env["CONFIGURED_CHANNELS"].split(",")
    for channel in CHANNELS:
        assert f"${{{channel.configured_by.upper()}:+{channel.name}}}" in configured, channel.name
    # the engine's exchanges and queues are declared with the engine's own settings
    for key in ("BUS_PREFIX", "DELIVERY_LIMIT"):
        assert env[key] == SERVICES["engine"]["environment"][key]
    assert service["depends_on"]["rabbitmq"]["condition"] == "service_started"


def test_every_service_with_a_broker_user_has_a_password_setting_and_env_example_lists_them():
    example = (ROOT / ".env.example").read_text()
    for role in broker_users.roles():
        variable = broker_users.password_variable(role)
        assert variable.lower() in broker_users.BrokerUserSettings.model_fields, variable
        assert re.search(rf"^{variable}=$", example, re.M), f"{variable} is not required in .env.example"
        assert variable in README, f"{variable} is not in the README"
    assert "RABBITMQ_MANAGEMENT_URL=" in example and "RABBITMQ_MANAGEMENT_URL" in README


def test_the_operations_guides_rabbitmqctl_commands_are_what_avalon_broker_users_print_writes():
    blocks = re.findall(r"```sh\n(.*?)\n```", (ROOT / "docs" / "operations.md").read_text(), re.S)
    printed = "\n".join(broker_users.rabbitmqctl_commands(vhost="/", prefix="avalon"))
    assert printed in blocks, "docs/operations.md's rabbitmqctl block is out of date: paste `avalon broker-users --print`"
    assert "| `avalon broker-users` |" in README


def test_the_email_gateway_runs_avalon_email_needing_what_the_telegram_gateway_needs():
    assert SERVICES["email"]["command"] == ["avalon", "email"]
    assert SERVICES["email"]["depends_on"] == SERVICES["telegram"]["depends_on"]
    assert SERVICES["email"]["healthcheck"] == SERVICES["telegram"]["healthcheck"]


def test_every_email_setting_can_be_set_through_compose():
    env = SERVICES["email"]["environment"]
    missing = [name for name in EMAIL_SETTINGS if name not in env]
    assert not missing, f"not passed to the email service: {missing}"
    for setting in ("bus_prefix", "delivery_limit", "log_level"):
        assert setting.upper() in env


def test_a_default_compose_fills_in_is_the_settings_own_default():
    # `${SMTP_PORT:-587}` must say what shared/config.py says; an empty one (`${SMTP_HOST:-}`) is for
    # a value the host must give
    for service in ("telegram", "email"):
        for name, value in SERVICES[service]["environment"].items():
            found = re.fullmatch(r"\$\{(\w+):-(.*)\}", str(value))
            if not found or not found.group(2):
                continue
            assert found.group(1) == name, f"{service}: {name} reads ${{{found.group(1)}}}"
            field = Settings.model_fields[name.lower()]
            given = TypeAdapter(field.annotation).validate_python(found.group(2))
            assert given == field.default, f"{service}: {name} defaults to {found.group(2)}, not {field.default}"


def documented_in_the_readme() -> set[str]:
    """The variables in the first column of the README's settings table: one table, as Markdown
    renders it (a blank line ends a table; rows after it are no longer part of it)."""
    section = README.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| variable |"))
    names = set()
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_every_setting_has_a_row_in_the_readme_settings_table():
    missing = [name.upper() for name in Settings.model_fields if name.upper() not in documented_in_the_readme()]
    assert not missing, f"not in the README's settings table: {missing}"


def test_every_setting_is_in_env_example():
    example = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", example, re.M))
    missing = [name.upper() for name in Settings.model_fields if name.upper() not in listed]
    assert not missing, f"not in .env.example: {missing}"
    assert set(EMAIL_SETTINGS) <= listed


def test_the_dockerfile_installs_the_package_on_python_311_and_runs_avalon():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11", dockerfile, re.M)
    assert "pip install" in dockerfile and "COPY services" in dockerfile and "COPY shared" in dockerfile
    assert 'CMD ["avalon"' in dockerfile
    assert "USER " in dockerfile, "the services do not run as root"


def test_the_one_shot_steps_are_not_restarted_into_a_loop():
    # they wait for the broker and the database themselves: a failure (a database of a newer version,
    # a missing password) is for the host to fix, and `up` says which step failed
    for name in ("migrate", "broker-users"):
        assert SERVICES[name]["restart"] == "no", name


def test_each_service_is_passed_every_setting_its_command_reads():
    for name in NARRATOR:
        command = SERVICES[name]["command"][1]
        env = SERVICES[name]["environment"]
        missing = [field.upper() for field in reads(command) if field.upper() not in env]
        assert not missing, f"{name}: {missing} cannot be set through compose"
    for channel in CHANNELS:
        env = SERVICES[channel.name]["environment"]
        assert {"THROTTLE_RATE", "THROTTLE_BURST"} <= set(env), channel.name


def test_broker_users_under_compose_asks_only_for_the_passwords_of_the_channels_it_runs():
    check = broker_users.compose_check
    Extra = broker_users.BrokerUserSettings
    telegram_only = dict(engine_amqp_password="e", telegram_amqp_password="t", configured_channels="telegram,")
    assert check(Extra(compose_profiles="telegram", **telegram_only)) == ([], [])
    problems, _ = check(Extra(compose_profiles="telegram,email", **telegram_only))
    assert len(problems) == 2 and "EMAIL_AMQP_PASSWORD is not set" in problems[0], problems
    assert "EMAIL_ADDRESS is not set" in problems[1], problems
    problems, warnings = check(Extra(compose_profiles="", **telegram_only))
    assert problems == [] and len(warnings) == 1, warnings
    assert "TELEGRAM_BOT_TOKEN is set but COMPOSE_PROFILES does not have telegram" in warnings[0]
    assert "COMPOSE_PROFILES=telegram" in warnings[0], "it says what to write"
    assert check(Extra(**telegram_only)) == ([], []), "by hand (not under compose): nothing to compare"
