"""The Telegram gateway's words, each in its reader's language: an event rendered for the group or
one player, a rejection's reason for an alert, a template (help, rules, the settings), one of the
gateway's own sentences; and a private message headed with its game when the reader is in two."""

from __future__ import annotations

from typing import Any

from avalon.shared.delivery.channel import Game
from avalon.shared.narration.render import (
    Context,
    Narrator,
    Recipient,
    html_to_text,
    pick_locale,
    reasons,
    sentence,
    ui_text,
)
from avalon.shared.protocol import EventEnvelope

from .memory import Memory


class Speech:
    def __init__(self, memory: Memory, narrator: Narrator | None = None) -> None:
        self.memory = memory
        self.narrator = narrator or Narrator()

    def language_of(self, player: str | None, game: Game | None = None) -> tuple[str, ...]:
        """The reader's languages: theirs first, then the group's (a group reads the group's)."""
        group = game.own.language if game is not None else "en"
        if player is None:
            return (group,)
        return (self.memory.languages.get(player, group), group)

    def locale(self, player: str | None, game: Game | None = None) -> str:
        return pick_locale(self.language_of(player, game))

    def render(self, envelope: EventEnvelope, reader: str | None, game: Game | None) -> str:
        recipient = Recipient(reader, self.language_of(reader, game))
        return self.narrator.render(envelope, recipient, "telegram", Context(self.memory.names)).html

    def reason(self, reader: str | None, game: Game | None, reason: str, **params: Any) -> str:
        """A rejection sentence for an alert, in the reader's language (plain text)."""
        locale = self.locale(reader, game)
        template = sentence(locale, reasons(locale)[reason])
        return html_to_text(template.render(p=params, names=self.memory.names, tz=None, tz_known=False))

    def template(self, name: str, game: Game | None, reader: str | None = None, **variables: Any) -> str:
        locale = self.locale(reader, game)
        return self.narrator.render_template(locale, name, Recipient(reader, (locale,)),
                                             Context(self.memory.names), **variables).html

    def ui(self, game: Game | None, reader: str | None, key: str, **params: Any) -> str:
        return ui_text(self.locale(reader, game), key, **params)

    def name(self, player: str | None) -> str:
        return self.memory.names.get(player, player) if player else ""

    def private_text(self, player: str, text: str, game: Game | None, open_games: set[str]) -> str:
        """What a player reads in private about ``game``: ``text``, under a line naming the game (the
        group's title, else the game's code) when the player is in more than one open game
        (``open_games``), so two role cards side by side say which game each belongs to."""
        if game is None or len(open_games | {game.table.game_id}) < 2:
            return text
        return self.ui(game, player, "game_header", title=game.own.title or game.table.game_id) + "\n" + text
