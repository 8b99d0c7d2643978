"""What the email gateway remembers of each game, rebuilt from the events it receives (and kept
with them in the delivery core's ``delivery_games``): the seats, the phase, what each of its
players may do now, the leader's team in progress, and the commands it waits to confirm."""

from __future__ import annotations

import pickle
from dataclasses import MISSING, dataclass, field, fields
from typing import Any


@dataclass
class Pending:
    """A command sent for a player, confirmed (a receipt) with the first event it causes."""

    player: str
    what: str  # the wording key of the receipt: what_<kind>
    names: str = ""
    text: str = ""


@dataclass
class MailGame:
    game_id: str
    host: str = ""
    players: list[str] = field(default_factory=list)  # join order, then seat order
    phase: str = "lobby"
    phase_id: int = 0
    leader: str | None = None
    team_size: int = 0
    over: bool = False
    title: str = ""
    options: Any = None
    offers: dict[str, Any] = field(default_factory=dict)  # player -> their ChoicesOffered (dumped)
    draft: list[str] = field(default_factory=list)  # the leader's team in progress (mailto picks)
    draft_excalibur: str | None = None
    drafted: list[str] = field(default_factory=list)  # the mails whose pick is in the draft (read once)
    pending: dict[str, Pending] = field(default_factory=dict)  # command message_id -> its receipt
    invited: list[str] = field(default_factory=list)
    seen_seq: int = 0
    #: player id -> Person as last learned from the game's events: the names a restart must not forget
    people: dict[str, Any] = field(default_factory=dict)

    def blob(self) -> bytes:
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def load(blob: bytes) -> "MailGame":
        game = pickle.loads(blob)  # noqa: S301 - our own rows
        if not isinstance(game, MailGame):
            raise TypeError("not a MailGame")
        for f in fields(MailGame):  # saved before a field existed: its default
            if f.name not in game.__dict__ and f.default_factory is not MISSING:
                setattr(game, f.name, f.default_factory())
        return game

    def offer(self, player: str):
        from shared.protocol import ChoicesOffered

        data = self.offers.get(player)
        if data is None:
            return None
        offer = ChoicesOffered.model_validate(data)
        return offer if offer.phase_id == self.phase_id else None


def open_games_of(games: dict[str, MailGame], player: str) -> list[MailGame]:
    return [g for g in games.values() if not g.over and (player in g.players or player in g.invited
                                                         or player == g.host)]
