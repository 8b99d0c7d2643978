"""docker-compose.yml and the Dockerfile, read as files: quick checks of what a host relies on.
The stack itself is built and run in tests/e2e/test_compose_stack.py."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from services.cli import build_parser
from shared.config import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
NARRATOR = ("migrate", "engine", "telegram")


def subcommands() -> set[str]:
    parser = build_parser()
    return set(next(a for a in parser._actions if a.dest == "command").choices)


def test_the_stack_has_a_broker_a_database_a_migration_step_the_engine_and_the_telegram_gateway():
    assert {"rabbitmq", "db", "migrate", "engine", "telegram"} <= set(SERVICES)


def test_the_broker_keeps_its_node_name_so_its_queues_survive_down_and_up():
    assert SERVICES["rabbitmq"]["hostname"]
    assert any(v.endswith(":/var/lib/rabbitmq") for v in SERVICES["rabbitmq"]["volumes"])
    assert any(v.endswith(":/var/lib/postgresql/data") for v in SERVICES["db"]["volumes"])
    assert {"rabbitmq", "postgres"} <= set(COMPOSE["volumes"])


def test_gateways_run_only_behind_their_profile_so_the_engine_can_run_alone():
    assert SERVICES["telegram"]["profiles"] == ["telegram"]
    for name in ("rabbitmq", "db", "migrate", "engine"):
        assert "profiles" not in SERVICES[name], name


def test_the_services_start_after_one_migration_step_a_healthy_database_and_a_started_broker():
    assert SERVICES["migrate"]["command"] == ["avalon", "migrate"]
    assert SERVICES["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    for name in ("engine", "telegram"):
        needs = SERVICES[name]["depends_on"]
        assert needs["migrate"]["condition"] == "service_completed_successfully"
        # not service_healthy: the services connect with retries as soon as it listens, instead of
        # waiting for the broker's first (30 s) healthcheck; their own readiness includes the bus
        assert needs["rabbitmq"]["condition"] == "service_started"
        assert needs["db"]["condition"] == "service_healthy"


def seconds(duration: str) -> int:
    return int(duration.removesuffix("s"))


def test_healthchecks_are_true_and_quick_where_a_service_waits_on_them():
    # start_interval would be the way, but needs Docker Engine 25: the intervals themselves are short
    assert "127.0.0.1" in SERVICES["db"]["healthcheck"]["test"], "pg_isready over TCP, not the init socket"
    for name in ("db", "engine", "telegram"):
        check = SERVICES[name]["healthcheck"]
        assert check["test"] and seconds(check["interval"]) <= 5 and "start_interval" not in check, name
    assert SERVICES["rabbitmq"]["healthcheck"]["test"]
    for name in ("engine", "telegram"):
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
    for name in NARRATOR:
        env = SERVICES[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgresql+asyncpg://") and "@db:5432/" in env["DATABASE_URL"]
        assert "${POSTGRES_PASSWORD" in env["DATABASE_URL"] and "${RABBITMQ_PASSWORD" in env["AMQP_URL"]
        assert "@rabbitmq:5672" in env["AMQP_URL"]
        for key in env:
            assert key.lower() in fields, f"{name}: {key} is not a setting"
    telegram = SERVICES["telegram"]["environment"]
    for setting in fields:
        if setting.startswith("telegram_") or setting in ("bus_prefix", "delivery_limit", "log_level"):
            assert setting.upper() in telegram, f"{setting.upper()} cannot be set through compose"


def test_the_dockerfile_installs_the_package_on_python_311_and_runs_avalon():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11", dockerfile, re.M)
    assert "pip install" in dockerfile and "COPY services" in dockerfile and "COPY shared" in dockerfile
    assert 'CMD ["avalon"' in dockerfile
    assert "USER " in dockerfile, "the services do not run as root"
