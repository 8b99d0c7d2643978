"""Why the store refused a batch's commit: another engine moved a game, or a command id was
processed already. Raised by the store and by its PostgreSQL writer (``pg_batch``)."""

from __future__ import annotations


class Conflict(Exception):
    """The game changed under us (another engine instance): reload and decide again."""


class Duplicate(Exception):
    """This command id was processed already."""
