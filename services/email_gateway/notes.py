"""What the email gateway keeps of each game beside the table every channel folds alike
(``shared.delivery.table``): the game's title in subjects, the mails whose pick is already in the
leader's draft, and the commands sent by mail whose receipt is still owed."""

from __future__ import annotations

from dataclasses import dataclass, field

from avalon.shared.delivery.channel import Game


@dataclass
class Pending:
    """A command sent for a player, confirmed (a receipt) with the first event it causes."""

    player: str
    what: str  # the wording key of the receipt: what_<kind>
    names: str = ""
    text: str = ""


@dataclass
class MailNotes:
    title: str = ""
    pending: dict[str, Pending] = field(default_factory=dict)  # command message_id -> its receipt
    #: the seats open for a substitute (their holders' ids), and the seats offered by mail: (address, the
    #: holder of the seat offered to it), the newest last. Tuples with class-level defaults, so a game
    #: pickled before they existed reads back without them.
    open_seats: tuple[str, ...] = ()
    offers: tuple[tuple[str, str], ...] = ()

    def offered(self, address: str) -> str | None:
        """The holder of the seat last offered to ``address`` by mail and still open, if any."""
        return next((holder for to, holder in reversed(self.offers) if to == address and holder in self.open_seats),
                    None)

    def offer(self, address: str, holder: str) -> None:
        self.offers = (*[(to, h) for to, h in self.offers if to != address], (address, holder))[-200:]


def title_of(game: Game) -> str:
    """How the game is named in its mails: the table's name (a Telegram group's title), else the code
    the game was opened with."""
    return game.table.title or game.own.title or game.table.game_id


def open_games_of(games, player: str) -> list[Game]:
    """The games not over in which ``player`` has a part (host, player or invited)."""
    return [g for g in games if not g.table.over and g.table.concerns(player)]
