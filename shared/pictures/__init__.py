"""The game as a picture: the board mid-game and the whole game at its end, drawn from the public
events only (record.py), in the reader's language (words.py), as PNG bytes that are the same for the
same game and language.

    game = picture_of(events)              # a game's events, in order; private ones change nothing
    draw_board(game, names, "fa")          # the quest track, the vote track, the holders
    draw_end(game, names, "fa")            # the vote-history grid and the roles revealed
"""

from .board import draw_board
from .history import draw_end
from .record import Ending, GamePicture, Proposal, QuestResult, picture_of, step

__all__ = ["Ending", "GamePicture", "Proposal", "QuestResult", "draw_board", "draw_end", "picture_of", "step"]
