"""Drawing with Pillow: the fonts that come with the package, text laid out by its script, and a
canvas that mirrors itself for a right-to-left language.

Text goes through Raqm (HarfBuzz shaping, FriBiDi ordering) when Pillow has it, so Persian letters
join and read right to left and a Vietnamese letter keeps its stacked marks. The pictures are PNG
without metadata: the same game in the same language gives the same bytes.
"""

from __future__ import annotations

from functools import lru_cache
from io import BytesIO
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, features

FONTS = Path(__file__).parent / "fonts"
REGULAR, BOLD = "DejaVuSans.ttf", "DejaVuSans-Bold.ttf"
SHAPING = features.check("raqm")  # needs libfribidi on the system (the Dockerfile installs it)
LAYOUT = ImageFont.Layout.RAQM if SHAPING else ImageFont.Layout.BASIC

INK, MUTED, LINE, PAPER = (33, 37, 41), (108, 117, 125), (206, 212, 218), (250, 248, 243)
GOOD, EVIL, GOLD, SHADE = (37, 99, 178), (192, 44, 44), (201, 150, 20), (255, 241, 196)
APPROVE, REJECT, LAKE, WHITE = (46, 139, 87), (192, 44, 44), (92, 160, 200), (255, 255, 255)


def _palette() -> Image.Image:
    """The pictures' colours and the blends their edges make (antialiased text and shapes over each
    background), as one fixed palette: a PNG of palette indices takes a third of the CPU of an RGB one
    (Pillow filters every RGB row five ways), a third of its size, and no colour is chosen per picture."""
    inks = (INK, MUTED, LINE, GOOD, EVIL, GOLD, APPROVE, LAKE, WHITE)
    grounds = (PAPER, WHITE, SHADE, GOOD, EVIL)
    colours = list(dict.fromkeys(inks + grounds))
    for ground in grounds:
        for ink in inks:
            if ink != ground:
                for k in (1, 2, 3, 4):
                    colours.append(tuple(round(g + (i - g) * k / 5) for i, g in zip(ink, ground)))
    colours = list(dict.fromkeys(colours))[:256]
    palette = Image.new("P", (1, 1))
    palette.putpalette([v for colour in colours for v in colour] + [0, 0, 0] * (256 - len(colours)))
    return palette


PALETTE = _palette()


@lru_cache(maxsize=32)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(FONTS / (BOLD if bold else REGULAR)), size, layout_engine=LAYOUT)


class Canvas:
    """A picture drawn in logical coordinates: x runs from the start of a line, which is the right edge
    in a right-to-left language (the whole picture is mirrored; the text itself is not)."""

    def __init__(self, width: int, height: int, rtl: bool):
        self.width, self.height, self.rtl = width, height, rtl
        self.image = Image.new("RGB", (width, height), PAPER)
        self.draw = ImageDraw.Draw(self.image)

    def _x(self, x: float) -> float:
        return self.width - x if self.rtl else x

    def _box(self, x0: float, y0: float, x1: float, y1: float) -> tuple[float, float, float, float]:
        a, b = sorted((self._x(x0), self._x(x1)))
        return a, y0, b, y1

    def rect(self, x0, y0, x1, y1, fill=None, outline=None, width: int = 1, radius: int = 0) -> None:
        box = self._box(x0, y0, x1, y1)
        if radius:
            self.draw.rounded_rectangle(box, radius, fill=fill, outline=outline, width=width)
        else:
            self.draw.rectangle(box, fill=fill, outline=outline, width=width)

    def circle(self, cx, cy, r, fill=None, outline=None, width: int = 1) -> None:
        x = self._x(cx)
        self.draw.ellipse((x - r, cy - r, x + r, cy + r), fill=fill, outline=outline, width=width)

    def line(self, points, fill, width: int = 1) -> None:
        self.draw.line([(self._x(x), y) for x, y in points], fill=fill, width=width, joint="curve")

    def _raw_line(self, points, fill, width: int) -> None:
        self.draw.line(points, fill=fill, width=width, joint="curve")

    def tick(self, cx, cy, r, fill) -> None:
        """An approval: a check mark drawn as lines (the same in every font, never mirrored)."""
        x = self._x(cx)
        self._raw_line([(x - r, cy), (x - r / 3, cy + r * 0.7), (x + r, cy - r * 0.7)], fill, max(2, r // 3))

    def cross(self, cx, cy, r, fill) -> None:
        x, w = self._x(cx), max(2, r // 3)
        self._raw_line([(x - r, cy - r), (x + r, cy + r)], fill, w)
        self._raw_line([(x - r, cy + r), (x + r, cy - r)], fill, w)

    def crown(self, cx, cy, r, fill) -> None:
        """The leader's mark."""
        x = self._x(cx)
        pts = [(x - r, cy + r * 0.6), (x - r, cy - r * 0.5), (x - r / 2, cy), (x, cy - r * 0.8),
               (x + r / 2, cy), (x + r, cy - r * 0.5), (x + r, cy + r * 0.6)]
        self.draw.polygon(pts, fill=fill)

    def sword(self, cx, cy, r, fill) -> None:
        """Excalibur's mark."""
        x = self._x(cx)
        self._raw_line([(x, cy - r), (x, cy + r)], fill, 3)
        self._raw_line([(x - r * 0.6, cy + r * 0.35), (x + r * 0.6, cy + r * 0.35)], fill, 3)

    def text(self, x, y, text: str, size: int = 16, fill=INK, bold: bool = False, align: str = "start",
             max_width: int | None = None) -> int:
        """Draw ``text`` with its vertical middle at ``y``; ``align``: start, end or middle of ``x``.
        Too wide for ``max_width``: a smaller size, down to 10 px, then cut with an ellipsis. The width
        drawn is returned."""
        face, text = fitted(text, size, bold, max_width)
        width = face.getlength(text, direction=self._direction(text))
        px = self._x(x)
        anchor = {"middle": "mm", "start": "rm" if self.rtl else "lm", "end": "lm" if self.rtl else "rm"}[align]
        self.draw.text((px, y), text, font=face, fill=fill, anchor=anchor, direction=self._direction(text))
        return int(width + 0.5)

    def _direction(self, text: str) -> str | None:
        return ("rtl" if self.rtl else "ltr") if SHAPING else None

    def png(self) -> bytes:
        out = BytesIO()
        # no text chunks, no time: the same bytes
        indexed = self.image.quantize(palette=PALETTE, dither=Image.Dither.NONE)
        indexed.save(out, "PNG", optimize=False, compress_level=6)
        return out.getvalue()


def width_of(text: str, size: int = 16, bold: bool = False, rtl: bool = False) -> int:
    return int(font(size, bold).getlength(text, direction=("rtl" if rtl else "ltr") if SHAPING else None) + 0.5)


@lru_cache(maxsize=4096)
def fitted(text: str, size: int, bold: bool, max_width: int | None) -> tuple[ImageFont.FreeTypeFont, str]:
    if max_width is None:
        return font(size, bold), text
    for smaller in range(size, 9, -1):
        if font(smaller, bold).getlength(text) <= max_width:
            return font(smaller, bold), text
    face = font(10, bold)
    while len(text) > 1 and face.getlength(text + "…") > max_width:
        text = text[:-1]
    return face, text + "…"
