"""What the gateway remembers about its games, rebuilt from the events it receives.

It never decides a rule: it keeps what it needs to draw messages and buttons (which game a
group plays, the seat order, the options shown, the message to edit in place)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GameMemo:
    game_id: str
    chat_id: int
    host: str = ""
    players: list[str] = field(default_factory=list)  # join order, then seat order
    options: Any = None
    options_wanted: Any = None  # the host's latest /settings press, until the engine confirms or refuses it
    phase: str = "lobby"
    phase_id: int = 0
    leader: str | None = None
    team_size: int = 0
    picked: list[str] = field(default_factory=list)  # the leader's selection in progress
    sword: str | None = None
    lobby_message: int | None = None
    pick_message: int | None = None
    vote_message: int | None = None
    voted: list[str] = field(default_factory=list)
    language: str = "en"
    title: str = ""
    council: list[str] = field(default_factory=list)  # the evil council, as this gateway was told
    over: bool = False
    seen_seq: int = 0


@dataclass
class Memory:
    games: dict[str, GameMemo] = field(default_factory=dict)
    current: dict[int, str] = field(default_factory=dict)  # group chat -> its open game
    names: dict[str, str] = field(default_factory=dict)  # player id -> display name
    languages: dict[str, str] = field(default_factory=dict)  # player id -> language
    reachable: set[str] = field(default_factory=set)  # players who opened a private chat
    offers: dict[tuple[str, str], Any] = field(default_factory=dict)  # (game, player) -> ChoicesOffered
    board_requests: dict[str, int] = field(default_factory=dict)  # command id -> chat to answer in
    chat_languages: dict[int, str] = field(default_factory=dict)
    titles: dict[int, str] = field(default_factory=dict)
    settings_messages: dict[str, int] = field(default_factory=dict)  # game -> its settings message
    handled_updates: tuple[int, ...] = ()  # the latest Telegram updates handled (their ids), oldest first

    def migrate(self, old: int, new: int) -> None:
        """A group became a supergroup with a new id: its games follow it."""
        for memo in self.games.values():
            if memo.chat_id == old:
                memo.chat_id = new
        for mapping in (self.current, self.chat_languages, self.titles):
            if old in mapping:
                mapping[new] = mapping.pop(old)

    def games_of(self, player: str) -> list[GameMemo]:
        return [m for m in self.games.values() if player in m.players and not m.over]

    def game_of_chat(self, chat_id: int) -> GameMemo | None:
        game = self.current.get(chat_id)
        return self.games.get(game) if game else None
