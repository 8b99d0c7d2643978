"""Random legal playouts (OpenSpiel's random_sim_test style): 10,240 seeded games.

Every preset x player count is one test. Within it, every combination of the
per-game options (lady, excalibur, lancelot none/1/2/3, last_word,
assassin_may_delegate, anonymous_votes, good_may_fail, close_early,
oberon_known_to_evil) whose bit count has the player count's parity is played
once, so two neighbouring player counts together play all 1,024 combinations in
each preset. The role set (standard or an explicit selection that fits) and the
missed-deadline rate (0, 0.1 or 0.2) vary per game from its seed.

Each game is checked event by event by ``EventChecker`` (the test's own model,
written from docs/rules.md), and the views are checked after the deal, at a random
moment and at the end. Every 50th game is also replayed from its commands and
from its events. A failure lists the broken games with their seed and options
and the line that reproduces each.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import pytest

from avalon.services.engine.rules import (Accepted, CreateGame, Options, Rejection, apply, new_game, replay_commands,
                                   replay_events)
from avalon.shared.game import events as ev
from avalon.shared.game.model import Lancelot, Phase, Role
from avalon.services.engine.simulate import random_game

from .playout_invariants import EventChecker
from .playout_rules import role_set_fits

FLAGS = ("lady", "excalibur", "last_word", "assassin_may_delegate", "anonymous_votes", "good_may_fail",
         "close_early", "oberon_known_to_evil")
LANCELOTS = (Lancelot.NONE, Lancelot.V1, Lancelot.V2, Lancelot.V3)
#: all 4 x 2^8 = 1,024 option combinations: (lancelot, flags...)
COMBOS = list(itertools.product(LANCELOTS, *[(False, True)] * len(FLAGS)))

R = Role
#: None is the standard set (twice, so it is the most common); the rest are host
#: selections, each played wherever it fits the player count and Lancelot.
ROLE_SETS = (
    None, None, (), (R.PERCIVAL,), (R.OBERON,), (R.PERCIVAL, R.MORGANA), (R.MORGANA, R.MORDRED),
    (R.MORDRED, R.OBERON), (R.MORGANA, R.OBERON), (R.PERCIVAL, R.MORDRED, R.OBERON),
    (R.PERCIVAL, R.MORGANA, R.MORDRED, R.OBERON),
)
TIMEOUT_RATES = (0.0, 0.0, 0.1, 0.2)

PRESET_PLAYERS = {"classic": range(5, 11), "online": range(5, 11), "forum": range(5, 13)}
CELLS = [(preset, n) for preset, counts in PRESET_PLAYERS.items() for n in counts]
PRESET_NUMBER = {"classic": 1, "online": 2, "forum": 3}
REPLAY_EVERY = 50
VIEW_POINTS = 1  # random mid-game moments per game at which every view is checked


@dataclass(frozen=True)
class Spec:
    preset: str
    players: int
    seed: int
    timeout_rate: float
    overrides: tuple

    @property
    def options(self) -> Options:
        return Options.preset_defaults(self.preset, **dict(self.overrides))

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.overrides)
        return (f"seed={self.seed} players={self.players} preset={self.preset} timeout_rate={self.timeout_rate}"
                f" | reproduce: random_game({self.players}, Options.preset_defaults({self.preset!r}, {args}),"
                f" {self.seed}, timeout_rate={self.timeout_rate}, keep=True)")


def plan(preset: str, players: int) -> list[Spec]:
    specs = []
    for c, (lancelot, *flags) in enumerate(COMBOS):
        if (sum(flags) + (lancelot is not Lancelot.NONE) + players) % 2:
            continue
        seed = PRESET_NUMBER[preset] * 100_000 + players * 2_000 + c
        pick = random.Random(seed)
        fitting = [r for r in ROLE_SETS if role_set_fits(r, players, lancelot is not Lancelot.NONE)]
        overrides = dict(zip(FLAGS, flags), lancelot=lancelot, roles=pick.choice(fitting))
        specs.append(Spec(preset, players, seed, pick.choice(TIMEOUT_RATES), tuple(overrides.items())))
    return specs


def play_and_check(spec: Spec, *, replay: bool) -> None:
    options = spec.options
    record = random_game(spec.players, options, spec.seed, timeout_rate=spec.timeout_rate, keep=True)
    commands, events = record.commands, record.events
    assert isinstance(events[-1], ev.GameEnded), f"the log does not end with GameEnded: {events[-1]}"

    # Where to look at the views: after the deal (CreateGame, the joins, StartGame)
    # and after one random command before the last one; the end comes last.
    dealt = spec.players + 1
    rng = random.Random(spec.seed * 7 + 1)
    later = range(dealt + 1, len(commands))
    points = {dealt, *rng.sample(later, min(VIEW_POINTS, len(later)))}
    state, replayed, at_event = new_game(), [], {}
    for i, command in enumerate(commands[:max(points)], start=1):
        result = apply(state, command)
        assert isinstance(result, Accepted), f"command {i} refused on replay: {command} -> {result}"
        state = result.state
        replayed.extend(result.events)
        if i in points:
            at_event[len(replayed)] = (state, f"after command {i}/{len(commands)} ({type(command).__name__})")
    assert replayed == events[:len(replayed)], "replaying the commands gave different events"

    checker = EventChecker(spec.preset, spec.players, options, spec.seed)
    for index, event in enumerate(events):
        if index in at_event:
            checker.check_views(*at_event[index])
        try:
            checker.feed(event)
        except AssertionError as e:
            raise AssertionError(f"event {index} {type(event).__name__}: {e}") from None
    checker.finish(record.state)
    checker.check_views(record.state, "at the end")

    if replay:
        final, log = replay_commands(commands)
        assert log == events, "replay_commands gave a different event log"
        assert final.phase is record.state.phase and final.winner is record.state.winner
        rebuilt = replay_events(events)
        s = record.state
        assert (rebuilt.phase, rebuilt.winner, rebuilt.cause) == (s.phase, s.winner, s.cause), \
            f"replay_events ends {rebuilt.phase} {rebuilt.winner} {rebuilt.cause}, game {s.phase} {s.winner} {s.cause}"
        assert rebuilt.quest_results == s.quest_results, "replay_events gave other quest results"
        assert rebuilt.vote_log == s.vote_log, "replay_events gave another vote log"


def run_cell(specs: list[Spec]) -> None:
    failures = []
    for i, spec in enumerate(specs):
        try:
            play_and_check(spec, replay=i % REPLAY_EVERY == 0)
        except Exception as e:  # an engine crash is a failure of that game too
            failures.append(f"{spec}\n    {type(e).__name__}: {e}")
    assert not failures, (f"{len(failures)} of {len(specs)} games broke an invariant; the first ones:\n"
                          + "\n".join(failures[:5]))


@pytest.mark.slow
@pytest.mark.parametrize("preset,players", CELLS, ids=[f"{p}-{n}" for p, n in CELLS])
def test_random_legal_games_keep_every_rule(preset, players):
    specs = plan(preset, players)
    assert len(specs) == len(COMBOS) // 2
    run_cell(specs)


@pytest.mark.parametrize("preset", ["classic", "online"])
def test_eleven_and_twelve_players_play_only_in_the_forum_preset(preset):
    """docs/rules.md section 9: classic and online are for 5-10 players; 11-12 come from the forum seed."""
    refused = apply(new_game(), CreateGame(actor="p1", game_id="g", seed=1,
                                           options=Options.preset_defaults(preset, max_players=12)))
    assert isinstance(refused, Rejection) and "max_players" in refused.message
    with pytest.raises(AssertionError, match="refused"):
        random_game(11, Options.preset_defaults(preset), 1)
    assert random_game(12, Options.preset_defaults("forum"), 1).state.phase is Phase.ENDED


def test_the_plan_covers_every_option_combination_in_every_preset():
    for preset, counts in PRESET_PLAYERS.items():
        seen = {(dict(s.overrides)["lancelot"], *(dict(s.overrides)[f] for f in FLAGS))
                for n in counts for s in plan(preset, n)}
        assert seen == set(COMBOS), preset
        specs = [s for n in counts for s in plan(preset, n)]
        assert {s.timeout_rate for s in specs} == set(TIMEOUT_RATES)
        assert {dict(s.overrides)["roles"] for s in specs} == set(ROLE_SETS)
    assert sum(len(plan(p, n)) for p, n in CELLS) >= 10_000


# -- determinism ---------------------------------------------------------------

DETERMINISM_CASES = [
    (5, Options.preset_defaults("classic"), 0.0),
    (7, Options.preset_defaults("online", lady=True, anonymous_votes=True, good_may_fail=True), 0.15),
    (12, Options.preset_defaults("forum", lady=True, excalibur=True, lancelot=Lancelot.V1, last_word=True,
                                 assassin_may_delegate=True), 0.2),
]


@pytest.mark.parametrize("players,options,rate", DETERMINISM_CASES, ids=["classic-5", "online-7", "forum-12"])
def test_the_same_seed_and_options_give_the_identical_game(players, options, rate):
    for seed in (1, 99, 123456):
        first = random_game(players, options, seed, timeout_rate=rate, keep=True)
        second = random_game(players, options, seed, timeout_rate=rate, keep=True)
        assert first.events == second.events
        assert first.commands == second.commands
        assert (first.state.winner, first.state.cause) == (second.state.winner, second.state.cause)


@pytest.mark.parametrize("players", [5, 7, 10, 12])
def test_different_seeds_deal_different_seats_and_roles(players):
    options = Options.preset_defaults("forum")
    deals = []
    for seed in range(1, 9):
        record = random_game(players, options, seed, keep=True)
        dealt = next(e for e in record.events if isinstance(e, ev.Dealt))
        deals.append((dealt.seats, dealt.roles, dealt.first_leader))
    assert len(set(deals)) == len(deals), "two seeds dealt the same game"
    merlins = {seats[roles.index(Role.MERLIN)] for seats, roles, _ in deals}
    assert len(merlins) > 1, "Merlin went to the same player for every seed"
    assert len({seats for seats, _, _ in deals}) > 1, "every seed gave the same seat order"
