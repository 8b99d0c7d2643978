"""What the Telegram gateway remembers beside the tables every channel folds alike
(``shared.delivery.table``): each group's open game, how its users are called and in which
language they read, who opened a private chat with the bot, and, per game, the messages it edits
in place. It never decides a rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GroupGame:
    """The Telegram side of one game (a ``Game``'s own part): the group it is played in, that group's
    language and title, and the messages edited in place as the game goes (a slot name while the
    message is still on its way out, its id once sent)."""

    chat_id: int
    language: str = "en"
    title: str = ""
    lobby_message: Any = None
    pick_message: Any = None
    vote_message: Any = None
    options_wanted: Any = None  # the host's latest /settings press, until the engine confirms or refuses it
    choosing_holder: bool = False  # the leader confirmed the team and now hands Excalibur (the sword buttons)
    #: the seats open for a substitute: (seat, the slot of the group's message with its "Take seat" button)
    open_seats: tuple[tuple[int, str], ...] = ()
    #: who no longer plays and who took their seat: (previous, successor), so their old buttons say why
    former: tuple[tuple[str, str], ...] = ()

    def successor(self, player: str) -> str | None:
        """Who took over the seat ``player`` held (None: nobody; they may still hold it)."""
        return dict(self.former).get(player)


@dataclass
class Memory:
    current: dict[int, str] = field(default_factory=dict)  # group chat -> its open game
    names: dict[str, str] = field(default_factory=dict)  # player id -> display name
    languages: dict[str, str] = field(default_factory=dict)  # player id -> language
    reachable: set[str] = field(default_factory=set)  # players who opened a private chat
    board_requests: dict[str, int] = field(default_factory=dict)  # command id -> chat to answer in
    chat_languages: dict[int, str] = field(default_factory=dict)
    titles: dict[int, str] = field(default_factory=dict)
    settings_messages: dict[str, int] = field(default_factory=dict)  # game -> its settings message
    handled_updates: tuple[int, ...] = ()  # the latest Telegram updates handled (their ids), oldest first
    usernames: dict[str, str] = field(default_factory=dict)  # @username (lower case) -> player id
    next_game: dict[int, tuple[str, ...]] = field(default_factory=dict)  # group chat -> who /nextgame told there

    def migrate(self, old: int, new: int) -> None:
        """A group became a supergroup with a new id: its chat settings follow it (its games' own
        parts are moved by the gateway)."""
        for mapping in (self.current, self.chat_languages, self.titles, self.next_game):
            if old in mapping:
                mapping[new] = mapping.pop(old)
