"""The ``avalon`` command line."""

from __future__ import annotations

import argparse
import json
import sys

from services import demo
from services.engine import main as engine_main
from services.engine import simulate_cli


def _schema(args) -> int:
    from shared.protocol import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _export(args) -> int:
    """Print a game's whole event log (JSON lines), internal records included once it is over."""
    import asyncio

    from services.engine.store import Store
    from shared.config import Settings

    async def run() -> int:
        store = Store(Settings().database_url)
        try:
            await store.migrate()
            loaded = await store.load(args.game_id)
            if loaded is None:
                print(f"avalon export: error: no game {args.game_id!r}", file=sys.stderr)
                return 2
            for envelope in await store.event_log(args.game_id, include_internal=loaded.state.over):
                print(envelope.model_dump_json())
            return 0
        finally:
            await store.close()

    return asyncio.run(run())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="avalon", description="The Resistance: Avalon narrator")
    sub = parser.add_subparsers(dest="command", required=True)
    simulate_cli.add_parser(sub)
    demo.add_parser(sub)
    engine_main.add_parsers(sub)
    p = sub.add_parser("schema", help="print the JSON Schema of every message on the bus")
    p.set_defaults(run=_schema)
    p = sub.add_parser("export", help="print a game's event log as JSON lines (with the deal once it is over)")
    p.add_argument("game_id")
    p.set_defaults(run=_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
