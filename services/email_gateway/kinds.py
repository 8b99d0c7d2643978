"""What kind of mail came in: ours, a bounce, an auto-reply, or a person's; which addresses a bounce
says failed; whether the receiving server found the mail forged.

In this order, the first that holds:

- ``own``: ``X-Avalon-Narrator``, a From of the narrator's address (any ``+tag``), or one of our
  Message-IDs (``avalon.…@<narrator domain>``).
- ``bounce``: a delivery report (``multipart/report; report-type=delivery-status``), an
  ``X-Failed-Recipients`` header, or a mail from MAILER-DAEMON/postmaster with a delivery-failure
  subject. (Before the auto-reply signals: DSNs carry ``Auto-Submitted`` and ``Precedence`` too.)
- ``auto_reply``: RFC 3834 ``Auto-Submitted`` other than ``no``; ``X-Autoreply``/``X-Autorespond``;
  ``Precedence: bulk|junk|list|auto_reply``; ``List-Id``/``List-Unsubscribe``; a read receipt
  (``report-type=disposition-notification``); an out-of-office subject in one of a dozen languages;
  ``X-Auto-Response-Suppress: All|OOF|AutoReply`` only with a null sender or Exchange's
  ``X-MS-Exchange-Inbox-Rules-Loop`` beside it (Outlook sets it on ordinary mail too).
- ``bounce``: any other mail from the null sender ``<>`` (auto-replies come from it as well, which is
  why they are told first).
- ``person`` otherwise.
"""

from __future__ import annotations

import re
from email.message import Message
from email.utils import getaddresses

DAEMONS = frozenset({"mailer-daemon", "mailerdaemon", "mail-daemon", "postmaster"})
_DSN_SUBJECT = re.compile(
    r"undeliver|delivery status notification|delivery (?:has )?failed|delivery failure|mail delivery|"
    r"failure notice|returned mail|returned to sender|non.?delivery|could not be delivered|delayed mail|"
    r"mail failure|message not delivered|недоставленное сообщение|не доставлено|niet afgeleverd|"
    r"onbestelbaar|non remis|échec de (?:la )?remise|không gửi được|تحویل داده نشد", re.I)
_AUTO_SUBJECT = re.compile(
    r"^\s*(?:out of (?:the )?office|automatic reply|auto(?:matic)?[ -]?repl|auto[ -]?respon|auto:|"
    r"away from (?:the )?office|abwesenheitsnotiz|automatische antwort|réponse automatique|"
    r"automatisch antwoord|afwezigheidsbericht|автоответ|автоматический ответ|trả lời tự động|"
    r"پاسخ خودکار|odpowiedź automatyczna|respuesta automática|risposta automatica|"
    r"resposta automática|autosvar|automatisk svar)", re.I)
_AUTH = re.compile(r"\b(dmarc|spf|dkim)\s*=\s*([a-z]+)", re.I)
_ADDRESS = r"[A-Za-z0-9._%+'\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"
_ADDRESS_LINE = re.compile(rf"^\s*<?({_ADDRESS})>?(?:<mailto:[^>]*>)?\s*(?::.*)?$")
_COPY_BEGINS = re.compile(r"original message|copy of the message|undelivered message|original headers|"
                          r"message headers|-{3,}\s*original", re.I)


def _report_type(msg: Message) -> str:
    if msg.get_content_type() != "multipart/report":
        return ""
    try:
        value = msg.get_param("report-type")
    except Exception:  # noqa: BLE001
        return ""
    return value.strip().lower() if isinstance(value, str) else ""


def kind_of(msg: Message, headers, *, sender: str | None, sender_name: str, message_id: str | None,
            return_path: str | None, subject: str, narrator: str) -> str:
    local, _, domain = narrator.rpartition("@")
    base = local.split("+", 1)[0]
    if headers.has("x-avalon-narrator"):
        return "own"
    if sender and domain:
        their_local, _, their_domain = sender.rpartition("@")
        if their_domain == domain and their_local.split("+", 1)[0] == base:
            return "own"
    ours = (message_id or "").lower()
    if domain and ours.startswith("avalon.") and ours.endswith("@" + domain):
        return "own"
    report = _report_type(msg)
    daemon = bool(sender) and sender.rpartition("@")[0] in DAEMONS
    if report == "delivery-status" or headers.has("x-failed-recipients"):
        return "bounce"
    if daemon and (_DSN_SUBJECT.search(subject) or return_path == ""):
        return "bounce"
    if _auto_reply(headers, report, subject, return_path):
        return "auto_reply"
    if return_path == "":
        return "bounce"
    return "person"


