"""Whether this machine can check the pictures exactly (tests/unit/test_pictures.py, tests/e2e/test_installed_package.py)."""

from __future__ import annotations

import os

import pytest

from avalon.shared.pictures.canvas import SHAPING

#: The golden bytes and Persian's joined letters need Pillow's Raqm, which loads FriBiDi from the system
#: (Debian: libfribidi0; the Dockerfile installs it). Without it these tests skip, saying so; CI installs
#: it and requires them (AVALON_REQUIRE_SHAPING=1), as it does Dovecot and Docker.
needs_shaping = pytest.mark.skipif(
    not SHAPING and os.environ.get("AVALON_REQUIRE_SHAPING") != "1",
    reason="Pillow cannot shape text here (Raqm needs FriBiDi: install libfribidi0); the pictures' golden "
           "bytes and Persian shaping are not checked")
