"""The rules core: pure, deterministic, no I/O, no clock, no global random.

    state = new_game()
    result = apply(state, CreateGame(actor="ann", game_id="g1", seed=7))
    state = result.state                       # or: decide(state, command) -> events
    view(state, "ann"); legal_commands(state, "ann")
"""

from avalon.shared.game.commands import *  # noqa: F401,F403
from .decide import Accepted, apply, decide, new_game, replay_commands, replay_events
from avalon.shared.game.errors import Reason, Rejection
from avalon.shared.game.events import PUBLIC, NOBODY, Audience, AudienceKind, Event
from .evolve import evolve
from .knowledge import knows, night_knowledge
from .legal import Legal, legal_commands, pending_players, table_commands
from avalon.shared.game.model import *  # noqa: F401,F403
from avalon.shared.game.options import PRESETS, Options, Timers, cast_for, check_options
from .state import GameState
from .view import View, view
