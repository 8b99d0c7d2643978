"""Games a channel kept before the tables were one fold for every channel: their rows held the
channel's own record of the game (pickled), whose class no longer exists. ``read_legacy`` reads
such a row with stand-ins for the classes that are gone, so a channel can turn it into today's
``Game`` and a game under way when the narrator was upgraded goes on."""

from __future__ import annotations

import io

from avalon.shared.snapshots import Reader


class Record:
    """A stand-in for a class that is gone: the attributes it was pickled with, and no more."""

    def __setstate__(self, state) -> None:
        if isinstance(state, tuple):  # (dict, slots) for a class with slots
            state = {**(state[0] or {}), **(state[1] or {})}
        self.__dict__.update(state or {})

    def get(self, name: str, default=None):
        return self.__dict__.get(name, default)


class _Reader(Reader):
    def __init__(self, blob: bytes, gone: set[tuple[str, str]]) -> None:
        super().__init__(io.BytesIO(blob))  # a class gone is looked for under its old name first
        self.gone = gone

    def find_class(self, module: str, name: str):
        if (module, name) in self.gone:
            return Record
        return super().find_class(module, name)


def read_legacy(blob: bytes, gone: set[tuple[str, str]]):
    """The object pickled in ``blob``, each class of ``gone`` (module, name) read as a ``Record``."""
    return _Reader(blob, gone).load()  # noqa: S301 - our own rows
