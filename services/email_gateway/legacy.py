"""A game kept by the email gateway before the tables were shared (a pickled ``MailGame``), read into
today's ``Game``: a game under way when the narrator was upgraded goes on with its seats, phase,
links, the leader's draft and the receipts still owed."""

from __future__ import annotations

from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.legacy import read_legacy
from avalon.shared.delivery.table import PRESSES_KEPT, Draft, Seats, Table, Turn
from avalon.shared.game import Phase
from avalon.shared.protocol import ChoicesOffered

from .notes import MailNotes, Pending

GONE = {("services.email_gateway.memory", "MailGame"), ("services.email_gateway.memory", "Pending")}


def upgrade(blob: bytes) -> Game | None:
    kept = read_legacy(blob, GONE)
    if not hasattr(kept, "get") or kept.get("game_id") is None:
        return None
    offers = {player: ChoicesOffered.model_validate(data) for player, data in (kept.get("offers") or {}).items()}
    table = Table(
        kept.get("game_id"),
        seats=Seats(host=kept.get("host", ""), players=list(kept.get("players", [])),
                    invited=list(kept.get("invited", [])), people=dict(kept.get("people") or {})),
        options=kept.get("options"),
        turn=Turn(phase=Phase(kept.get("phase", "lobby")), phase_id=kept.get("phase_id", 0),
                  leader=kept.get("leader"), team_size=kept.get("team_size", 0), offers=offers),
        draft=Draft(picks=list(kept.get("draft", [])), holder=kept.get("draft_excalibur"),
                    presses=tuple(kept.get("drafted", []))[-PRESSES_KEPT:]),  # the mails whose pick it holds
        over=kept.get("over", False), seen_seq=kept.get("seen_seq", 0))
    pending = {command: Pending(p.get("player"), p.get("what"), names=p.get("names", ""), text=p.get("text", ""))
               for command, p in (kept.get("pending") or {}).items()}
    notes = MailNotes(title=kept.get("title") or kept.get("game_id"), pending=pending)
    return Game(table, notes)
