"""docker-compose.yml and the Dockerfile, checked statically (no Docker engine runs here)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from services.cli import build_parser
from shared.config import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def subcommands() -> set[str]:
    parser = build_parser()
    return set(next(a for a in parser._actions if a.dest == "command").choices)


def test_the_stack_has_a_broker_a_database_the_engine_and_the_telegram_gateway():
    assert {"rabbitmq", "db", "engine", "telegram"} <= set(SERVICES)


def test_the_broker_and_the_database_have_healthchecks_the_services_wait_for():
    for name in ("rabbitmq", "db"):
        assert SERVICES[name]["healthcheck"]["test"], name
    for name in ("engine", "telegram"):
        needs = SERVICES[name]["depends_on"]
        assert needs["rabbitmq"]["condition"] == "service_healthy"
        assert needs["db"]["condition"] == "service_healthy"


def test_every_service_runs_a_real_avalon_command():
    known = subcommands()
    for name in ("engine", "telegram"):
        command = SERVICES[name]["command"]
        assert command[0] == "avalon" and command[1] in known, command


def test_the_services_reach_postgresql_and_rabbitmq_by_their_compose_names():
    for name in ("engine", "telegram"):
        env = SERVICES[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgresql+asyncpg://") and "@db:5432/" in env["DATABASE_URL"]
        assert "@rabbitmq:5672" in env["AMQP_URL"]
        for key in env:
            assert key.lower() in Settings.model_fields, f"{name}: {key} is not a setting"
    db = SERVICES["db"]["environment"]
    url = SERVICES["engine"]["environment"]["DATABASE_URL"]
    assert f"{db['POSTGRES_USER']}:{db['POSTGRES_PASSWORD']}@db:5432/{db['POSTGRES_DB']}" in url


def test_the_telegram_gateway_refuses_to_start_without_a_token():
    assert re.search(r"\$\{TELEGRAM_BOT_TOKEN:\?", SERVICES["telegram"]["environment"]["TELEGRAM_BOT_TOKEN"])


def test_the_dockerfile_installs_the_package_on_python_311_and_runs_avalon():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11", dockerfile, re.M)
    assert "pip install" in dockerfile and "COPY services" in dockerfile and "COPY shared" in dockerfile
    assert 'CMD ["avalon"' in dockerfile
    assert "USER " in dockerfile, "the services do not run as root"
