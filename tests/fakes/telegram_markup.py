"""Telegram's text formatting, as the Bot API applies it to a message's text.

``render(text, parse_mode, entities)`` returns what Telegram stores and sends back: the plain text
(markup removed, HTML entities decoded, surrounding whitespace stripped) and its ``MessageEntity``
dicts (offsets and lengths in UTF-16 code units), plus the entities Telegram detects by itself
(bot commands, @mentions, #hashtags, URLs). Markup Telegram would refuse raises ``MarkupError``
carrying the text Telegram puts after "Bad Request: can't parse entities: ".

Written from the Bot API's "Formatting options" and the behaviour of tdlib's parsers; it is strict
where Telegram is strict (unsupported or unclosed HTML tags, unescaped MarkdownV2 characters), which
is what a gateway's tests need to catch.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MarkupError", "detect_entities", "render", "utf16_len"]


class MarkupError(ValueError):
    """The markup is invalid; ``str(error)`` is Telegram's reason, e.g. 'Unsupported start tag "x" at byte offset 3'."""


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


class _Out:
    """The plain text being built, with its length in UTF-16 units."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.u16 = 0

    def add(self, chunk: str) -> None:
        self.parts.append(chunk)
        self.u16 += utf16_len(chunk)

    def text(self) -> str:
        return "".join(self.parts)


# --------------------------------------------------------------------------------------------- HTML

_HTML_TAGS = {
    "a", "b", "strong", "i", "em", "u", "ins", "s", "strike", "del",
    "span", "tg-spoiler", "tg-emoji", "code", "pre", "blockquote",
}
_HTML_TYPES = {
    "b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline", "ins": "underline",
    "s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
    "span": "spoiler", "tg-spoiler": "spoiler", "code": "code", "pre": "pre",
}
_NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_CHARREF = re.compile(r"&#(?:([0-9]{1,7})|[xX]([0-9a-fA-F]{1,6}));?")
_NAMEDREF = re.compile(r"&([a-zA-Z]+);")


def _html_entity(text: str, i: int) -> tuple[str | None, int]:
    """Decode the HTML entity at ``text[i] == '&'``: (decoded, next index), or (None, i) when there is none.
    Telegram supports numeric entities and only &lt; &gt; &amp; &quot; by name; others stay literal."""
    m = _CHARREF.match(text, i)
    if m:
        code = int(m.group(1)) if m.group(1) else int(m.group(2), 16)
        if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
            return chr(code), m.end()
        return None, i
    m = _NAMEDREF.match(text, i)
    if m and m.group(1) in _NAMED_ENTITIES:
        return _NAMED_ENTITIES[m.group(1)], m.end()
    return None, i


def parse_html(text: str) -> tuple[str, list[dict[str, Any]]]:
    out = _Out()
    entities: list[dict[str, Any]] = []
    # open tags: [name, attributes, utf16 start, index of '<']
    stack: list[list[Any]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "&":
            decoded, j = _html_entity(text, i)
            if decoded is not None:
                out.add(decoded)
                i = j
                continue
        if c != "<":
            out.add(c)
            i += 1
            continue
        begin = i
        i += 1
        if i < n and text[i] == "/":  # an end tag
            i += 1
            name_start = i
            while i < n and not text[i].isspace() and text[i] != ">":
                i += 1
            end_name = text[name_start:i].lower()
            while i < n and text[i].isspace():
                i += 1
            if i >= n or text[i] != ">":
                raise MarkupError(f"Unclosed end tag at byte offset {_byte_offset(text, begin)}")
            i += 1
            if not stack:
                raise MarkupError(f"Unexpected end tag at byte offset {_byte_offset(text, begin)}")
            name, attrs, start, _ = stack.pop()
            if end_name and end_name != name:
                raise MarkupError(
                    f'Unmatched end tag at byte offset {_byte_offset(text, begin)}, '
                    f'expected "</{name}>", found "</{end_name}>"'
                )
            _close_html(name, attrs, start, out.u16, entities, stack)
            continue
        # a start tag
        name_start = i
        while i < n and not text[i].isspace() and text[i] != ">":
            i += 1
        if i >= n:
            raise MarkupError(f"Unclosed start tag at byte offset {_byte_offset(text, begin)}")
        name = text[name_start:i].lower()
        if name not in _HTML_TAGS:
            raise MarkupError(f'Unsupported start tag "{name}" at byte offset {_byte_offset(text, begin)}')
        attrs: dict[str, str] = {}
        while True:
            while i < n and text[i].isspace():
                i += 1
            if i >= n:
                raise MarkupError(f'Unclosed start tag "{name}" at byte offset {_byte_offset(text, begin)}')
            if text[i] == ">":
                i += 1
                break
            attr_start = i
            while i < n and not text[i].isspace() and text[i] not in "=>/\"'":
                i += 1
            attr = text[attr_start:i].lower()
            if not attr:
                raise MarkupError(
                    f'Empty attribute name in the tag "{name}" at byte offset {_byte_offset(text, begin)}'
                )
            while i < n and text[i].isspace():
                i += 1
            if i >= n:
                raise MarkupError(f'Unclosed start tag "{name}" at byte offset {_byte_offset(text, begin)}')
            if text[i] != "=":
                attrs[attr] = ""
                continue
            i += 1
            while i < n and text[i].isspace():
                i += 1
            if i >= n:
                raise MarkupError(f'Unclosed start tag "{name}" at byte offset {_byte_offset(text, begin)}')
            if text[i] in "\"'":
                quote = text[i]
                i += 1
                value: list[str] = []
                while i < n and text[i] != quote:
                    if text[i] == "&":
                        decoded, j = _html_entity(text, i)
                        if decoded is not None:
                            value.append(decoded)
                            i = j
                            continue
                    value.append(text[i])
                    i += 1
                if i >= n:
                    raise MarkupError(f"Unclosed start tag at byte offset {_byte_offset(text, begin)}")
                i += 1
                attrs[attr] = "".join(value)
            else:
                token_start = i
                while i < n and (text[i].isascii() and (text[i].isalnum() or text[i] in ".-")):
                    i += 1
                if i >= n:
                    raise MarkupError(f"Unclosed start tag at byte offset {_byte_offset(text, begin)}")
                if not text[i].isspace() and text[i] != ">":
                    raise MarkupError(f"Unexpected end of name token at byte offset {_byte_offset(text, i)}")
                attrs[attr] = text[token_start:i].lower()
        if name == "span" and attrs.get("class") != "tg-spoiler":
            raise MarkupError(
                f'Tag "span" must have class "tg-spoiler" at byte offset {_byte_offset(text, begin)}'
            )
        stack.append([name, attrs, out.u16, begin])
    if stack:
        raise MarkupError(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    return out.text(), entities


def _close_html(
    name: str, attrs: dict[str, str], start: int, end: int, entities: list[dict[str, Any]], stack: list[list[Any]]
) -> None:
    length = end - start
    if name == "code" and stack and stack[-1][0] == "pre" and stack[-1][2] == start:
        # <pre><code class="language-x">: one "pre" entity with a language
        language = attrs.get("class", "")
        if language.startswith("language-") and len(language) > len("language-"):
            stack[-1][1]["language"] = language[len("language-"):]
        return
    if length <= 0:
        return
    entity: dict[str, Any]
    if name == "a":
        href = attrs.get("href", "")
        if not href:
            return
        match = re.fullmatch(r"tg://user\?id=(\d+)", href)
        if match:
            entity = {"type": "text_mention", "offset": start, "length": length,
                      "user": {"id": int(match.group(1)), "is_bot": False, "first_name": ""}}
        else:
            entity = {"type": "text_link", "offset": start, "length": length, "url": href}
    elif name == "tg-emoji":
        entity = {"type": "custom_emoji", "offset": start, "length": length,
                  "custom_emoji_id": attrs.get("emoji-id", "")}
    elif name == "blockquote":
        kind = "expandable_blockquote" if "expandable" in attrs else "blockquote"
        entity = {"type": kind, "offset": start, "length": length}
    elif name == "pre":
        entity = {"type": "pre", "offset": start, "length": length}
        if attrs.get("language"):
            entity["language"] = attrs["language"]
    else:
        entity = {"type": _HTML_TYPES[name], "offset": start, "length": length}
    entities.append(entity)


# ---------------------------------------------------------------------------------------- MarkdownV2

_MDV2_RESERVED = set("_*[]()~`>#+-=|{}.!")
_MDV2_NAMES = {
    "bold": "Bold", "italic": "Italic", "underline": "Underline", "strikethrough": "Strikethrough",
    "spoiler": "Spoiler", "code": "Code", "pre": "Pre", "text_link": "TextUrl", "custom_emoji": "CustomEmoji",
}


def parse_markdown_v2(text: str) -> tuple[str, list[dict[str, Any]]]:
    out = _Out()
    entities: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []  # {"type", "start" (utf16), "begin" (index in text), ...}
    quote_start: int | None = None  # utf16 start of the open blockquote
    quote_end = 0
    quote_expandable = False
    line_start = True
    i, n = 0, len(text)

    def reserved(ch: str) -> MarkupError:
        return MarkupError(f"Character '{ch}' is reserved and must be escaped with the preceding '\\'")

    while i < n:
        c = text[i]
        in_code = bool(stack) and stack[-1]["type"] in ("code", "pre")
        if line_start and not in_code:
            line_start = False
            if c == ">" or (quote_start is None and text.startswith("**>", i)):
                if quote_start is None:
                    quote_start, quote_expandable = out.u16, c == "*"
                i += 1 if c == ">" else 3
                continue
            if quote_start is not None:
                _add(entities, "expandable_blockquote" if quote_expandable else "blockquote",
                     quote_start, quote_end)
                quote_start = None
        if c == "\\" and i + 1 < n and 0 < ord(text[i + 1]) <= 126:
            out.add(text[i + 1])
            i += 2
            continue
        if c == "\n":
            if quote_start is not None:
                quote_end = out.u16
            out.add(c)
            line_start = True
            i += 1
            continue
        if in_code:
            top = stack[-1]
            if top["type"] == "code" and c == "`":
                stack.pop()
                _add(entities, "code", top["start"], out.u16)
                i += 1
                continue
            if top["type"] == "pre" and text.startswith("```", i):
                stack.pop()
                _add(entities, "pre", top["start"], out.u16, language=top.get("language"))
                i += 3
                continue
            out.add(c)
            i += 1
            continue
        if c not in _MDV2_RESERVED:
            out.add(c)
            i += 1
            continue
        if quote_start is not None and c == "|" and text.startswith("||", i) and quote_expandable \
                and (i + 2 >= n or text[i + 2] == "\n") and not (stack and stack[-1]["type"] == "spoiler"):
            i += 2  # the "||" that ends an expandable blockquote
            continue
        top = stack[-1] if stack else None
        if top is not None:
            kind = top["type"]
            closes = (
                (kind == "bold" and c == "*")
                or (kind == "italic" and c == "_")
                or (kind == "underline" and text.startswith("__", i))
                or (kind == "strikethrough" and c == "~")
                or (kind == "spoiler" and text.startswith("||", i))
                or (kind in ("text_link", "custom_emoji") and c == "]")
            )
            if closes:
                stack.pop()
                i += 2 if kind in ("underline", "spoiler") else 1
                if kind in ("text_link", "custom_emoji"):
                    url = None
                    if i < n and text[i] == "(":
                        j, chars = i + 1, []
                        while j < n and text[j] != ")":
                            if text[j] == "\\" and j + 1 < n and 0 < ord(text[j + 1]) <= 126:
                                chars.append(text[j + 1])
                                j += 2
                                continue
                            chars.append(text[j])
                            j += 1
                        if j >= n:
                            raise MarkupError(
                                f"Can't find end of a URL at byte offset {_byte_offset(text, i + 1)}"
                            )
                        url, i = "".join(chars), j + 1
                    if kind == "custom_emoji":
                        match = re.fullmatch(r"tg://emoji\?id=(\d+)", url or "")
                        if not match:
                            raise MarkupError("Custom emoji entity must contain a tg://emoji URL")
                        _add(entities, "custom_emoji", top["start"], out.u16, custom_emoji_id=match.group(1))
                    elif url:
                        _add(entities, "text_link", top["start"], out.u16, url=url)
                else:
                    _add(entities, kind, top["start"], out.u16)
                continue
        begin = i
        if c == "_":
            kind, i = ("underline", i + 2) if text.startswith("__", i) else ("italic", i + 1)
        elif c == "*":
            kind, i = "bold", i + 1
        elif c == "~":
            kind, i = "strikethrough", i + 1
        elif c == "|" and text.startswith("||", i):
            kind, i = "spoiler", i + 2
        elif c == "[":
            kind, i = "text_link", i + 1
        elif c == "!" and text.startswith("![", i):
            kind, i = "custom_emoji", i + 2
        elif c == "`":
            if text.startswith("```", i):
                kind, i = "pre", i + 3
                newline = text.find("\n", i)
                language = text[i:newline] if newline != -1 else ""
                if newline != -1 and language and not any(ch.isspace() for ch in language):
                    stack.append({"type": kind, "start": out.u16, "begin": begin, "language": language})
                    i = newline + 1
                    continue
            else:
                kind, i = "code", i + 1
        else:
            raise reserved(c)
        stack.append({"type": kind, "start": out.u16, "begin": begin})
    if stack:
        top = stack[-1]
        raise MarkupError(
            f"Can't find end of {_MDV2_NAMES[top['type']]} entity at byte offset {_byte_offset(text, top['begin'])}"
        )
    if quote_start is not None:
        _add(entities, "expandable_blockquote" if quote_expandable else "blockquote", quote_start, out.u16)
    return out.text(), entities


# ------------------------------------------------------------------------------------ legacy Markdown


def parse_markdown(text: str) -> tuple[str, list[dict[str, Any]]]:
    out = _Out()
    entities: list[dict[str, Any]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in "_*`[":
            out.add(text[i + 1])
            i += 2
            continue
        if c not in "_*`[":
            out.add(c)
            i += 1
            continue
        begin, start = i, out.u16
        unclosed = MarkupError(
            f"Can't find end of the entity starting at byte offset {_byte_offset(text, begin)}"
        )
        if c == "[":
            close = text.find("]", i + 1)
            if close == -1:
                raise unclosed
            label = text[i + 1:close]
            out.add(label)
            i = close + 1
            if i < n and text[i] == "(":
                end = text.find(")", i + 1)
                if end == -1:
                    raise unclosed
                url = text[i + 1:end]
                i = end + 1
                if url:
                    _add(entities, "text_link", start, out.u16, url=url)
            continue
        if c == "`" and text.startswith("```", i):
            end = text.find("```", i + 3)
            if end == -1:
                raise unclosed
            body, language = text[i + 3:end], None
            newline = body.find("\n")
            if newline > 0 and not any(ch.isspace() for ch in body[:newline]):
                language, body = body[:newline], body[newline + 1:]
            out.add(body)
            _add(entities, "pre", start, out.u16, language=language)
            i = end + 3
            continue
        end = text.find(c, i + 1)
        if end == -1:
            raise unclosed
        out.add(text[i + 1:end])
        _add(entities, {"*": "bold", "_": "italic", "`": "code"}[c], start, out.u16)
        i = end + 1
    return out.text(), entities


# ------------------------------------------------------------------------------------------- common


def _add(entities: list[dict[str, Any]], kind: str, start: int, end: int, **extra: Any) -> None:
    if end > start:
        entity: dict[str, Any] = {"type": kind, "offset": start, "length": end - start}
        entity.update({k: v for k, v in extra.items() if v is not None})
        entities.append(entity)


_DETECTORS = [
    ("bot_command", re.compile(r"(?<![\w/@])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w/@])")),
    ("mention", re.compile(r"(?<![\w@/])@[A-Za-z][A-Za-z0-9_]{3,31}(?![\w@])")),
    ("hashtag", re.compile(r"(?<![\w#])#\w*[^\W\d_]\w*")),
    ("url", re.compile(r"\bhttps?://[^\s<>\"']+[^\s<>\"'.,;:!?)\]]")),
]
_NO_DETECTION_INSIDE = {"code", "pre", "text_link", "url", "text_mention", "custom_emoji"}


def detect_entities(text: str, existing: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The entities Telegram finds by itself in a text: bot commands, @mentions, #hashtags and URLs
    (none inside code, pre or links)."""
    blocked = [
        (e["offset"], e["offset"] + e["length"]) for e in existing or () if e["type"] in _NO_DETECTION_INSIDE
    ]
    found: list[dict[str, Any]] = []
    for kind, pattern in _DETECTORS:
        for m in pattern.finditer(text):
            offset = utf16_len(text[: m.start()])
            length = utf16_len(m.group(0))
            if any(offset < end and start < offset + length for start, end in blocked):
                continue
            blocked.append((offset, offset + length))
            found.append({"type": kind, "offset": offset, "length": length})
    return found


