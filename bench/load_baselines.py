"""The floors under bench/load_bench.py's latencies, measured in the same run against the same fakes
and mail servers, with no narrator: what a message costs before the narrator does anything."""

from __future__ import annotations

import asyncio
import time
import types
from email import message_from_bytes
from email.policy import default

import aiohttp

from avalon.services.email_gateway.imap import MailboxWatcher, MemoryStateStore
from tests.mailservers import MailUser


async def fake_api_round_trip(info: dict, n: int = 300) -> list[float]:
    """Seconds per sendMessage to the fake Bot API (its process, its HTTP server), one at a time."""
    out = []
    async with aiohttp.ClientSession() as http:
        for i in range(n):
            start = time.monotonic()
            async with http.post(f"{info['base_url']}/bot{info['token']}/sendMessage",
                                 json={"chat_id": 999, "text": f"ping {i}"}) as answer:
                await answer.json()
            out.append(time.monotonic() - start)
    return out


async def smtp_submission(info: dict, n: int = 50) -> list[float]:
    """Seconds per mail a player submits to the loopback SMTP server (connect, AUTH, DATA), one at a
    time, to an address that is only recorded (as the narrator's mail to a player is)."""
    user = MailUser(types.SimpleNamespace(smtp_port=info["smtp_port"]), "sink@example.test")
    out = []
    for i in range(n):
        start = time.monotonic()
        await user.send("baseline@example.test", f"ping {i}", "ping")
        out.append(time.monotonic() - start)
    return out


async def imap_floor(info: dict, n: int = 20) -> list[float]:
    """Seconds from a player starting to send a mail to the project's IMAP watcher (as the gateway
    runs it) handing it over: SMTP, LMTP into Dovecot, Dovecot's IDLE notice, the fetch."""
    seen: dict[str, float] = {}

    async def handle(uid: int, raw: bytes) -> None:
        seen[str(message_from_bytes(raw, policy=default)["Subject"])] = time.monotonic()
    watcher = MailboxWatcher("127.0.0.1", info["imap_port"], "none", info["probe"], "secret", "INBOX",
                             MemoryStateStore(), handle, poll_interval=1.0)
    await watcher.start()
    user = MailUser(types.SimpleNamespace(smtp_port=info["smtp_port"]), "pinger@example.test")
    out = []
    try:
        while not watcher.connected:
            await asyncio.sleep(0.05)
        for i in range(n):
            start = time.monotonic()
            await user.send(info["probe"], f"probe {i}", "probe")
            while f"probe {i}" not in seen:
                await asyncio.sleep(0.005)
            out.append(seen[f"probe {i}"] - start)
    finally:
        await watcher.close()
    return out
