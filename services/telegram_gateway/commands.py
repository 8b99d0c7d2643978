"""The Telegram gateway's commands onto the bus, each on behalf of one player; before a player's
command, their profile when the name or language the engine has of them is not what Telegram says
(same bus, same queue: the engine names them in that command's events, on every channel)."""

from __future__ import annotations

from typing import Any

from avalon.shared.bus import Bus
from avalon.shared.narration.render import LOCALES
from avalon.shared.protocol import CommandEnvelope

from .memory import Memory

CHANNEL = "telegram"


class Commands:
    def __init__(self, bus: Bus, memory: Memory) -> None:
        self.bus = bus
        self.memory = memory
        self._sent: dict[str, tuple[str, str | None]] = {}  # player -> (name, language) the engine has
        self._due: dict[str, tuple[str, str | None]] = {}  # player -> what to send before their command

    def profile_due(self, player: str, user) -> None:
        """Note what the engine should know of ``player`` (a Telegram user): sent before their next command
        when it is not what it was last sent."""
        language = self.memory.languages.get(player)
        profile = ((user.first_name or self.memory.names[player])[:64], language if language in LOCALES else None)
        if self._sent.get(player) != profile:
            self._due[player] = profile
        else:
            self._due.pop(player, None)

    async def send(self, game: str, actor: str, body: dict[str, Any], phase_id: int | None = None) -> str:
        """One command of ``actor`` (their profile first, when due); returns its message id."""
        await self._send_profile(actor)
        envelope = CommandEnvelope(game_id=game, actor=actor, channel=CHANNEL, phase_id=phase_id, command=body)
        await self.bus.send_command(envelope)
        return envelope.message_id

    async def _send_profile(self, player: str) -> None:
        profile = self._due.pop(player, None)
        if profile is None:
            return
        name, language = profile
        envelope = CommandEnvelope(game_id=f"profile:{player}", actor=player, channel=CHANNEL,
                                   command={"type": "update_profile", "display_name": name, "language": language})
        try:
            await self.bus.send_command(envelope)
        except BaseException:
            self._due.setdefault(player, profile)  # sent with their next command, then
            raise
        self._sent[player] = profile
