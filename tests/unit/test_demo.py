"""``avalon demo``: a whole game with scripted players through the real engine service, as the group
and each player read it, in every language; reproducible, private facts kept private, nothing left
behind."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import tempfile
import time

import pytest

from avalon.services import cli, demo
from avalon.services.engine.rules import Options
from avalon.shared.narration.render import LOCALES, glossary

SEED = "4242"
LABEL = re.compile(r"^\[(?:group|(?P<player>.+), private)\]$")
#: A setting the demo must ignore: no database server is running there.
FOREIGN_DATABASE = "postgresql+asyncpg://nobody:secret@127.0.0.1:1/nothing"


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(argv))
        except SystemExit as exit_:  # argparse
            status = exit_.code
    return status, out.getvalue(), err.getvalue()


def blocks(output: str) -> list[tuple[str | None, str]]:
    """The printed messages as (reader, text): reader None for the group, else the player's name."""
    found: list[tuple[str | None, list[str]]] = []
    for line in output.splitlines():
        label = LABEL.match(line)
        if label:
            found.append((label["player"], []))
        elif found:
            found[-1][1].append(line)
    return [(reader, "\n".join(lines).strip()) for reader, lines in found]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A working directory holding only a ``.env`` that points elsewhere, and an empty temporary
    directory the demo's scratch database must go into (and leave)."""
    cwd = tmp_path_factory.mktemp("cwd")
    (cwd / ".env").write_text(f"DATABASE_URL={FOREIGN_DATABASE}\n")
    scratch = tmp_path_factory.mktemp("scratch")
    saved = os.getcwd(), tempfile.tempdir, os.environ.get("DATABASE_URL")
    os.chdir(cwd)
    tempfile.tempdir = str(scratch)
    os.environ["DATABASE_URL"] = FOREIGN_DATABASE
    try:
        yield cwd, scratch
    finally:
        os.chdir(saved[0])
        tempfile.tempdir = saved[1]
        if saved[2] is None:
            os.environ.pop("DATABASE_URL", None)
        else:
            os.environ["DATABASE_URL"] = saved[2]


@pytest.fixture(scope="module")
def games(world):
    """Each language's demo of SEED, through ``avalon demo`` as typed: (status, stdout, stderr)."""
    return {lang: run_cli("demo", "--lang", lang, "--seed", SEED) for lang in LOCALES}


@pytest.mark.parametrize("lang", LOCALES)
def test_demo_prints_a_whole_game_in_each_language(games, lang):
    status, out, err = games[lang]
    assert status == 0 and err == ""
    assert out.startswith(f"Avalon demo: 7 players, classic preset, language {lang}, seed {SEED}\n")
    messages = blocks(out)
    names = demo.NAMES[lang].split()[:7]
    assert messages[0][0] is None  # the group's lobby comes first
    assert {reader for reader, _ in messages} == {None, *names}
    last_reader, last_text = messages[-1]
    g = glossary(lang)
    assert last_reader is None and any(t.casefold() in last_text.casefold() for t in g["team_short"].values())
    for term in (g["approve"], g["reject"], g["quest"]):  # the narration speaks the language
        assert term.casefold() in out.casefold()
    if lang != "en":
        assert "Your role" not in out


@pytest.mark.parametrize("lang", LOCALES)
def test_each_player_gets_a_role_card_and_the_group_never_sees_one(games, lang):
    messages = blocks(games[lang][1])
    g = glossary(lang)
    group_lines = {line.strip() for reader, text in messages if reader is None for line in text.splitlines()}
    group_text = "\n".join(text for reader, text in messages if reader is None)
    cards: dict[str, str] = {}
    for reader, text in messages:
        if reader is not None and reader not in cards:
            cards[reader] = text  # the deal is each player's first private message
    assert len(cards) == 7
    for player, card in cards.items():
        assert any(role in card for role in g["roles"].values()), f"{player}'s first message is no role card"
        assert card not in group_text
        for line in card.splitlines():
            assert line.strip() not in group_lines, f"{player}'s card line {line!r} reached the group"
    for reader, text in messages:  # a card is dealt once, to its player
        assert reader is None or text not in cards.values() or cards[reader] == text


def test_private_events_reach_their_players_alone():
    record = asyncio.run(demo.play(7, Options(), "en", int(SEED)))
    kinds = {}
    for message in record.messages:
        kinds.setdefault(message.kind, set()).add(message.reader is None)
    for private in ("role_assigned", "vote_cast", "card_played", "choices_offered"):
        assert kinds.get(private, {False}) == {False}, private
    assert kinds["votes_revealed"] == kinds["game_ended"] == {True}
    assert not {"deadline_missed", "phase_reminder", "command_rejected"} & kinds.keys()
    dealt = [m.reader for m in record.messages if m.kind == "role_assigned"]
    assert sorted(dealt) == sorted(record.names)


@pytest.mark.parametrize("lang", ["en", "fa"])
def test_the_same_seed_prints_the_same_game_twice(games, lang):
    assert run_cli("demo", "--lang", lang, "--seed", SEED) == games[lang]


def test_another_seed_prints_another_game_and_no_seed_prints_the_one_it_drew(world):
    status, out, _ = run_cli("demo", "--players", "5", "--preset", "online")
    drawn = re.match(r"Avalon demo: 5 players, online preset, language en, seed (\d+)\n", out)
    assert status == 0 and drawn
    assert f"avalon demo --players 5 --lang en --preset online --seed {drawn[1]}" in out
    assert run_cli("demo", "--players", "5", "--preset", "online", "--seed", drawn[1])[1] == out


def test_nothing_is_left_in_the_working_directory_or_the_temporary_one(games, world):
    cwd, scratch = world
    assert all(status == 0 for status, _, _ in games.values())
    assert sorted(p.name for p in cwd.iterdir()) == [".env"]
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ["--players", "4"], ["--players", "11"], ["--players", "13", "--preset", "forum"], ["--lang", "de"],
    ["--preset", "house"], ["--seed", "soon"],
])
def test_invalid_values_exit_with_status_2_and_one_line(argv):
    status, out, err = run_cli("demo", *argv)
    assert status == 2 and out == ""
    assert err.strip().splitlines()[-1].startswith(("avalon demo: error:", "avalon: error:"))
    assert len([line for line in err.splitlines() if "error" in line]) == 1


def test_a_game_waiting_for_nobody_has_its_deadline_brought_forward_not_waited_for(monkeypatch):
    from avalon.services.console.players import ScriptedPlayers

    answer = ScriptedPlayers.act
    skipped: list[str] = []

    async def sulk_once(self, offer):  # the first leader never picks a team
        if not skipped and offer.phase.value == "proposal":
            skipped.append(offer.player)
            return
        await answer(self, offer)

    monkeypatch.setattr(ScriptedPlayers, "act", sulk_once)
    started = time.monotonic()
    record = asyncio.run(demo.play(5, Options(), "en", 7))
    assert time.monotonic() - started < 15  # the proposal's deadline is 10 minutes
    kinds = [m.kind for m in record.messages]
    assert skipped and "deadline_missed" in kinds and "proposal_missed" in kinds
    assert kinds[-1] == "game_ended"


def test_every_language_of_the_narration_has_names_for_the_most_seats():
    assert tuple(demo.NAMES) == LOCALES
    for lang, names in demo.NAMES.items():
        assert len(set(names.split())) == 12, lang
