"""The walls between the floors (docs/architecture.md), as import-linter contracts in pyproject.toml:
every contract holds on the code as it is, and each one would catch the violation it is there for
(a planted import breaks it), so a wall cannot be dropped or loosened unnoticed."""

from __future__ import annotations

import ast
import os
import tomllib
from copy import deepcopy
from pathlib import Path

import grimp
import pytest
from importlinter import configuration
from importlinter.application import use_cases

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def walls():
    cwd = os.getcwd()
    os.chdir(ROOT)  # import-linter reads pyproject.toml from where it stands
    try:
        configuration.configure()
        use_cases._register_built_in_contract_types()
        options = use_cases.read_user_options(str(ROOT / "pyproject.toml"))
        graph = grimp.build_graph(*options.session_options["root_packages"], include_external_packages=True,
                                  cache_dir=None)
    finally:
        os.chdir(cwd)
    source = use_cases.ConfigSource(filename=None, user_options=options)
    contracts = {c["name"]: use_cases._get_contract_class(source, c["type"])(
        name=c["name"], session_options=options.session_options, contract_options=c)
        for c in options.contracts_options}
    return graph, contracts


def _broken(contract, graph) -> bool:
    return not contract.check(deepcopy(graph), verbose=False).kept


def _named(contracts, start: str):
    return next(c for name, c in contracts.items() if name.startswith(start))


def test_every_wall_holds(walls):
    graph, contracts = walls
    assert len(contracts) == len(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
                                 ["contracts"])
    broken = [name for name, contract in contracts.items() if _broken(contract, graph)]
    assert not broken, f"broken: {broken}; run `lint-imports` at the repository's root for the imports"


@pytest.mark.parametrize("importer, imported", [
    ("avalon.shared.protocol", "avalon.services.engine.service"),  # the shared floor reaching up into a service
    ("avalon.shared.game.events", "avalon.shared.protocol"),  # the game's vocabulary reaching up
    ("avalon.services.telegram_gateway.gateway", "avalon.services.email_gateway.gateway"),  # a gateway using another
    ("avalon.services.email_gateway.gateway", "avalon.services.engine.store"),  # a gateway using the engine
    ("avalon.services.engine.service", "avalon.services.telegram_gateway.gateway"),  # the engine using a gateway
    ("avalon.services.console.channel", "avalon.services.engine.service"),  # the demo's channel using the engine
    ("avalon.shared.delivery.pipeline", "avalon.services.telegram_gateway.channel"),  # the delivery core knowing a channel
    ("avalon.shared.pictures.board", "avalon.services.engine.service"),  # the pictures reaching into a service
    ("avalon.shared.narration.render", "avalon.shared.pictures.words"),  # the narration depending on the pictures
])
def test_the_floors_catch_an_import_that_runs_up_or_across(walls, importer, imported):
    graph, contracts = walls
    graph = deepcopy(graph)
    graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="planted")
    assert _broken(_named(contracts, "The floors"), graph)


@pytest.mark.parametrize("importer, imported", [
    ("avalon.services.engine.rules.decide", "asyncio"),
    ("avalon.services.engine.rules.rounds", "avalon.shared.bus"),
    ("avalon.shared.game.options", "datetime"),
])
def test_the_rules_core_wall_catches_io(walls, importer, imported):
    graph, contracts = walls
    graph = deepcopy(graph)
    if imported not in graph.modules:
        graph.add_module(imported, is_squashed=True)
    graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="planted")
    assert _broken(_named(contracts, "The rules core"), graph)


def test_the_cycle_wall_catches_two_modules_importing_each_other(walls):
    graph, contracts = walls
    graph = deepcopy(graph)
    graph.add_import(importer="avalon.services.engine.conflicts", imported="avalon.services.engine.store", line_number=1,
                     line_contents="planted")
    assert _broken(_named(contracts, "No import cycle"), graph)


#: What declares data rather than does something: its fields are the declaration (a game's state, a
#: view, an event, a table's row, the settings), not collaborators an object juggles.
RECORD_BASES = {"BaseModel", "SQLModel", "BaseSettings", "Body", "Enum", "CallbackData", "Protocol", "Exception"}
MOST_LINES, MOST_ATTRIBUTES = 400, 12


def _is_record(node: ast.ClassDef) -> bool:
    decorated = any("dataclass" in ast.unparse(d) for d in node.decorator_list)
    return decorated or any(ast.unparse(b).split(".")[-1] in RECORD_BASES for b in node.bases)


def _attributes(node: ast.ClassDef) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in sub.targets if isinstance(sub, ast.Assign) else [sub.target]:
                for part in ast.walk(target):
                    if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                        found.add(part.attr)
    return found


def _modules():
    for folder in ("services", "shared"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_no_module_is_past_400_lines_and_no_object_holds_more_than_12_attributes():
    long, crowded = [], []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MOST_LINES:
            long.append(f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and not _is_record(node):
                attributes = _attributes(node)
                if len(attributes) > MOST_ATTRIBUTES:
                    crowded.append(f"{path.relative_to(ROOT)}: {node.name} has {len(attributes)}")
    assert not long and not crowded, "split by concept: " + "; ".join(long + crowded)


def test_the_size_check_sees_a_crowded_object():
    crowded = ast.parse("class Juggler:\n    def __init__(self):\n" + "".join(
        f"        self.a{i} = {i}\n" for i in range(13)))
    node = crowded.body[0]
    assert not _is_record(node) and len(_attributes(node)) == 13


def _top_level_imports(text: str) -> list[str]:
    """The modules a source imports by absolute name that are the old top-level ``services``/``shared``."""
    found = []
    for node in ast.walk(ast.parse(text)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
        found += [n for n in names if n.partition(".")[0] in ("services", "shared")]
    return found


def test_the_code_is_imported_under_its_one_installed_name():
    """Installed, the narrator is ``avalon`` (``avalon.services``, ``avalon.shared``): no top-level
    ``services`` or ``shared`` exists. In a checkout both names would import, as two copies of every
    module (two registries, two sets of classes), so nothing may use the short one."""
    stray = [f"{path.relative_to(ROOT)}: {name}" for folder in ("services", "shared", "tests", "bench")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for name in _top_level_imports(path.read_text(encoding="utf-8"))]
    assert not stray, stray
    planted = _top_level_imports("from shared.game import Phase\nimport services.cli\nfrom avalon.shared import db\n")
    assert [name.partition(".")[0] for name in planted] == ["shared", "services"], planted
