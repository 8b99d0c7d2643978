"""The package as a host installs it: `pip install .` (not editable) into a fresh virtual
environment, run from a folder with no source beside it. Everything the program reads at run
time (templates, glossaries, the migrations) must come from the installed package: an image
built from the Dockerfile is exactly this install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.unit.shaping import needs_shaping

ROOT = Path(__file__).resolve().parents[2]
SKIP = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", "*.db", ".env",
                              "tests", "bench", ".pytest_cache")

pytestmark = pytest.mark.slow

RENDER = """
import json, pathlib, avalon.shared.narration.render as r
from avalon.shared.narration.render import LOCALES, Narrator, Recipient, Context, glossary
from avalon.shared.protocol import EventEnvelope
envelope = EventEnvelope.model_validate({"message_id": "g:1", "game_id": "g", "seq": 1,
    "occurred_at": "2026-01-01T20:00:00Z", "audience": {"kind": "public"},
    "event": {"type": "player_joined", "player": "test:1"}})
texts = {l: Narrator().render(envelope, Recipient(None, (l,)), "telegram", Context({"test:1": "Ann"})).text
         for l in LOCALES}
root = pathlib.Path(r.ROOT)
print(json.dumps({"root": str(root), "texts": texts, "templates": len(list(pathlib.Path(r.TEMPLATES).rglob("*.html"))),
                  "glossaries": len(list(root.rglob("glossary.toml"))), "catalogs": len(list(root.rglob("*.po")))}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("installed")
    source = scratch / "source"
    shutil.copytree(ROOT, source, ignore=SKIP)
    env_dir = scratch / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(source)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shutil.rmtree(source)  # nothing of the checkout is left to fall back on
    work = scratch / "work"
    work.mkdir()
    return python, work


def run(installed, *args: str, **kw) -> subprocess.CompletedProcess:
    python, work = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DATABASE_URL")}
    return subprocess.run([str(python), *args], cwd=work, env=env, capture_output=True, text=True, timeout=300,
                          **kw)


def test_the_installed_package_carries_every_template_catalog_and_glossary_and_renders_in_six_languages(installed):
    import json

    out = run(installed, "-c", RENDER)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout)
    assert "site-packages" in found["root"] and not found["root"].startswith(str(ROOT)), found["root"]
    ours = ROOT / "shared" / "narration" / "templates"
    assert found["templates"] == len(list(ours.rglob("*.html"))) and found["glossaries"] == 6, found
    assert found["catalogs"] == 5, found
    for locale, text in found["texts"].items():
        assert "Ann" in text, (locale, text)
    assert len(set(found["texts"].values())) == 6, "each language says it in its own words"


def test_the_installed_avalon_plays_a_whole_game_and_migrates_a_database(installed):
    python, work = installed
    avalon = str(python.parent / "avalon")
    demo = subprocess.run([avalon, "demo", "--players", "5", "--lang", "fr", "--seed", "3"], cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "[group]" in demo.stdout and "private]" in demo.stdout
    assert "🏁" in demo.stdout and " gagne" in demo.stdout, demo.stdout[-1500:]  # the game ended, in French
    env = {**os.environ, "DATABASE_URL": f"sqlite+aiosqlite:///{work / 'a.db'}"}
    migrated = subprocess.run([avalon, "migrate"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    assert (work / "a.db").exists()
    assert sys.version_info >= (3, 11)


DRAW = """
import sys, pathlib, avalon.shared.pictures.canvas as canvas
sys.path.insert(0, sys.argv[1])  # the golden game and its names, from the checkout's tests
from picture_game import NAMES, golden_game, mid_game
from avalon.shared.pictures import draw_board, draw_end, picture_of
out = pathlib.Path(sys.argv[2])
(out / "board.fa.png").write_bytes(draw_board(picture_of(mid_game(golden_game())), NAMES, "fa"))
(out / "end.vi.png").write_bytes(draw_end(picture_of(golden_game()), NAMES, "vi"))
print(canvas.FONTS)
"""


@needs_shaping
def test_the_installed_package_draws_the_golden_pictures_with_its_own_fonts(installed):
    python, work = installed
    out = run(installed, "-c", DRAW, str(ROOT / "tests" / "unit"), str(work))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "site-packages" in out.stdout and not out.stdout.startswith(str(ROOT)), out.stdout
    golden = ROOT / "tests" / "golden" / "pictures"
    assert (work / "board.fa.png").read_bytes() == (golden / "board.fa.png").read_bytes()
    assert (work / "end.vi.png").read_bytes() == (golden / "end.vi.png").read_bytes()
