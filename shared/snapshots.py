"""Our own pickled rows read back: a game's state (the engine), each channel's record of a game and the
Telegram gateway's memory. Rows written before the narrator was installed under its own name name their
classes ``services.…`` and ``shared.…``; they are read as the same classes under ``avalon.``, so a
game under way when a host upgrades goes on."""

from __future__ import annotations

import io
import pickle

_MOVED = ("services", "shared")  # the top-level packages of the versions before ``avalon``


def current_module(module: str) -> str:
    """The module a class pickled under ``module`` lives in now."""
    return f"avalon.{module}" if module.partition(".")[0] in _MOVED else module


class Reader(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        return super().find_class(current_module(module), name)


def loads(blob: bytes):
    """The object pickled in ``blob`` by this version or one before the move under ``avalon``."""
    return Reader(io.BytesIO(blob)).load()  # noqa: S301 - our own rows
