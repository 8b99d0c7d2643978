"""The ``avalon`` command line."""

from __future__ import annotations

import argparse
import sys

from services.engine import simulate_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="avalon", description="The Resistance: Avalon narrator")
    sub = parser.add_subparsers(dest="command", required=True)
    simulate_cli.add_parser(sub)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
