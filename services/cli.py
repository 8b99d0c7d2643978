"""The ``avalon`` command line."""

from __future__ import annotations

import argparse
import json
import sys

from services.engine import main as engine_main
from services.engine import simulate_cli


def _schema(args) -> int:
    from shared.protocol import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="avalon", description="The Resistance: Avalon narrator")
    sub = parser.add_subparsers(dest="command", required=True)
    simulate_cli.add_parser(sub)
    engine_main.add_parsers(sub)
    p = sub.add_parser("schema", help="print the JSON Schema of every message on the bus")
    p.set_defaults(run=_schema)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
