"""The settings as a command reads them: every bad one named at once, in plain words, no secret shown;
no quiet default for a server a host must name; each command's --help lists what it reads."""

from __future__ import annotations

import pytest

from avalon.services import settings_check
from avalon.services.channels import CHANNELS
from avalon.services.cli import build_parser
from avalon.shared.config import Settings
from avalon.shared.runtime import BadSetting

EMAIL = {"EMAIL_ADDRESS": "narrator@example.org", "EMAIL_SECRET": "s" * 32, "SMTP_HOST": "smtp.example.org",
         "IMAP_HOST": "imap.example.org", "IMAP_USER": "narrator", "IMAP_PASSWORD": "hunter2"}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def problems(command: str, **env: str) -> list[str]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        try:
            settings_check.load(command)
        except BadSetting as error:
            return error.problems
    return []


def test_the_defaults_run_the_embedded_narrator_without_a_problem():
    assert problems("run") == [] and problems("engine") == [] and problems("migrate") == []


def test_every_bad_value_and_every_missing_setting_is_named_at_once():
    found = problems("run", LOG_LEVEL="loud", DELIVERY_LIMIT="many", THROTTLE_RATE="x", OPS_LISTEN="bogus",
                     DATABASE_URL="garbage", EMAIL_ADDRESS="narrator@example.org", BUS_PREFIX="")
    said = " | ".join(found)
    for name in ("LOG_LEVEL='loud'", "DELIVERY_LIMIT='many': expected a whole number", "THROTTLE_RATE='x': "
                 "expected a number", "OPS_LISTEN='bogus'", "DATABASE_URL='garbage'", "EMAIL_SECRET", "SMTP_HOST",
                 "IMAP_HOST", "IMAP_USER", "IMAP_PASSWORD"):
        assert name in said, (name, found)
    assert not any("Value error" in p or "Input should" in p for p in found), found


def test_a_bad_value_of_a_setting_a_command_does_not_read_does_not_stop_it():
    assert problems("migrate", DELIVERY_LIMIT="many", SMTP_SECURITY="bogus") == []
    assert problems("engine", SMTP_SECURITY="bogus") == []
    assert problems("email", **EMAIL, SMTP_SECURITY="bogus") == ["SMTP_SECURITY='bogus': expected none, starttls or tls"]


def test_a_secret_is_named_but_never_shown():
    found = problems("run", **{**EMAIL, "EMAIL_SECRET": "short-secret", "TELEGRAM_BOT_TOKEN": "bad token"})
    assert any("EMAIL_SECRET" in p for p in found) and any("TELEGRAM_BOT_TOKEN" in p for p in found), found
    assert not any("short-secret" in p or "bad token" in p for p in found), found


def test_the_mail_servers_have_no_quiet_default():
    assert Settings.model_fields["smtp_host"].default is None and Settings.model_fields["imap_host"].default is None
    assert problems("email", **EMAIL) == []
    assert problems("email", **{**EMAIL, "SMTP_HOST": ""}) == [
        "SMTP_HOST is not set: the server the narrator sends through"]


def test_a_channel_command_without_its_channel_says_how_to_add_it():
    for channel in CHANNELS:
        found = problems(channel.name)
        assert found and found[0] == f"{channel.configured_by.upper()} is not set: {channel.how}", found


def test_a_webhook_without_its_secret_is_a_bad_setting():
    found = problems("telegram", TELEGRAM_BOT_TOKEN="123:ABC", TELEGRAM_WEBHOOK_URL="https://narrator.example")
    assert found == ["TELEGRAM_WEBHOOK_SECRET is not set: webhook mode (TELEGRAM_WEBHOOK_URL) needs the secret "
                     "Telegram must send"]


def test_every_setting_is_read_by_some_command_and_its_help_says_so():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    read = set()
    for name, command in commands.items():
        text = command.format_help()
        for field in settings_check.reads(name):
            read.add(field)
            assert f"  {field.upper()} " in text, f"avalon {name} --help does not list {field.upper()}"
            assert Settings.model_fields[field].description, field
    assert read == set(Settings.model_fields), set(Settings.model_fields) - read
