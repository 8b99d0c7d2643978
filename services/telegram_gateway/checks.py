"""What the Telegram gateway's settings must hold, checked before anything starts (and before
aiogram, which takes seconds to load, is imported). The token's form is checked where it is read
(``shared/config.py``)."""

from __future__ import annotations

from avalon.shared.config import Settings


def problems(s: Settings) -> list[str]:
    found = []
    if s.telegram_webhook_url and not s.telegram_webhook_secret:
        found.append("TELEGRAM_WEBHOOK_SECRET is not set: webhook mode (TELEGRAM_WEBHOOK_URL) needs the secret "
                     "Telegram must send")
    if s.telegram_webhook_url and not s.telegram_webhook_url.startswith("https://"):
        found.append(f"TELEGRAM_WEBHOOK_URL={s.telegram_webhook_url!r}: expected the public https:// base URL")
    host, colon, port = s.telegram_webhook_listen.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        found.append(f"TELEGRAM_WEBHOOK_LISTEN={s.telegram_webhook_listen!r}: expected HOST:PORT")
    return found
