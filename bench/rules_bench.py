"""Rules engine benchmark: median microseconds per full random game.

Not a test: it prints numbers. For 5, 7 and 10 players with every option on
(Lady, Excalibur, Lancelot variant 1, both house rules, anonymous votes, good
may fail, Oberon known to evil), it times:

- full:   a whole random legal game through the real engine, lobby to reveal,
          including the random player choosing among ``legal_commands``;
- engine: the same games' commands replayed through ``apply`` alone;
- ref:    a fixed pure-Python workload run interleaved in the same process, so
          the ratio full/ref can be compared across machines and noisy runs.

    python bench/rules_bench.py [--games 400] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from avalon.services.engine.rules import Lancelot, Options, apply, new_game  # noqa: E402
from avalon.services.engine.simulate import random_game  # noqa: E402

EVERY_OPTION = replace(
    Options(),
    lady=True,
    excalibur=True,
    lancelot=Lancelot.V1,
    last_word=True,
    assassin_may_delegate=True,
    anonymous_votes=True,
    good_may_fail=True,
    oberon_known_to_evil=True,
)


def reference_workload() -> None:
    """About as much plain Python as a game: dict and tuple churn, no engine code."""
    d: dict[int, int] = {}
    t: tuple = ()
    for i in range(1500):
        d = dict(d)
        d[i % 10] = i
        t = t + (i,) if len(t) < 20 else (i,)


def time_us(fn, *args) -> float:
    start = time.perf_counter_ns()
    fn(*args)
    return (time.perf_counter_ns() - start) / 1000


def replay(commands) -> None:
    state = new_game()
    for command in commands:
        state = apply(state, command).state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=400, help="games per player count and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {args.games} games x {args.rounds} rounds per player count")
    print(f"{'players':>7} {'full us':>9} {'engine us':>10} {'ref us':>8} {'full/ref':>9} {'cmds':>6} {'us/cmd':>7}")
    for players in (5, 7, 10):
        full, engine, ref, cmds = [], [], [], []
        seed = 0
        for _ in range(args.rounds):
            for _ in range(args.games):
                full.append(time_us(random_game, players, EVERY_OPTION, seed))
                ref.append(time_us(reference_workload))
                seed += 1
            records = [random_game(players, EVERY_OPTION, s, keep=True) for s in range(seed - args.games, seed)]
            for record in records:
                engine.append(time_us(replay, record.commands))
                cmds.append(len(record.commands))
        f, e, r = statistics.median(full), statistics.median(engine), statistics.median(ref)
        c = statistics.mean(cmds)
        print(f"{players:>7} {f:>9.0f} {e:>10.0f} {r:>8.0f} {f / r:>9.2f} {c:>6.0f} {e / c:>7.1f}")
    print("target: a full 10-player game with every option in under 1000 us (median)")


if __name__ == "__main__":
    main()
