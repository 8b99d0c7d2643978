"""The whole game as one picture, at its end: the vote-history grid (a row per proposal, a column per
player: the leader and the team marked, approvals and rejections, the quest's result beside its
approved team) and the roles revealed."""

from __future__ import annotations

from typing import Mapping

from .board import shown
from .canvas import APPROVE, EVIL, GOLD, GOOD, INK, LINE, MUTED, PAPER, REJECT, SHADE, Canvas, width_of
from .record import APPROVED, AUTO, MISSED, REJECTED, GamePicture, Proposal
from .words import Words, words

MARGIN, ROW, HEAD, CELL_MIN, CELL_MAX = 28, 34, 44, 64, 150
NAME_SIZE, ROLE_ROW = 14, 28


def draw_end(game: GamePicture, names: Mapping[str, str], locale: str) -> bytes:
    """The end of the game, as a PNG, with the words of ``locale``."""
    w = words(locale)
    seats = game.seats
    label = [w.name(shown(names, p)) for p in seats]
    cols = [min(CELL_MAX, max(CELL_MIN, width_of(s, NAME_SIZE, True, w.rtl) + 16)) for s in label]
    first = max(width_of(w.g["quest"].capitalize(), 14, True, w.rtl), width_of("5.5", 15)) + 24
    last = _result_width(game, w)
    width = max(720, 2 * MARGIN + first + sum(cols) + last)
    roles = game.ending.roles if game.ending else ()
    role_rows = (len(roles) + 1) // 2
    anonymous = any(p.votes is None for p in game.proposals)
    height = 118 + HEAD + ROW * len(game.proposals) + 70 + (26 if anonymous else 0) + 44 + ROLE_ROW * role_rows
    c = Canvas(width, height, w.rtl)
    teams = dict(game.ending.teams) if game.ending else {}
    if game.ending:
        colour = GOOD if game.ending.winner.value == "good" else EVIL
        c.text(MARGIN, 34, w.winner(game.ending.winner.value, game.ending.cause.value), size=22, bold=True,
               fill=colour, max_width=width - 2 * MARGIN)
    c.text(MARGIN, 82, w.key("vote_history"), size=19, bold=True)
    top = 104
    _header(c, w, top, first, cols, label, [teams.get(p) for p in seats], last)
    y = top + HEAD
    previous = None
    count = 0
    for proposal in game.proposals:
        count = count + 1 if proposal.quest == previous else 1
        if previous is not None and proposal.quest != previous:
            c.line([(MARGIN, y), (MARGIN + first + sum(cols) + last, y)], INK, 2)
        previous = proposal.quest
        _row(c, w, game, proposal, count, y, first, cols, last)
        y += ROW
    c.line([(MARGIN, y), (MARGIN + first + sum(cols) + last, y)], INK, 2)
    y = _legend(c, w, y + 30, width)
    if anonymous:
        c.text(MARGIN, y, w.key("anonymous"), size=14, fill=MUTED, max_width=width - 2 * MARGIN)
        y += 26
    if game.ending:
        _roles(c, w, game, names, y + 22, width)
    return c.png()


def _result_width(game: GamePicture, w: Words) -> int:
    """The result column: wide enough for its widest row (the words, the counts, the quest's result)."""
    quest = max((30 + width_of(w.fails(r.fails), 13, rtl=w.rtl) for r in game.results), default=0)
    widest = 90 + quest
    for p in game.proposals:
        if p.outcome == MISSED:
            widest = max(widest, width_of(w.key("no_team"), 13, rtl=w.rtl) + 10)
        elif p.outcome == AUTO:
            widest = max(widest, width_of(w.key("without_vote"), 13, rtl=w.rtl) + 10 + quest)
    return max(160, widest + 24)


def _two_lines(c: Canvas, x: float, y: float, text: str, width: int, fill) -> None:
    """A name too long for its column, on two lines split at the space nearest its middle."""
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    if width_of(text, NAME_SIZE, True, c.rtl) <= width or not spaces:
        c.text(x, y, text, size=NAME_SIZE, bold=True, fill=fill, align="middle", max_width=width)
        return
    cut = min(spaces, key=lambda i: abs(i - len(text) / 2))
    isolate = text[0] if text[:1] == "\u2068" else ""
    head, tail = text[:cut].strip() + ("\u2069" if isolate else ""), isolate + text[cut + 1:].strip()
    for line, dy in ((head, -9), (tail, 9)):
        c.text(x, y + dy, line, size=NAME_SIZE - 2, bold=True, fill=fill, align="middle", max_width=width)


