"""The shape of a game's mail: its subject in the reader's language, and one fragment's body as the
outbox keeps it (a reader's fragments of one game are merged into one mail when sent)."""

from __future__ import annotations

from typing import Any

from avalon.shared.delivery.channel import Game
from avalon.shared.game import Phase
from avalon.shared.narration.render import RTL, environment, html_to_text


def subject_of(title: str, locale: str) -> str:
    """The subject of a game's mails in ``locale``."""
    return html_to_text(environment(locale).get_template("email/_subject.html").render(
        game={"title": title}, envelope=None, names={}, tz=None, tz_known=False)).strip()


def game_body(game: Game, phase_id: int | None, locale: str, subject: str | None, html: str, text: str,
              name: str | None = None, block: tuple[str, str] = ("", ""), part: str | None = None) -> dict[str, Any]:
    """A fragment of a game's mail as the outbox keeps it. ``block``: the (html, text) of what the reader
    may do now (links and how to answer), shown only under the newest fragment of a mail that has one;
    ``part``: "draft" for the leader's team draft, of which a mail shows only the newest."""
    body = {"kind": "game", "game": game.table.game_id, "phase_id": phase_id, "locale": locale, "rtl": locale in RTL,
            "subject": subject or game.table.game_id, "html": html, "text": text, "name": name,
            "stage": stage_of(game)}
    if block[1]:
        body["block_html"], body["block_text"] = block
    if part:
        body["part"] = part
    return body


def stage_of(game: Game) -> str:
    """Where the game is, for the footer of its mails: "lobby", "playing" or "over"."""
    if game.table.over:
        return "over"
    return "lobby" if game.table.turn.phase == Phase.LOBBY else "playing"


#: the footer of a mail, by the stage of its game when its newest fragment was drawn ("plain": no game)
FOOTERS = {"lobby": "footer", "playing": "footer_playing", "over": "footer_over", "plain": "footer_plain"}


def footer_key(body: dict[str, Any]) -> str:
    return FOOTERS.get(body.get("stage") or ("playing" if body.get("kind") == "game" else "plain"), "footer_plain")


def merged(bodies: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(texts, HTML fragments) of a reader's waiting fragments of one game, as one mail says them: the
    newest team draft only, and the choices only under the newest fragment that offers any (those
    of earlier fragments are stale once a later one offers its own)."""
    drafts = [i for i, b in enumerate(bodies) if b.get("part") == "draft"]
    kept = [b for i, b in enumerate(bodies) if b.get("part") != "draft" or i == drafts[-1]]
    blocks = [i for i, b in enumerate(kept) if b.get("block_text")]
    texts, htmls = [], []
    for i, body in enumerate(kept):
        text, html = body.get("text", ""), body.get("html", "")
        if blocks and i == blocks[-1]:
            text = f"{text}\n\n{body['block_text']}" if text else body["block_text"]
            html = f"{html}\n{body['block_html']}" if html else body["block_html"]
        if text:
            texts.append(text)
        if html:
            htmls.append(html)
    return texts, htmls
