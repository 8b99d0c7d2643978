"""The person's own new words in the text of a mail: the quoted thread, attribution lines, forwarded
headers, signatures and sign-offs taken away.

How a text is read (line by line; ``> `` quotes and runs of ``|`` lines are the quoted thread):

- A *thread header* starts the thread: an attribution ("On ... wrote:", "Le ... a écrit :",
  "Op ... schreef ...:", "... написал(а):", "Vào ... đã viết:", "در ... نوشت:" and those the reply
  parser mailparser_reply knows for its languages), an Outlook header block ("From:/Sent:/To:" in
  the six languages and a dozen more), a separator ("-----Original Message-----", a line of
  underscores). The lines just above a quote that look like an attribution (a date, an address,
  a verb such as "wrote", however the mail program wrapped them) belong to the quote too.
- Top-posting: what the person wrote above the first quote or thread header is their text.
- Bottom-posting and inline replies: when nothing is above the thread, the person's text is every
  unquoted block between and after the quotes, joined with a blank line. When something is above,
  blocks below count only if the reply is interleaved (an unquoted block followed by another quote);
  a lone block after the last quote of a top-posted reply is a footer a list or server appended.
- A thread header followed by unquoted text (a forwarded or unquoted original) ends the person's
  text: everything after it is the thread.
- Only the first 5,000 lines are read (reading.py reads at most 256 K characters of a part): an
  adversarial mail costs about a second, and a person's words are not below that many.
- Signatures go: from a ``-- `` line or a "Sent from my iPhone" line (in the six languages and the
  reply parser's), a closing formula ("Thanks,", "Met vriendelijke groet", "С уважением", "Trân
  trọng", "با تشکر"...) followed by at most four short lines, a last line "-Ann" or "/John".
"""

from __future__ import annotations

import re

from mailparser_reply import EmailReplyParser
from mailparser_reply.constants import MAIL_LANGUAGES

#: the reply parser's languages whose header patterns we use ('pl' is left out: it takes a single
#: line such as "Do: ..." for a header block; Polish is covered by our own patterns)
LIB_LANGUAGES = ["en", "de", "da", "sv", "es", "fr", "it", "nl", "cs", "ja", "ko", "zh", "david"]
_LIB_HEADER = EmailReplyParser(languages=LIB_LANGUAGES).read("").HEADER_REGEX
_LIB_SENT_FROM = "|".join(lang["sent_from"] for lang in MAIL_LANGUAGES.values() if lang.get("sent_from"))

