"""``avalon simulate``: the summary it prints and the errors it refuses with."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from avalon.services.cli import main

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"games", "good_wins", "evil_wins", "wins_by_cause", "games_per_second"}
CAUSES = {"three_failed_quests", "hammer", "merlin_assassinated", "assassin_missed", "shot_forfeited"}
GOOD_CAUSES = {"assassin_missed", "shot_forfeited"}


def simulate_json(capsys, *args: str) -> dict:
    code = main(["simulate", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    lines = out.strip().splitlines()
    assert len(lines) == 1, f"--json must print one JSON object, got {out!r}"
    return json.loads(lines[0])


def check_summary(summary: dict, games: int) -> None:
    assert KEYS <= set(summary), f"missing keys: {KEYS - set(summary)}"
    assert summary["games"] == games
    assert summary["good_wins"] + summary["evil_wins"] == games
    by_cause = summary["wins_by_cause"]
    assert set(by_cause) <= CAUSES, f"unknown causes {set(by_cause) - CAUSES}"
    assert sum(by_cause.values()) == games
    assert summary["good_wins"] == sum(n for cause, n in by_cause.items() if cause in GOOD_CAUSES)
    assert isinstance(summary["games_per_second"], (int, float)) and summary["games_per_second"] > 0


@pytest.mark.parametrize("args", [
    ["--players", "5"],
    ["--players", "7", "--preset", "online", "--lady"],
    ["--players", "10", "--preset", "forum", "--lady", "--excalibur", "--lancelot", "1"],
    ["--players", "12", "--preset", "forum", "--lancelot", "3", "--roles", "percival,morgana,oberon"],
    ["--players", "6", "--roles", "MORGANA,Mordred"],  # the Assassin fallback: Morgana shoots
], ids=["classic-5", "online-7-lady", "forum-10-everything", "forum-12-roles", "fallback-shooter"])
def test_json_summary_adds_up(capsys, args):
    check_summary(simulate_json(capsys, *args, "--games", "40", "--seed", "3"), 40)


def test_classic_games_end_by_every_cause_but_the_forfeit(capsys):
    summary = simulate_json(capsys, "--players", "5", "--games", "300")
    check_summary(summary, 300)
    # random players reach the hammer, three failures and both shot outcomes;
    # nobody misses a deadline in simulate, so no shot is forfeited
    assert set(summary["wins_by_cause"]) == CAUSES - {"shot_forfeited"}
    assert summary["good_wins"] > 0 and summary["evil_wins"] > 0


def test_online_preset_never_ends_by_the_hammer(capsys):
    summary = simulate_json(capsys, "--players", "8", "--preset", "online", "--games", "200")
    check_summary(summary, 200)
    assert "hammer" not in summary["wins_by_cause"]


def test_the_same_seed_gives_the_same_results(capsys):
    first = simulate_json(capsys, "--players", "9", "--preset", "forum", "--lady", "--games", "30", "--seed", "77")
    again = simulate_json(capsys, "--players", "9", "--preset", "forum", "--lady", "--games", "30", "--seed", "77")
    other = simulate_json(capsys, "--players", "9", "--preset", "forum", "--lady", "--games", "30", "--seed", "78")
    same = ("good_wins", "evil_wins", "wins_by_cause")
    assert [first[k] for k in same] == [again[k] for k in same]
    assert first.get("average_proposals") == again.get("average_proposals")
    assert ([first[k] for k in same], first.get("average_proposals")) != \
        ([other[k] for k in same], other.get("average_proposals")), "seeds 77 and 78 played identical games"


def test_text_output_lists_the_summary(capsys):
    assert main(["simulate", "--players", "7", "--games", "25", "--seed", "5"]) == 0
    text, err = capsys.readouterr()
    assert err == ""
    assert main(["simulate", "--players", "7", "--games", "25", "--seed", "5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    lowered = text.lower()
    for label, key in [("games", "games"), ("good wins", "good_wins"), ("evil wins", "evil_wins")]:
        line = next((line for line in lowered.splitlines() if line.strip().startswith(label)), None)
        assert line is not None, f"no {label!r} line in:\n{text}"
        assert line.split()[-1] == str(summary[key]), f"{line!r} vs {summary[key]}"
    assert "wins by cause" in lowered and "games per second" in lowered
    for cause, count in summary["wins_by_cause"].items():
        assert any(line.split() == [cause, str(count)] for line in lowered.splitlines()), \
            f"cause {cause} ({count}) not listed in:\n{text}"


@pytest.mark.parametrize("args,words", [
    (["--players", "11"], ["10", "11"]),  # classic is for 5-10 players
    (["--players", "12", "--preset", "online"], ["10", "12"]),
    (["--players", "7", "--preset", "tournament"], ["tournament"]),
    (["--players", "7", "--roles", "percival,wizard"], ["wizard"]),
    (["--players", "7", "--roles", "merlin"], ["merlin"]),  # Merlin is always dealt, not chosen
    (["--players", "7", "--lancelot", "4"], ["4", "lancelot"]),
    (["--players", "5", "--roles", "morgana,mordred,oberon"], ["evil"]),  # 3 evil roles, 2 evil seats
    (["--players", "5", "--roles", "oberon,morgana", "--lancelot", "1"], ["evil"]),  # Lancelot takes an evil seat
    (["--players", "4"], ["5", "4"]),
    (["--players", "7", "--games", "0"], ["games"]),
    (["--players", "7", "--games", "-3"], ["games"]),
], ids=["11-classic", "12-online", "unknown-preset", "unknown-role", "merlin-not-optional", "lancelot-4",
        "too-many-evil-roles", "lancelot-leaves-no-seat", "too-few-players", "games-0", "games-negative"])
def test_invalid_options_exit_nonzero_with_a_clear_message(capsys, args, words):
    code = main(["simulate", *args, "--json"])
    out, err = capsys.readouterr()
    assert code != 0
    assert out == "", f"nothing may be printed on stdout for a refused run: {out!r}"
    message = err.strip().lower()
    assert message.startswith("avalon simulate: error:") and len(message.splitlines()) == 1, err
    for word in words:
        assert word in message, f"{word!r} not in {err!r}"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "avalon.services.cli", "simulate", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_a_real_process_prints_json_and_exits_zero():
    done = run_cli("--players", "8", "--preset", "forum", "--excalibur", "--games", "30", "--seed", "11", "--json")
    assert done.returncode == 0, done.stderr
    check_summary(json.loads(done.stdout), 30)


def test_a_real_process_refuses_bad_options_with_status_2():
    done = run_cli("--players", "11", "--preset", "classic")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "avalon simulate: error:" in done.stderr and "11" in done.stderr
