"""Rows pickled by the narrator before it was installed under ``avalon`` (its modules were the top-level
``services`` and ``shared``) are read into today's classes: a game under way when a host upgrades goes
on. The blobs in pre_rename_pickles.json were made by that version (commit c22fe64)."""

from __future__ import annotations

import base64
import json
import pickle
from pathlib import Path

import pytest

from avalon.services.email_gateway.notes import MailNotes
from avalon.services.engine.rules import GameState
from avalon.services.engine.store import _snapshot
from avalon.services.telegram_gateway.memory import GroupGame, Memory
from avalon.shared import snapshots
from avalon.shared.delivery.games import GameBook
from avalon.shared.delivery.table import Table
from avalon.shared.game import Phase

KEPT = json.loads((Path(__file__).parent / "pre_rename_pickles.json").read_text())


def blob(name: str) -> bytes:
    return base64.b64decode(KEPT[name])


def test_the_old_rows_name_the_old_modules():
    """What the rows hold: classes of the top-level ``services``/``shared``, which an installed narrator
    no longer has (tests/e2e/test_installed_package.py checks that nothing of that name is installed)."""
    for name in ("engine_state", "telegram_game", "mail_game", "telegram_memory"):
        assert b"avalon" not in blob(name) and (b"services." in blob(name) or b"shared." in blob(name)), name


def test_the_engine_goes_on_with_a_game_state_kept_before_the_move():
    state = _snapshot(blob("engine_state"))
    assert isinstance(state, GameState)
    facts = KEPT["engine_state_facts"]
    assert (state.phase.value, list(state.players), state.leader) == (facts["phase"], facts["players"], facts["leader"])
    assert [r.value for r in state.roles] == facts["roles"]


@pytest.mark.parametrize("name, own_type", [("telegram_game", GroupGame), ("mail_game", MailNotes)])
def test_a_channel_reads_its_record_of_a_game_kept_before_the_move(name, own_type):
    game = GameBook(None, lambda game_id: None)._read(blob(name))  # the outbox is not used to read a row
    assert isinstance(game.table, Table) and isinstance(game.own, own_type)
    table = game.table
    assert (table.game_id, table.title, table.seats.host, len(table.seats.players)) == (
        "tg-1001_1", "Friday table", "tg:1", 7)
    assert table.turn.phase is Phase.PROPOSAL and table.turn.leader == "tg:1" and table.draft.picks == ["tg:2"]
    assert table.seats.people["tg:1"].display_name == "Ana"
    assert table.offer("tg:1").choices[0].count == 2
    assert game.own.title == "Friday table"


def test_the_telegram_gateway_reads_its_memory_kept_before_the_move():
    memory = snapshots.loads(blob("telegram_memory"))
    assert isinstance(memory, Memory)
    assert memory.current == {-1001: "tg-1001_1"} and memory.names == {"tg:1": "Ana"} and memory.reachable == {"tg:1"}


def test_todays_rows_read_back_as_they_were():
    state = _snapshot(blob("engine_state"))
    assert _snapshot(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)) == state
