"""``avalon simulate``: random legal games through the real engine, with a summary."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace

from .rules import Lancelot, Options, Preset, Role, cast_for, check_options
from avalon.shared.game.errors import Rejection
from avalon.shared.game.model import OPTIONAL_ROLES
from .simulate import Summary, random_game


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="play random legal games and print statistics")
    p.add_argument("--players", type=int, required=True, help="number of players (5-12)")
    p.add_argument("--preset", default="classic", help="classic, online or forum")
    p.add_argument("--roles", default=None,
                   help="optional roles, comma separated: " + ",".join(r.value for r in OPTIONAL_ROLES))
    p.add_argument("--lady", action="store_true", help="play with the Lady of the Lake")
    p.add_argument("--excalibur", action="store_true", help="play with Excalibur")
    p.add_argument("--lancelot", default=None, help="Lancelot variant 1, 2 or 3")
    p.add_argument("--games", type=int, default=1000, help="how many games (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first game (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"avalon simulate: error: {message}", file=sys.stderr)
    return 2


def options_from(args) -> Options | str:
    try:
        preset = Preset(args.preset)
    except ValueError:
        return f"unknown preset {args.preset!r}; choose classic, online or forum"
    overrides: dict = {"lady": args.lady, "excalibur": args.excalibur}
    if args.lancelot is not None:
        try:
            overrides["lancelot"] = Lancelot(str(args.lancelot))
        except ValueError:
            return f"unknown Lancelot variant {args.lancelot!r}; choose 1, 2 or 3"
    if args.roles is not None:
        roles = []
        for name in filter(None, (r.strip() for r in args.roles.split(","))):
            try:
                roles.append(Role(name.lower()))
            except ValueError:
                return f"unknown role {name!r}; optional roles are " + ", ".join(r.value for r in OPTIONAL_ROLES)
        overrides["roles"] = tuple(roles)
    options = replace(Options.preset_defaults(preset), **overrides)
    problem = check_options(options)
    if problem is None:
        cast = cast_for(options, args.players)
        problem = cast if isinstance(cast, Rejection) else None
    if problem is not None:
        return problem.message
    return options


def run(args) -> int:
    if args.games < 1:
        return _fail("--games must be at least 1")
    options = options_from(args)
    if isinstance(options, str):
        return _fail(options)
    summary = Summary()
    started = time.perf_counter()
    for i in range(args.games):
        summary.add(random_game(args.players, options, args.seed + i))
    elapsed = time.perf_counter() - started
    result = {
        "games": summary.games,
        "good_wins": summary.good_wins,
        "evil_wins": summary.evil_wins,
        "wins_by_cause": dict(sorted(summary.wins_by_cause.items())),
        "average_proposals": round(summary.proposals / summary.games, 3),
        "games_per_second": round(summary.games / elapsed, 1) if elapsed > 0 else None,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"games played:       {result['games']}")
    print(f"good wins:          {result['good_wins']}")
    print(f"evil wins:          {result['evil_wins']}")
    print("wins by cause:")
    for cause, count in result["wins_by_cause"].items():
        print(f"  {cause:<20} {count}")
    print(f"average proposals:  {result['average_proposals']}")
    print(f"games per second:   {result['games_per_second']}")
    return 0
