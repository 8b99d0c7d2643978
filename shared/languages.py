"""The languages the narrator speaks: one list that the narration, the protocol's language check and
the gateways all read.

The order is the order a host cycles through them in the Telegram settings and the order they are
listed to players. English is the source language of the catalogs; each other language has its
catalog and glossary in ``shared/narration/locales/<code>/`` (a test checks that the two agree).
Adding a language: its catalog, its glossary, and its code here (shared/narration/README.md).
"""

from __future__ import annotations

LOCALES: tuple[str, ...] = ("en", "fa", "ru", "vi", "nl", "fr")
SOURCE = "en"