def _header(c: Canvas, w: Words, top: int, first: int, cols: list[int], label: list[str], teams, last: int) -> None:
    c.text(MARGIN + first / 2, top + HEAD / 2, w.g["quest"].capitalize(), size=14, bold=True, align="middle",
           max_width=first - 6)
    x = MARGIN + first
    for width, name, team in zip(cols, label, teams):
        fill = GOOD if team and team.value == "good" else EVIL if team else INK
        c.rect(x, top, x + width, top + HEAD, outline=LINE)
        _two_lines(c, x + width / 2, top + HEAD / 2, name, width - 8, fill)
        x += width
    c.text(x + last / 2, top + HEAD / 2, w.key("result"), size=14, bold=True, align="middle", max_width=last - 6)


def _row(c: Canvas, w: Words, game: GamePicture, p: Proposal, count: int, y: int, first: int, cols: list[int],
         last: int) -> None:
    mid = y + ROW / 2
    c.text(MARGIN + first / 2, mid, f"{p.quest}.{count}", size=15, bold=p.outcome in (APPROVED, AUTO),
           align="middle")
    voted = dict(p.votes) if p.votes is not None else None
    x = MARGIN + first
    for width, player in zip(cols, game.seats):
        if player in p.team:
            c.rect(x + 1, y + 1, x + width - 1, y + ROW - 1, fill=SHADE)
        c.rect(x, y, x + width, y + ROW, outline=LINE)
        if player == p.leader:
            c.crown(x + 11, y + 9, 6, GOLD)
        if voted is not None and p.outcome in (APPROVED, REJECTED):
            if player in voted:
                (c.tick if voted[player] else c.cross)(x + width / 2, mid, 7, APPROVE if voted[player] else REJECT)
            else:
                c.line([(x + width / 2 - 6, mid), (x + width / 2 + 6, mid)], MUTED, 2)
        x += width
    _result(c, w, game, p, x, mid, last)


def _result(c: Canvas, w: Words, game: GamePicture, p: Proposal, x: float, mid: float, last: int) -> None:
    x += 10
    if p.outcome == MISSED:
        c.text(x, mid, w.key("no_team"), size=13, fill=MUTED, max_width=last - 20)
        return
    if p.outcome == AUTO:
        x += c.text(x, mid, w.key("without_vote"), size=13, fill=MUTED) + 10
    elif p.outcome in (APPROVED, REJECTED):
        strong = 15 if p.outcome == APPROVED else 13
        c.tick(x + 7, mid, 6, APPROVE)
        x += 18 + c.text(x + 18, mid, str(p.approvals), size=strong, bold=p.outcome == APPROVED, fill=INK) + 10
        c.cross(x + 6, mid, 5, REJECT)
        x += 18 + c.text(x + 18, mid, str(p.rejections), size=strong, bold=p.outcome == REJECTED, fill=INK) + 12
    quest = game.result_of(p.quest) if p.outcome in (APPROVED, AUTO) else None
    if quest is not None:
        c.circle(x + 12, mid, 12, fill=EVIL if quest.failed else GOOD)
        (c.cross if quest.failed else c.tick)(x + 12, mid, 5, PAPER)
        c.text(x + 30, mid, w.fails(quest.fails), size=13, fill=EVIL if quest.failed else MUTED)


def _legend(c: Canvas, w: Words, y: int, width: int) -> int:
    x = MARGIN
    items = [("crown", w.g["leader"]), ("team", w.key("in_team")), ("tick", w.g["approve"]),
             ("cross", w.g["reject"]), ("dash", w.key("not_voted"))]
    for kind, text in items:
        text = text[:1].upper() + text[1:]  # a legend's labels start with a capital, as its glossary terms do
        need = 30 + width_of(text, 14, rtl=w.rtl) + 22
        if x + need > width - MARGIN:
            x, y = MARGIN, y + 26
        if kind == "crown":
            c.crown(x + 10, y, 8, GOLD)
        elif kind == "team":
            c.rect(x + 1, y - 9, x + 19, y + 9, fill=SHADE, outline=LINE)
        elif kind == "tick":
            c.tick(x + 10, y, 7, APPROVE)
        elif kind == "cross":
            c.cross(x + 10, y, 7, REJECT)
        else:
            c.line([(x + 4, y), (x + 16, y)], MUTED, 2)
        x += 28 + c.text(x + 28, y, text, size=14) + 22
    return y + 30


def _roles(c: Canvas, w: Words, game: GamePicture, names: Mapping[str, str], y: int, width: int) -> None:
    c.text(MARGIN, y, w.key("roles"), size=19, bold=True)
    y += 34
    teams = dict(game.ending.teams)
    half = (width - 2 * MARGIN) // 2
    for i, (player, role) in enumerate(game.ending.roles):
        x, row = MARGIN + (i % 2) * half, y + (i // 2) * ROLE_ROW
        ended = teams.get(player, role.team)
        c.circle(x + 8, row, 7, fill=GOOD if ended.value == "good" else EVIL)
        text = w.role_line(shown(names, player), role, ended.value if ended != role.team else None)
        c.text(x + 24, row, text, size=15, max_width=half - 34)
