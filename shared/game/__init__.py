"""The game's vocabulary, the bottom floor every service speaks: roles, teams, phases and the
other enumerations (``model``), the rules' numbers (``numbers``), the options and presets
(``options``), the commands a player sends (``commands``), the events the engine tells
(``events``) and the reasons it refuses a command (``errors``). Nothing here does I/O or imports
anything above it; the rules that decide a game are the engine's (``services/engine/rules``)."""

from .commands import *  # noqa: F401,F403
from .errors import Reason, Rejection, reject  # noqa: F401
from .events import NOBODY, PUBLIC, Audience, AudienceKind, Event  # noqa: F401
from .model import *  # noqa: F401,F403
from .options import FORUM_TIMERS, PRESETS, Cast, Options, Timers, cast_for, check_options  # noqa: F401
