"""The board as one picture: the quest track, the vote track, the leader, the Lady's and Excalibur's
holders, as on the physical board."""

from __future__ import annotations

from typing import Mapping

from .canvas import EVIL, GOLD, GOOD, INK, LAKE, LINE, MUTED, Canvas
from .record import GamePicture
from .words import words

WIDTH, HEIGHT, MARGIN = 960, 420, 32
QUEST_R, TRACK_R = 46, 17


def shown(names: Mapping[str, str], player: str) -> str:
    """A player's name as the narration shows it: the known name, else the id without its channel."""
    return names.get(player) or player.split(":", 1)[-1]


def draw_board(game: GamePicture, names: Mapping[str, str], locale: str) -> bytes:
    """The board mid-game, as a PNG, with the words of ``locale``."""
    w = words(locale)
    c = Canvas(WIDTH, HEIGHT, w.rtl)
    c.text(MARGIN, 34, f"{w.g['game']} — {w.phase(game.phase.value)}", size=24, bold=True,
           max_width=WIDTH - 2 * MARGIN)
    _quests(c, game, w)
    c.line([(MARGIN, 272), (WIDTH - MARGIN, 272)], LINE, 1)
    _vote_track(c, game, w)
    _holders(c, game, names, w)
    return c.png()


def _quests(c: Canvas, game: GamePicture, w) -> None:
    step = (WIDTH - 2 * MARGIN) / 5
    for i, size in enumerate(game.quest_sizes[:5]):
        number = i + 1
        cx, cy = MARGIN + step * (i + 0.5), 128
        result = game.result_of(number)
        current = result is None and number == game.quest and game.ending is None
        if result is None:
            c.circle(cx, cy, QUEST_R, fill=(255, 255, 255), outline=GOLD if current else LINE,
                     width=5 if current else 2)
            c.text(cx, cy - 2, str(size), size=34, bold=True, fill=INK, align="middle")
        else:
            c.circle(cx, cy, QUEST_R, fill=EVIL if result.failed else GOOD)
            c.text(cx, cy - 10, str(size), size=30, bold=True, fill=(255, 255, 255), align="middle")
            mark = c.cross if result.failed else c.tick
            mark(cx, cy + 20, 8, (255, 255, 255))
        fails = game.fails_needed[i] if i < len(game.fails_needed) else 1
        if fails > 1:  # the two-fail mark: a red ring and its words
            c.circle(cx, cy, QUEST_R + 6, outline=EVIL, width=2)
        c.text(cx, 196, w.quest_number(number), size=17, bold=current, align="middle", max_width=int(step) - 8)
        if fails > 1:
            c.text(cx, 221, w.two_fails(fails), size=14, fill=EVIL, align="middle", max_width=int(step) - 8)
        if result is not None:
            c.text(cx, 246 if fails > 1 else 221, w.fails(result.fails), size=14, fill=EVIL if result.failed else MUTED,
                   align="middle", max_width=int(step) - 8)


def _vote_track(c: Canvas, game: GamePicture, w) -> None:
    c.text(MARGIN, 305, w.vote_track(game.vote_track), size=18, bold=True, max_width=360)
    for i in range(5):
        cx, cy = MARGIN + TRACK_R + 4 + i * 2.6 * TRACK_R * 1.2, 355
        space = i + 1
        if space <= game.vote_track:
            c.circle(cx, cy, TRACK_R, fill=EVIL)
            c.text(cx, cy, str(space), size=15, bold=True, fill=(255, 255, 255), align="middle")
        else:
            now = space == game.vote_track + 1 and game.ending is None
            c.circle(cx, cy, TRACK_R, fill=(255, 255, 255), outline=GOLD if now else (EVIL if space == 5 else LINE),
                     width=4 if now else 2)
            c.text(cx, cy, str(space), size=15, bold=now, fill=INK if now else MUTED, align="middle")


def _holders(c: Canvas, game: GamePicture, names: Mapping[str, str], w) -> None:
    x, y, room = 440, 305, WIDTH - 440 - MARGIN - 34
    if game.leader:
        c.crown(x + 12, y, 11, GOLD)
        c.text(x + 34, y, w.leader(shown(names, game.leader)), size=18, max_width=room)
        y += 38
    if game.lady_holder:
        c.circle(x + 12, y, 10, fill=LAKE)
        c.text(x + 34, y, w.lady(shown(names, game.lady_holder)), size=18, max_width=room)
        y += 38
    if game.excalibur_holder:
        c.sword(x + 12, y, 12, INK)
        c.text(x + 34, y, w.excalibur(shown(names, game.excalibur_holder)), size=18, max_width=room)
