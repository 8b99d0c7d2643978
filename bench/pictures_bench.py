"""Pictures benchmark: CPU time to draw the board and the end of a game (shared/pictures). Not a test:
it prints numbers.

A 10-player game (Lady of the Lake and Excalibur, five quests, many proposals: the seed is the first
from --seed whose game has at least --proposals of them), names in four scripts. Each draw is timed
with time.process_time_ns (this process's CPU, not the wall clock): the data folded from the game's
events, then the picture drawn to PNG bytes, in every language in turn (the fonts and words of a
language are loaded once, before the timing). Prints the median and the 90th percentile per picture.

    python bench/pictures_bench.py [--draws 200] [--seed 1] [--proposals 14]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from avalon.services.engine.rules import Options  # noqa: E402
from avalon.services.engine.simulate import random_game  # noqa: E402
from avalon.shared.languages import LOCALES  # noqa: E402
from avalon.shared.pictures import draw_board, draw_end, picture_of  # noqa: E402

NAMES = {"p1": "Ann", "p2": "Nguyễn Thị Bảo", "p3": "فرشته", "p4": "Дмитрий Соколов", "p5": "Eva",
         "p6": "پگاه رضایی", "p7": "Chloé", "p8": "Trần Văn Đức", "p9": "Ольга", "p10": "Willem-Jan"}


def game(seed: int, proposals: int):
    options = replace(Options(), lady=True, excalibur=True, max_players=10)
    for s in range(seed, seed + 500):
        record = random_game(10, options, s, timeout_rate=0.05, keep=True)
        if record.proposals >= proposals and sum(type(e).__name__ == "QuestResolved" for e in record.events) == 5:
            return s, record
    raise SystemExit(f"no game with {proposals} proposals and five quests from seed {seed}")


def timed(draws: int, draw) -> list[float]:
    out = []
    for i in range(draws):
        locale = LOCALES[i % len(LOCALES)]
        start = time.process_time_ns()
        draw(locale)
        out.append((time.process_time_ns() - start) / 1e6)
    return out


def report(label: str, ms: list[float]) -> None:
    ms = sorted(ms)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    print(f"{label:<22} median {statistics.median(ms):6.2f} ms   p90 {p90:6.2f} ms   ({len(ms)} draws)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--proposals", type=int, default=14)
    args = parser.parse_args()
    seed, record = game(args.seed, args.proposals)
    events = record.events
    middle = events[: len(events) * 2 // 3]
    for locale in LOCALES:  # warm up: fonts, catalogs, compiled sentences
        draw_board(picture_of(middle), NAMES, locale)
        draw_end(picture_of(events), NAMES, locale)
    end = draw_end(picture_of(events), NAMES, "en")
    print(f"game: seed {seed}, 10 players, {record.proposals} proposals, {len(events)} events; "
          f"end picture {len(end)} bytes")
    report("board (fold + draw)", timed(args.draws, lambda loc: draw_board(picture_of(middle), NAMES, loc)))
    report("end of game", timed(args.draws, lambda loc: draw_end(picture_of(events), NAMES, loc)))


if __name__ == "__main__":
    main()
