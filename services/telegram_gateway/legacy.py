"""A game kept by the Telegram gateway before the tables were shared (a ``GameMemo`` and the offers
made in it, pickled together), read into today's ``Game``: a game under way when the narrator was
upgraded goes on with its seats, phase, buttons and the messages it edits in place."""

from __future__ import annotations

from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.legacy import read_legacy
from avalon.shared.delivery.table import Draft, Seats, Table, Turn
from avalon.shared.game import Phase

from .memory import GroupGame

GONE = {("services.telegram_gateway.memory", "GameMemo")}


def upgrade(blob: bytes) -> Game | None:
    kept = read_legacy(blob, GONE)
    if not (isinstance(kept, tuple) and len(kept) == 2 and hasattr(kept[0], "get")):
        return None
    memo, offers = kept
    table = Table(
        memo.get("game_id"),
        seats=Seats(host=memo.get("host", ""), players=list(memo.get("players", []))),
        options=memo.get("options"),
        turn=Turn(phase=Phase(memo.get("phase", "lobby")), phase_id=memo.get("phase_id", 0),
                  leader=memo.get("leader"), team_size=memo.get("team_size", 0), voted=list(memo.get("voted", [])),
                  council=list(memo.get("council", [])), offers=dict(offers or {})),
        draft=Draft(picks=list(memo.get("picked", []))),
        over=memo.get("over", False), seen_seq=memo.get("seen_seq", 0))
    own = GroupGame(memo.get("chat_id"), language=memo.get("language", "en"), title=memo.get("title", ""),
                    lobby_message=memo.get("lobby_message"), pick_message=memo.get("pick_message"),
                    vote_message=memo.get("vote_message"), options_wanted=memo.get("options_wanted"))
    return Game(table, own)
