"""The shape of a game's mail: its subject in the reader's language, and one fragment's body as the
outbox keeps it (a reader's fragments of one game are merged into one mail when sent)."""

from __future__ import annotations

from typing import Any

from shared.delivery.channel import Game
from shared.narration.render import RTL, environment, html_to_text


def subject_of(title: str, locale: str) -> str:
    """The subject of a game's mails in ``locale``."""
    return html_to_text(environment(locale).get_template("email/_subject.html").render(
        game={"title": title}, envelope=None, names={}, tz=None, tz_known=False)).strip()


def game_body(game: Game, phase_id: int | None, locale: str, subject: str | None, html: str, text: str,
              name: str | None = None) -> dict[str, Any]:
    """A fragment of a game's mail as the outbox keeps it."""
    return {"kind": "game", "game": game.table.game_id, "phase_id": phase_id, "locale": locale, "rtl": locale in RTL,
            "subject": subject or game.table.game_id, "html": html, "text": text, "name": name}
