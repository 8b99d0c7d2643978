"""The pictures an event brings, for every channel: the board with ``board_shown``, the whole game with
``game_ended``, drawn from the table's picture (``Table.picture``: folded from the game's public
events only) in the reader's language.

Drawn once per (game, event, language): a mail to each of seven players in two languages is two
drawings, not seven. The bytes are the same for the same game and language (shared.pictures), so
what the outbox keeps (``encode``: the PNG in the row's JSON, base64) is what a retry sends again;
a row never needs the game's events again to be sent.
"""

from __future__ import annotations

import base64
from collections import OrderedDict
from typing import Mapping

from avalon.shared.pictures import draw_board, draw_end
from avalon.shared.protocol import EventEnvelope

from .table import Table

#: the drawings kept for readers of the same event still to be drawn (a few events' worth)
KEEP = 32


class Photos:
    def __init__(self) -> None:
        self._drawn: OrderedDict[tuple[str, str, str], bytes] = OrderedDict()
        self.drawings = 0  # pictures drawn (not taken from the ones kept): the tests and benches read it

    def of(self, table: Table, envelope: EventEnvelope, names: Mapping[str, str], locale: str) -> bytes | None:
        """The PNG this event brings a reader of ``locale``; None when it brings none (another event, a
        board asked for before the game started, a cancelled game's end)."""
        kind = envelope.event.type
        game = table.picture
        if kind == "board_shown":
            if not game.seats:
                return None
            draw = draw_board
        elif kind == "game_ended":
            if game.ending is None:
                return None
            draw = draw_end
        else:
            return None
        key = (table.game_id, envelope.message_id, locale)
        png = self._drawn.get(key)
        if png is None:
            png = self._drawn[key] = draw(game, names, locale)
            self.drawings += 1
            while len(self._drawn) > KEEP:
                self._drawn.popitem(last=False)
        return png


def encode(png: bytes) -> str:
    """The PNG as an outbox row keeps it (its body is JSON)."""
    return base64.b64encode(png).decode("ascii")


def decode(text: str) -> bytes:
    return base64.b64decode(text)
