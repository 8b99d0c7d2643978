"""The message protocol: schemas, round trips, and the documentation kept in step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from avalon.shared.protocol import (
    ALL_COMMANDS,
    ALL_EVENTS,
    INTERNAL_EVENTS,
    CommandEnvelope,
    EventEnvelope,
    Person,
    UpdateProfile,
    event_body,
    from_core_command,
    to_core_command,
    to_core_event,
)
from avalon.services.engine.simulate import random_game
from avalon.services.engine.rules import Options, ProposeTeam

ROOT = Path(__file__).resolve().parents[2]


def test_avalon_schema_prints_valid_json_schema_for_every_message():
    out = subprocess.run([sys.executable, "-m", "avalon.services.cli", "schema"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    schema = json.loads(out)
    for part in ("command", "event"):
        jsonschema.Draft202012Validator.check_schema(schema[part])
    text = json.dumps(schema)
    for name in list(ALL_COMMANDS) + list(ALL_EVENTS):
        assert f'"{name}"' in text, f"{name} missing from the schema"


def test_protocol_doc_lists_every_command_and_every_published_event_with_its_audience():
    doc = (ROOT / "docs" / "protocol.md").read_text()
    for name in ALL_COMMANDS:
        assert f"`{name}`" in doc, f"command {name} is not documented"
    for name in ALL_EVENTS:
        if name not in INTERNAL_EVENTS:
            assert f"`{name}`" in doc, f"event {name} is not documented"


def test_every_event_of_a_whole_game_survives_the_wire_unchanged():
    record = random_game(10, Options(lady=True, excalibur=True), seed=3, keep=True)
    assert record.events
    for event in record.events:
        body = event_body(event)
        wire = EventEnvelope(message_id="g:1", game_id="g", seq=1, occurred_at="2026-01-01T00:00:00Z",
                             audience={"kind": event.audience.kind, "players": event.audience.players},
                             event=body).model_dump_json()
        back = EventEnvelope.model_validate_json(wire)
        assert to_core_event(back.event, back.audience) == event


def test_a_command_round_trips_through_json_to_the_same_core_command():
    command = ProposeTeam(actor="tg:1", phase_id=4, team=("tg:1", "tg:2"), excalibur="tg:2")
    envelope = from_core_command(command, "g1")
    back = CommandEnvelope.model_validate_json(envelope.model_dump_json())
    assert to_core_command(back) == command


@pytest.mark.parametrize("bad", [
    {"game_id": "g", "actor": "a", "command": {"type": "cast_vote"}},  # missing field
    {"game_id": "g", "actor": "a", "command": {"type": "cast_vote", "approve": True, "x": 1}},  # unknown field
    {"game_id": "g", "actor": "a", "command": {"type": "launch_missiles"}},
    {"game_id": "", "actor": "a", "command": {"type": "join"}},
    {"v": 2, "game_id": "g", "actor": "a", "command": {"type": "join"}},
    {"game_id": "g", "actor": "a", "command": {"type": "play_card", "card": "maybe"}},
])
def test_malformed_commands_are_refused_by_the_schema(bad):
    with pytest.raises(ValidationError):
        CommandEnvelope.model_validate(bad)


@pytest.mark.parametrize("channel, named", [
    ("telegram", True), ("discord", True), ("matrix_2", True),
    ("", False), ("Telegram", False), ("tele gram", False), ("a.b", False), ("a,b", False), ("x" * 33, False),
])
def test_a_commands_channel_is_any_short_lower_case_name(channel, named):
    """Which channels exist is the composition root's to say: the schema only keeps out what no routing
    key, broker user or column could carry."""
    command = {"game_id": "g", "actor": "a", "channel": channel, "command": {"type": "join"}}
    if named:
        assert CommandEnvelope.model_validate(command).channel == channel
    else:
        with pytest.raises(ValidationError):
            CommandEnvelope.model_validate(command)


def test_a_profiles_addresses_are_one_record_and_the_older_fields_are_still_taken_into_it():
    older = UpdateProfile.model_validate({"type": "update_profile", "telegram_chat_id": -100, "email": "a@b.org"})
    assert older.all_addresses() == {"telegram": "-100", "email": "a@b.org"}
    both = UpdateProfile(email="old@b.org", addresses={"email": "new@b.org", "matrix": "@a:b.org"})
    assert both.all_addresses() == {"email": "new@b.org", "matrix": "@a:b.org"}
    assert UpdateProfile(display_name="Ann").all_addresses() == {}
    for bad in ({"Email": "a@b.org"}, {"email": ""}, {"email": "x" * 255}):
        with pytest.raises(ValidationError):
            UpdateProfile(addresses=bad)


OLD_EVENT = {"v": 1, "message_id": "g:2", "game_id": "g", "seq": 2, "occurred_at": "2026-01-01T00:00:00Z",
             "audience": {"kind": "public"}, "event": {"type": "player_joined", "player": "tg:1"}}


def test_an_event_of_an_older_engine_without_readers_or_people_still_reads():
    envelope = EventEnvelope.model_validate(OLD_EVENT)
    assert envelope.readers == () and envelope.people == {}


def test_readers_and_people_round_trip_and_nothing_unknown_is_accepted_in_them():
    wire = {**OLD_EVENT, "readers": ["tg:1", "mail:ann@example.org"],
            "people": {"mail:ann@example.org": {"display_name": "Ann", "language": "en", "time_zone": "Europe/Paris"},
                       "tg:1": {}}}
    envelope = EventEnvelope.model_validate(wire)
    assert envelope.people["mail:ann@example.org"] == Person(display_name="Ann", language="en",
                                                              time_zone="Europe/Paris")
    assert envelope.people["tg:1"] == Person()
    assert EventEnvelope.model_validate_json(envelope.model_dump_json()) == envelope
    with pytest.raises(ValidationError):
        EventEnvelope.model_validate({**wire, "people": {"tg:1": {"nickname": "x"}}})
    with pytest.raises(ValidationError):
        EventEnvelope.model_validate({**wire, "listeners": []})


def test_avalon_schema_shows_who_reads_an_event_and_how_each_reader_is_named():
    out = subprocess.run([sys.executable, "-m", "avalon.services.cli", "schema"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    event = json.loads(out)["event"]
    assert {"readers", "people"} <= set(event["properties"]) and not {"readers", "people"} & set(
        event.get("required", []))
    assert set(event["$defs"]["Person"]["properties"]) == {"display_name", "language", "time_zone"}
    doc = (ROOT / "docs" / "protocol.md").read_text()
    for name in ("`readers`", "`people`", "### A mixed game"):
        assert name in doc, f"{name} is not documented"