def _auto_reply(headers, report: str, subject: str, return_path: str | None) -> bool:
    submitted = (headers.first("auto-submitted") or "").strip().lower()
    if submitted and submitted.split(";")[0].strip() != "no":
        return True
    if any(headers.has(name) for name in ("x-autoreply", "x-autorespond", "x-autoresponder", "list-id",
                                          "list-unsubscribe")):
        return True
    if (headers.first("precedence") or "").strip().lower() in ("bulk", "junk", "list", "auto_reply"):
        return True
    if report == "disposition-notification" or _AUTO_SUBJECT.search(subject):
        return True
    suppress = {word.strip().lower() for word in (headers.first("x-auto-response-suppress") or "").split(",")}
    if suppress & {"all", "oof", "autoreply"}:
        return return_path == "" or headers.has("x-ms-exchange-inbox-rules-loop")
    return False


def auth_failure(headers) -> str | None:
    """"dmarc=fail", "spf=fail", "dkim=fail" (joined with ", " when several) from the receiving
    server's Authentication-Results: the topmost header and those with the same authserv-id
    (lower ones may come from earlier hops or the sender). softfail is no failure; a dkim=fail
    beside a dkim=pass (one of two signatures broken, as lists do) is none either."""
    values = headers.all("authentication-results")
    if not values:
        return None
    server = values[0].split(";", 1)[0].strip().lower()
    results: dict[str, set[str]] = {}
    for value in values:
        if value.split(";", 1)[0].strip().lower() != server:
            continue
        for method, result in _AUTH.findall(value):
            results.setdefault(method.lower(), set()).add(result.lower())
    failed = [method for method in ("dmarc", "spf", "dkim")
              if "fail" in results.get(method, ()) and not (method == "dkim" and "pass" in results[method])]
    return ", ".join(f"{method}=fail" for method in failed) or None


def bounced_addresses(msg: Message, headers, notification: str) -> tuple[str, ...]:
    """The failed recipients of a bounce: from the delivery report (Final-Recipient, else
    Original-Recipient, of each recipient whose Action is "failed"), else X-Failed-Recipients,
    else the address lines of the notification text above the copy of the message. A report
    whose recipients are only delayed (a warning) names none, and the text is not searched then."""
    reported, found = _from_report(msg)
    if not found and not reported:
        values = headers.all("x-failed-recipients")
        found = [address for _, address in getaddresses(values)]
    if not found and not reported:
        for line in notification.splitlines():
            if _COPY_BEGINS.search(line):
                break
            match = _ADDRESS_LINE.match(line)
            if match:
                found.append(match.group(1))
    return tuple(dict.fromkeys(a.strip().lower() for a in found if "@" in a))


def _from_report(msg: Message) -> tuple[bool, list[str]]:
    """(whether there is a delivery report, the failed recipients it names)"""
    reported, found = False, []
    stack, seen = [msg], 0
    while stack and seen < 200:
        part = stack.pop()
        seen += 1
        if part.get_content_type() == "message/delivery-status":
            reported = True
            blocks = part.get_payload()
            for block in blocks if isinstance(blocks, list) else []:
                fields = {k.lower(): str(v) for k, v in block.raw_items()}
                action = fields.get("action", "failed").strip().lower()
                recipient = fields.get("final-recipient") or fields.get("original-recipient") or ""
                if action == "failed" and recipient:
                    found.append(recipient.split(";", 1)[-1].strip().strip("<>"))
        elif part.get_content_type().startswith("multipart/") and isinstance(part.get_payload(), list):
            stack.extend(part.get_payload())
    return reported, found


_SOFT_BREAK = re.compile(r"=\r?\n")


def referenced_tokens(msg: Message, raw: bytes, narrator: str) -> tuple[str, ...]:
    """The reply tokens of our mail that a bounce quotes (the copy of the mail it returns, its headers
    or the report's text): ``tok.TOKEN@<narrator domain>`` of our References and ``narrator+TOKEN@…``
    of our Reply-To, found in the raw mail and in each decoded part. A bounce is believed only for an
    address one of them was made for: a bounce naming an address that quotes no mail of ours is forged."""
    local, _, domain = narrator.lower().rpartition("@")
    if not domain:
        return ()
    base = re.escape(local.split("+", 1)[0])
    pattern = re.compile(rf"(?:\btok\.|\b{base}\+)([a-z0-9-]{{8,120}})@{re.escape(domain)}", re.I)
    texts = [raw[:1 << 20].decode("utf-8", "replace")]
    stack, seen = [msg], 0
    while stack and seen < 200:
        part = stack.pop()
        seen += 1
        payload = part.get_payload(decode=not part.is_multipart())
        if isinstance(payload, list):
            stack.extend(p for p in payload if isinstance(p, Message))
        elif isinstance(payload, bytes):
            texts.append(payload[:1 << 20].decode("utf-8", "replace"))
    found = (m.group(1).lower() for text in texts for m in pattern.finditer(_SOFT_BREAK.sub("", text)))
    return tuple(dict.fromkeys(found))