_INVISIBLE = dict.fromkeys([*map(ord, "\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                                     "\ufeff\u00ad"), *range(0x09), 0x0b, 0x0c, *range(0x0e, 0x20), 0x7f])
_MAX_LINE = 1000  # longer lines are never headers (and keep the patterns cheap)
MAX_LINES = 5000  # lines of a text read at most: the person's words are above or among them

FROM_KEYS = ("from|de|van|von|от|от кого|từ|از|da|från|fra|od|lähettäjä|feladó|mittente|remetente|"
             "发件人|寄件者|差出人|보낸 사람")
OTHER_KEYS = ("sent|date|to|cc|bcc|subject|reply-to|envoyé|envoyé le|à|objet|répondre à|cci|verzonden|aan|"
              "onderwerp|datum|beantwoorden aan|отправлено|дата|кому|копия|тема|ответить|đã gửi|gửi|gửi lúc|"
              "ngày|đến|tới|chủ đề|ارسال شده|ارسال‌شده|فرستاده شده|تاریخ|به|موضوع|رونوشت|gesendet|an|"
              "betreff|antwort an|kopie|inviato|data|a|oggetto|risposta|skickat|till|ämne|kopia|sendt|til|"
              "emne|kopi|enviado|enviada|para|asunto|assunto|fecha|wysłano|do|temat|dw|发送时间|收件人|"
              "主题|抄送|日付|宛先|件名|送信日時|organization|organisation")
_KEYS = sorted(set((FROM_KEYS + "|" + OTHER_KEYS).split("|")), key=len, reverse=True)
_HEADER_LINE = re.compile(r"^[ \t*_]*(" + "|".join(map(re.escape, _KEYS)) + r")[ \t*_]*[:：]", re.I)
_FROM_KEYS = frozenset(FROM_KEYS.split("|"))

_VERB = (r"wrote|a\s+écrit|schreef|geschreven|schrieb|написал(?:а|\(а\))?|пише|пишет|đã viết|نوشت(?:ه است)?|"
         r"napisał(?:a|\(a\))?|nadesłał|escribió|escreveu|ha scritto|skrev|napsal(?:\(a\))?|写道|寫道|"
         r"kirjoitti|írta")
_END_VERB = re.compile(rf"(?:^|[\s\"'>)\]])(?:{_VERB})(?:\s.{{0,200}})?\s*[:：]$|\bwrote\s*-*$", re.I)
#: how an attribution begins: a word that opens one in some language, or a date
_OPENER = re.compile(r"^[\s\->*_]*(?:(?:on|le|op|am|vào|lúc|در|el|em|il|den|dne|w dniu|dnia|at)\s|\d)", re.I)
_ADDRESS = re.compile(r"\S@\S")
_DATE_OR_ADDRESS = re.compile(r"[@\d]")
_DATE = re.compile(r"\d{1,2}[:.]\d{2}|(?:19|20)\d{2}|[۱۲]\d{3}|\d{1,2}[./-]\d{1,2}")  # a time, a year, a day
_SEPARATOR = re.compile(
    r"^\s*(?:[-=_]{3,}\s*[^\W\d_][^-=_]{2,60}?\s*[-=_]{3,}|_{8,}|"
    r"(?:begin forwarded message|anfang der weitergeleiteten nachricht|début du message réexpédié|"
    r"doorgestuurd bericht|begin doorgestuurd bericht|начало переадресованного сообщения|"
    r"bắt đầu thư được chuyển tiếp|شروع پیام بازارسال شده|پیام بازارسال شده)\s*[:：]?)\s*$", re.I)
_SENT_FROM = re.compile(
    r"^(?:sent from|sent with|sent via|get outlook for|envoyé de|envoyé depuis|envoyé à partir de|envoyé avec|"
    r"verzonden vanaf|verstuurd vanaf|verzonden met|verstuurd met|отправлено с|отправлено из|"
    r"отправлено через|gửi từ|được gửi từ|ارسال شده از|ارسال‌شده از|فرستاده شده از|von meinem|"
    rf"gesendet von|sendt fra|skickat från|wysłano z|inviato da|enviado desde|enviado do|{_LIB_SENT_FROM})", re.I)
_CLOSING = re.compile(
    r"^(?:best regards|kind regards|warm regards|regards|best wishes|best|cheers|thanks|thank you|thanks again|"
    r"many thanks|thx|sincerely|yours|yours truly|all the best|br|cordialement|bien cordialement|bien à vous|"
    r"merci|merci beaucoup|amicalement|bonne journée|salutations|à bientôt|bises|met vriendelijke groet(?:en)?|"
    r"vriendelijke groet(?:en)?|hartelijke groet(?:en)?|groet(?:en|jes)?|mvg|bedankt|dank je(?: wel)?|"
    r"dank u(?: wel)?|с уважением|спасибо|заранее спасибо|всего доброго|всего хорошего|"
    r"с наилучшими пожеланиями|trân trọng|thân ái|thân|cảm ơn|cám ơn|xin cảm ơn|chúc vui|با تشکر|با سپاس|"
    r"سپاس|ممنون|مرسی|با احترام|ارادتمند|mit freundlichen grüßen|freundliche grüße|viele grüße|"
    r"beste grüße|liebe grüße|grüße|gruß|lg|med venlig hilsen|venlig hilsen|hilsen|mvh|"
    r"med vänliga hälsningar|vänliga hälsningar|hälsningar|pozdrawiam|pozdrawiamy|z poważaniem|saludos|"
    r"un saludo|atentamente|cordiali saluti|saluti|grazie|abraços|atenciosamente|obrigad[oa])[\s,.!:;)،؛]*$",
    re.I)
_DASH_NAME = re.compile(r"^(-|/{1,2}|~)[A-Z][\w.'-]*(?:\s[A-Z][\w.'-]*){0,3}$")  # "-Ann", "/John", not "- Bors"
_SEPARATOR_ONLY = re.compile(r"^[\s\-_=*~—–•.#]*$")


def prepare(text: str) -> list[str]:
    """Lines without invisible marks (bidi and C0 controls, zero-width space; not ZWNJ), right-stripped; an
    address wrapped as ``<addr\\n>:`` is joined back so its ``>`` is not read as a quote."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    lines = [line.rstrip() for line in text.translate(_INVISIBLE).replace("\xa0", " ").split("\n", MAX_LINES)]
    joined: list[str] = []
    for line in lines:
        if (joined and line.lstrip().startswith(">") and not _is_quote(joined[-1])
                and joined[-1].count("<") > joined[-1].count(">") and len(line) < 80):
            joined[-1] += line.strip()
        else:
            joined.append(line)
    return joined


def _is_quote(line: str) -> bool:
    return line.lstrip().startswith(">")


def _quoted(lines: list[str]) -> list[bool]:
    """Which lines are quoted: ``>`` lines, and runs of at least three ``|`` lines."""
    flags = [_is_quote(line) for line in lines]
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            j += 1
        if j - i >= 3:
            flags[i:j] = [True] * (j - i)
        i = max(j, i + 1)
    return flags


def _join(lines: list[str]) -> str:
    return " ".join(line.strip() for line in lines)


def _header_block(lines: list[str], quoted: list[bool], i: int) -> int | None:
    """The last line of an Outlook-style header block starting at ``i`` (at least two different keys,
    one of them "From" in some language; one wrapped line allowed between), else None."""
    found = _HEADER_LINE.match(lines[i])
    if not found:
        return None
    keys, end, gap = [found.group(1).lower()], i, 0
    for j in range(i + 1, min(len(lines), i + 12)):
        if quoted[j] or not lines[j].strip() or len(lines[j]) > _MAX_LINE:
            break
        found = _HEADER_LINE.match(lines[j])
        if found:
            keys.append(found.group(1).lower())
            end, gap = j, 0
        else:
            gap += 1
            if gap > 1:
                break
    if len(set(keys)) >= 2 and _FROM_KEYS.intersection(keys):
        return end
    return None


def _attribution(lines: list[str], quoted: list[bool], i: int) -> int | None:
    """The last line of an attribution starting at ``i`` ("On <date>, <who> wrote:", wrapped over
    up to four lines), else None."""
    if not (_OPENER.match(lines[i]) or _ADDRESS.search(lines[i])):
        return None
    joined = ""
    for j in range(i, min(len(lines), i + 4)):
        if j > i and (quoted[j] or not lines[j].strip() or _OPENER.match(lines[j]) or len(lines[j]) > _MAX_LINE):
            break
        joined = (joined + " " + lines[j].strip()).strip()
        if _END_VERB.search(joined) and _DATE_OR_ADDRESS.search(joined):
            return j
    return None


def marker_end(lines: list[str], quoted: list[bool], i: int) -> int | None:
    """If a thread header starts at line ``i``: its last line; else None."""
    line = lines[i]
    if quoted[i] or not line.strip() or len(line) > _MAX_LINE:
        return None
    if _SEPARATOR.match(line):
        return i
    for find in (_header_block, _attribution):
        end = find(lines, quoted, i)
        if end is not None:
            return end
    window = "\n".join(lines[i:i + 4])[:4 * _MAX_LINE]
    found = _LIB_HEADER.match(window)
    if found and found.group(0).strip():
        return i + found.group(0).rstrip("\n").count("\n")
    return None


def attribution_start(block: list[str]) -> int:
    """Where the attribution at the end of ``block`` (the lines just above a quote) begins;
    ``len(block)`` if there is none."""
    e = len(block) - 1
    while e >= 0 and not block[e].strip():
        e -= 1
    if e < 0:
        return len(block)
    p = e
    while p > 0 and block[p - 1].strip():
        p -= 1
    candidates = []
    for j in range(e, max(p, e - 3) - 1, -1):
        if len(block[j]) > _MAX_LINE:
            break
        above = block[j - 1] if j > p else ""
        if block[j].lstrip().startswith(">") or above.count("<") > above.count(">"):
            continue  # starts inside an address wrapped over two lines
        joined = _join(block[j:e + 1])
        verb = _END_VERB.search(joined) and _DATE_OR_ADDRESS.search(joined)
        address = (_ADDRESS.search(joined) and _DATE.search(joined)
                   and (joined.endswith((":", "：")) or (joined.endswith(">") and _OPENER.match(block[j]))))
        if verb or address:
            candidates.append(j)
    opening = [j for j in candidates if _OPENER.match(block[j])]
    if opening:
        return opening[0]
    if candidates:
        return candidates[0]
    if len(block[e]) <= 120 and _END_VERB.search(block[e]):
        return e  # "Ann wrote:"
    return len(block)


def _trim(block: list[str]) -> list[str]:
    start, end = 0, len(block)
    while start < end and _SEPARATOR_ONLY.match(block[start]):
        start += 1
    while end > start and _SEPARATOR_ONLY.match(block[end - 1]):
        end -= 1
    return block[start:end]


def clean(block: list[str]) -> list[str]:
    """``block`` without its signature, sign-off and the separator lines around it."""
    for idx, line in enumerate(block):
        text = line.strip()
        if text == "--" or (len(text) <= 100 and _SENT_FROM.match(text)):
            block = block[:idx]
            break
    block = _trim(block)
    written = [idx for idx, line in enumerate(block) if line.strip()]
    for idx in reversed(written[1:]):
        after = [line.strip() for line in block[idx + 1:] if line.strip()]
        if len(after) > 4 or any(len(line) > 60 for line in after):
            break
        if _CLOSING.match(block[idx].strip()):
            block = _trim(block[:idx])
            break
    signed = _DASH_NAME.match(block[-1].strip()) if len(block) > 1 else None
    above = [line.strip() for line in block[:-1] if line.strip()]
    if signed and above and not above[-1].startswith(signed.group(1)):  # not the last item of a list
        block = _trim(block[:-1])
    return block


def fresh_text(text: str) -> str:
    """What the person wrote in ``text`` (see the module's docstring); '' if nothing."""
    lines = prepare(text)[:MAX_LINES]
    quoted = _quoted(lines)
    n = len(lines)
    first, ends = n, {}
    for i in range(n):
        if quoted[i]:
            first = i
            break
        end = marker_end(lines, quoted, i)
        if end is not None:
            first, ends[i] = i, end
            break
    top = lines[:first]
    if first < n and quoted[first]:
        top = top[:attribution_start(top)]
    top = clean(top)
    below = _blocks_below(lines, quoted, first, ends)
    if any(line.strip() for line in top):
        interleaved = any(followed for _, followed in below)
        blocks = [top] + [block for block, _ in below] if interleaved else [top]
    else:
        blocks = [block for block, _ in below]
    return _tidy("\n\n".join("\n".join(block) for block in blocks if block))


def _blocks_below(lines: list[str], quoted: list[bool], first: int, ends: dict[int, int]):
    """The unquoted blocks from ``first`` on: (lines, followed by a quote?), until the thread's
    unquoted part (a header not followed by a quote), a signature or a footer begins."""
    blocks: list[tuple[list[str], bool]] = []
    current: list[str] = []

    def flush(followed: bool) -> None:
        block = current[:attribution_start(current)] if followed else current
        block = clean(block)
        if block:
            blocks.append((block, followed))
        current.clear()

    i, n = first, len(lines)
    while i < n:
        if quoted[i]:
            flush(True)
            i += 1
            continue
        end = ends.get(i)
        if end is None:
            end = marker_end(lines, quoted, i)
        if end is not None:
            after = end + 1
            while after < n and not lines[after].strip():
                after += 1
            if after < n and quoted[after]:
                flush(True)
                i = end + 1
                continue
            break
        text = lines[i].strip()
        if text == "--" or (len(text) <= 100 and _SENT_FROM.match(text)):
            break
        current.append(lines[i])
        i += 1
    flush(False)
    return blocks


def _tidy(text: str) -> str:
    """Runs of blank lines made one, no blank lines at either end."""
    lines = [line.rstrip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)