def _strip(text: str, entities: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Telegram trims the whitespace around a message's text; entities are shifted and clipped."""
    stripped = text.strip()
    if stripped == text:
        return text, entities
    left = utf16_len(text[: len(text) - len(text.lstrip())])
    size = utf16_len(stripped)
    kept = []
    for entity in entities:
        start = max(entity["offset"] - left, 0)
        end = min(entity["offset"] + entity["length"] - left, size)
        if end > start:
            kept.append({**entity, "offset": start, "length": end - start})
    return stripped, kept


_PARSERS = {"html": parse_html, "markdownv2": parse_markdown_v2, "markdown": parse_markdown}
PARSE_MODES = set(_PARSERS)


def render(
    text: str, parse_mode: str | None = None, entities: list[dict[str, Any]] | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """(plain text, entities) as Telegram stores a message sent with this text, parse_mode and entities.
    Raises MarkupError for markup Telegram refuses; an unknown parse_mode raises KeyError."""
    if parse_mode:
        plain, found = _PARSERS[parse_mode.lower()](text)
    else:
        plain, found = text, [dict(e) for e in entities or ()]
    plain, found = _strip(plain, found)
    found = found + detect_entities(plain, found)
    found.sort(key=lambda e: (e["offset"], -e["length"]))
    return plain, found
