"""The choices in a mail as ``mailto:`` links (a link's subject and body, sent unchanged, perform
the choice) and one line on how to answer by typing instead."""

from __future__ import annotations

import html as _html

from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.roster import Roster
from avalon.shared.narration.render import glossary

from .compose import Identity, mailto
from .notes import title_of
from .pages import subject_of
from .tokens import Tokens
from .wording import link_body, team_with_holder
from .words import email_words


def esc(text: str) -> str:
    return _html.escape(text, quote=True)


class Links:
    """Links signed for their reader (the reply token names the game and the reader's address)."""

    def __init__(self, identity: Identity, tokens: Tokens, roster: Roster) -> None:
        self.identity = identity
        self.tokens = tokens
        self.roster = roster

    def written(self, game: Game, players) -> dict[str, str]:
        """How each target is written in a link: the display name where it is unique in the game,
        else the seat number (the reader of mail reads both)."""
        names = self.roster.names()
        seated = game.table.seats.players
        shown = {p: names.get(p) or p.split(":", 1)[-1] for p in seated}
        counts: dict[str, int] = {}
        for value in shown.values():
            counts[value.casefold()] = counts.get(value.casefold(), 0) + 1
        out = {}
        for p in players:
            name = shown.get(p) or names.get(p) or p.split(":", 1)[-1]
            if counts.get(name.casefold(), 0) > 1 or " #" in name or not name.strip():
                out[p] = str(seated.index(p) + 1) if p in seated else name
            else:
                out[p] = name
        return out

    def _link(self, game: Game, locale: str, player: str, kind: str, names=(), phase_id=None) -> str:
        token = self.tokens.make(game.table.game_id, player.split(":", 1)[1])
        return mailto(self.identity, token, "Re: " + subject_of(title_of(game), locale),
                      link_body(locale, kind, list(names), phase_id))

    def _entries(self, game: Game, locale: str, player: str, offer) -> list[tuple[str, str, str]]:
        """(label, link, typed) for each choice of ``offer``."""
        out = []
        pid = offer.phase_id
        display = self.roster.names()

        def add(kind: str, label_key: str, targets=()):
            written = self.written(game, targets)
            if not targets:
                body = link_body(locale, kind, [], pid)
                out.append((email_words(locale, label_key), self._link(game, locale, player, kind, [], pid), body))
                return
            for t in targets:
                label = email_words(locale, label_key, name=display.get(t) or written[t])
                body = link_body(locale, kind, [written[t]], pid)
                out.append((label, self._link(game, locale, player, kind, [written[t]], pid), body))

        for c in offer.choices:
            k = c.kind.value
            if k == "propose_team":
                draft = game.table.draft
                full = len(draft.picks) >= c.count
                if c.excalibur and full:  # the holder first, then who may be dropped (a pick more is not taken)
                    add("excalibur", "label_excalibur", [t for t in draft.picks if t != player])
                add("pick", "label_pick", [t for t in c.targets if t in draft.picks] if full else c.targets)
                if c.excalibur and not full:
                    add("excalibur", "label_excalibur", [t for t in c.targets if t != player])
            elif k == "cast_vote":
                add("approve", "label_approve")
                add("reject", "label_reject")
            elif k == "play_card":
                for card in c.cards:
                    add(card.value, f"label_{card.value}")
            elif k == "use_excalibur":
                add("excalibur", "label_excalibur", c.targets)
                if c.optional:
                    add("sheathe", "label_sheathe")
            elif k == "use_lady":
                add("lady", "label_lady", c.targets)
            elif k == "assassinate":
                add("shoot", "label_shoot", c.targets)
            elif k == "accuse":
                add("accuse", "label_accuse", c.targets)
            elif k == "hand_shot":
                add("hand", "label_hand", c.targets)
        return out

    def _typed_example(self, game: Game, locale: str, player: str, offer) -> str:
        for c in offer.choices:
            k = c.kind.value
            if k == "propose_team":
                picks = [p for p in game.table.draft.picks if p in c.targets]
                team = (picks + [t for t in c.targets if t not in picks])[: c.count]
                written = self.written(game, team)
                names = [written[t] for t in team]
                if c.excalibur:  # the holder in the same reply (the draft's, else another member)
                    holder = game.table.draft.holder
                    holder = holder if holder in team and holder != player else next(
                        (t for t in team if t != player), None)
                    if holder is not None:
                        return team_with_holder(locale, names, written[holder])
                return link_body(locale, "team", names)
            if k in ("speak_last_word", "confer"):
                return link_body(locale, "last_word" if k == "speak_last_word" else "say", [])
        return ""

    @staticmethod
    def _block(locale: str, entries, example: str) -> tuple[str, str]:
        how = email_words(locale, "how_to_answer", example=example or (entries[0][2] if entries else ""))
        heading = email_words(locale, "choices_heading")
        items_html = "".join(f'<li><a href="{esc(link)}">{esc(label)}</a></li>' for label, link, _ in entries)
        items_text = "\n".join(f"- {label}: {typed}" for label, _, typed in entries)
        html = f"<p>{esc(heading)}</p><ul>{items_html}</ul><p><i>{esc(how)}</i></p>" if entries else \
            f"<p><i>{esc(how)}</i></p>"
        text = f"{heading}\n{items_text}\n\n{how}" if entries else how
        return html, text

    def choices_block(self, game: Game, locale: str, player: str, offer) -> tuple[str, str]:
        entries = self._entries(game, locale, player, offer)
        return self._block(locale, entries, self._typed_example(game, locale, player, offer))

    def join_block(self, game: Game, locale: str, player: str) -> tuple[str, str]:
        entries = [(email_words(locale, "label_join"), self._link(game, locale, player, "join"),
                    link_body(locale, "join"))]
        return self._block(locale, entries, link_body(locale, "join"))

    def typed_block(self, locale: str, example: str) -> tuple[str, str]:
        """How to answer by typing alone (no link): ``example`` is the word to reply."""
        return self._block(locale, [], example)

    def draft_block(self, game: Game, locale: str, player: str) -> tuple[tuple[str, str], tuple[str, str]]:
        """The leader's team so far (by mail the team is picked one link at a time), with, once the team is
        full and Excalibur is in play, that its holder is still to be chosen; and the choices left. Each
        as (html, text)."""
        display = self.roster.names()
        draft = game.table.draft
        names = glossary(locale)["list_separator"].join(display.get(p) or p for p in draft.picks)
        size = game.table.turn.team_size
        line = email_words(locale, "team_draft", names=names, count=len(draft.picks), size=size)
        offer = game.table.offer(player)
        if offer is not None and draft.needs_holder(offer) and len(draft.picks) >= size and \
                (draft.holder not in draft.picks or draft.holder == player):
            line = f"{line}\n{email_words(locale, 'team_excalibur_needed')}"
        said = f"<p>{esc(line)}</p>".replace("\n", "<br>"), line
        return said, self.choices_block(game, locale, player, offer) if offer is not None else ("", "")
