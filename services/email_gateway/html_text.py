"""An HTML mail body as plain text, the way the reader of the mail saw it, without the quoted thread
that mail programs mark in their HTML.

Gone: what is inside the quote containers mail programs write (``gmail_quote``, ``moz-cite-prefix``,
``yahoo_quoted``, ``OutlookMessageHeader``, signatures...), and everything from Outlook's reply
header (``divRplyFwdMsg``, ``hr#stopSpelling``, ``appendonsend``) to the end. A ``<blockquote>`` is kept
as ``> `` lines, so the plain-text reader (quotes.py) treats it like any quote, attribution line
included. Only the standard library: html.parser, with the character references converted.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

#: class names of the elements holding the quoted thread, its attribution, or a signature
DROP_CLASSES = frozenset({
    "gmail_quote", "gmail_quote_container", "gmail_attr", "gmail_signature", "gmail_signature_prefix",
    "moz-cite-prefix", "moz-signature", "yahoo_quoted", "yahoo-quoted-begin", "outlookmessageheader",
    "ymail_android_signature", "applequotedcontents",
})
DROP_IDS = frozenset({"olk_src_body_section", "signature", "ms-outlook-mobile-signature"})
#: from these on, everything is the quoted thread (Outlook puts the original after, not inside)
CUT_IDS = frozenset({"divrplyfwdmsg", "x_divrplyfwdmsg", "stopspelling", "appendonsend", "x_appendonsend"})
INVISIBLE = frozenset({"head", "style", "script", "title", "template", "xml"})
BLOCKS = frozenset({
    "p", "div", "br", "tr", "li", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "h6", "pre",
    "hr", "center", "section", "article", "header", "footer", "dl", "dt", "dd", "address", "form",
})
VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "wbr", "source"})
_SPACE = re.compile(r"[ \t\r\n\f\v]+")


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.line: list[str] = []
        self.quote_depth = 0
        self.pre = 0
        self.skip_tag: str | None = None  # inside a dropped element: its tag and nesting
        self.skip_depth = 0
        self.invisible = 0
        self.cut = False

    # -- text out --------------------------------------------------------------------------
    def newline(self) -> None:
        text = "".join(self.line).strip(" ")
        self.lines.append("> " * self.quote_depth + text if self.quote_depth else text)
        self.line = []

    def text(self) -> str:
        if self.line:
            self.newline()
        return "\n".join(self.lines)

    # -- parser events ---------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.cut:
            return
        if self.skip_tag is not None:
            if tag == self.skip_tag and tag not in VOID:
                self.skip_depth += 1
            return
        values = {name: (value or "") for name, value in attrs}
        ident = values.get("id", "").strip().lower()
        classes = set(values.get("class", "").lower().split())
        if ident in CUT_IDS:
            self.cut = True
            return
        if (classes & DROP_CLASSES or ident in DROP_IDS) and tag not in VOID:
            self.skip_tag, self.skip_depth = tag, 1
            return
        if tag in INVISIBLE:
            self.invisible += 1
        elif tag == "blockquote":
            self.newline() if self.line else None
            self.quote_depth += 1
        elif tag in BLOCKS:
            self.newline() if (self.line or tag == "br") else None
            if tag == "pre":
                self.pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.cut:
            return
        if self.skip_tag is not None:
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if self.skip_depth <= 0:
                    self.skip_tag = None
            return
        if tag in INVISIBLE:
            self.invisible = max(0, self.invisible - 1)
        elif tag == "blockquote":
            self.newline() if self.line else None
            self.quote_depth = max(0, self.quote_depth - 1)
        elif tag in BLOCKS and tag not in VOID:
            self.newline() if self.line else None
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if self.cut or self.skip_tag is not None or self.invisible:
            return
        if self.pre:
            parts = data.split("\n")
            for part in parts[:-1]:
                self.line.append(part)
                self.newline()
            self.line.append(parts[-1])
        else:
            self.line.append(_SPACE.sub(" ", data))


def html_to_text(html: str) -> str:
    """The visible text of ``html`` without the quoted thread's containers; never raises."""
    reader = _Reader()
    try:
        reader.feed(html)
        reader.close()
    except Exception:  # html.parser is lenient; this is a last resort for odd input
        pass
    return reader.text()
