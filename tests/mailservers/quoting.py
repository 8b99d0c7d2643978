"""How mail programs quote the mail they answer: Gmail puts the answer on top and the original
below as '> ' lines after an 'On DATE, NAME <addr> wrote:' line; Outlook puts the answer on top of
the unquoted thread under '-----Original Message-----' and a From/Sent/To/Subject block. Both in
text and in HTML (a Gmail blockquote, an Outlook header block)."""

from __future__ import annotations

import html
import re
from email.message import EmailMessage
from email.utils import parseaddr, parsedate_to_datetime
from html.parser import HTMLParser
from typing import Literal

BLOCKS = {"br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "table", "hr"}


class _TextOfHtml(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script", "head"):
            self.skip += 1
        elif tag in BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("style", "script", "head"):
            self.skip = max(0, self.skip - 1)
        elif tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def text_of_html(markup: str) -> str:
    parser = _TextOfHtml()
    parser.feed(markup)
    lines = [line.strip() for line in "".join(parser.parts).splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def original_text(original: EmailMessage) -> str:
    part = original.get_body(preferencelist=("plain",))
    if part is not None:
        return part.get_content().replace("\r\n", "\n").rstrip()
    part = original.get_body(preferencelist=("html",))
    return text_of_html(part.get_content()) if part is not None else ""


def original_html(original: EmailMessage) -> str:
    part = original.get_body(preferencelist=("html",))
    if part is None:
        return html.escape(original_text(original)).replace("\n", "<br>\n")
    markup = part.get_content()
    inner = re.search(r"<body[^>]*>(.*)</body>", markup, re.S | re.I)
    return inner.group(1) if inner else markup


def _sent(original: EmailMessage):
    try:
        return parsedate_to_datetime(str(original["Date"]))
    except (TypeError, ValueError):
        return None


def gmail_attribution(original: EmailMessage) -> str:
    name, address = parseaddr(str(original.get("From", "")))
    sent = _sent(original)
    when = f"{sent:%a}, {sent.day} {sent:%b %Y} at {sent:%H:%M}" if sent else "an earlier day"
    return f"On {when}, {name + ' ' if name else ''}<{address}> wrote:"


def outlook_header(original: EmailMessage, to_address: str) -> list[tuple[str, str]]:
    sent = _sent(original)
    return [("From", str(original.get("From", ""))),
            ("Sent", f"{sent:%A}, {sent:%B} {sent.day}, {sent:%Y %I:%M %p}" if sent else ""),
            ("To", str(original.get("To", to_address))),
            ("Subject", str(original.get("Subject", "")))]


def quoted_reply(original: EmailMessage, body: str, quote: Literal["below", "above", "none"],
                 to_address: str) -> tuple[str, str]:
    """(text, html) of a reply saying body, with the original quoted the given way."""
    answer_html = f'<div dir="auto">{html.escape(body).replace(chr(10), "<br>")}</div>'
    if quote == "none":
        return body, answer_html
    if quote == "below":
        attribution = gmail_attribution(original)
        quoted = "\n".join(f"> {line}" if line else ">" for line in original_text(original).splitlines())
        text = f"{body}\n\n{attribution}\n\n{quoted}\n"
        markup = (f'{answer_html}<br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">'
                  f"{html.escape(attribution)}<br></div>"
                  '<blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex;'
                  f'border-left:1px solid rgb(204,204,204);padding-left:1ex">{original_html(original)}'
                  "</blockquote></div>")
        return text, markup
    if quote == "above":
        header = outlook_header(original, to_address)
        text = (f"{body}\n\n-----Original Message-----\n"
                + "".join(f"{name}: {value}\n" for name, value in header)
                + f"\n{original_text(original)}\n")
        block = "<br>".join(f"<b>{name}:</b> {html.escape(value)}" for name, value in header)
        markup = (f'{answer_html}<div><br><hr style="display:inline-block;width:98%">'
                  f'<div id="divRplyFwdMsg" dir="ltr"><font face="Calibri, sans-serif">{block}</font></div>'
                  f"<div>{original_html(original)}</div></div>")
        return text, markup
    raise ValueError(f"quote must be 'below', 'above' or 'none', not {quote!r}")
