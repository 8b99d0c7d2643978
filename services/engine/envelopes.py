"""The one place the engine makes an ``EventEnvelope``, with the channels it goes to.

Two kinds: a game's event, numbered in the game's stream (``seq``), with its readers and its place
in each channel's chain (``prev_seq``); and a reply outside the stream (``seq`` 0: a rejection, the
board, a profile, an invitation), whose id is its kind and the command's id.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from avalon.shared.protocol import (
    AudienceModel,
    CommandEnvelope,
    CommandRejected,
    EventEnvelope,
    Person,
    audience_model,
    utcnow,
)
from avalon.services.engine.rules import Audience

from .routing import Router
from .store import LoadedGame

#: An event with the channels it is sent to, as a batch commits it.
Routed = tuple[EventEnvelope, tuple[str, ...]]


class Envelopes:
    def __init__(self, router: Router) -> None:
        self.router = router

    def in_stream(self, env: CommandEnvelope, game: LoadedGame, sent: dict[str, int], seq: int, body: BaseModel,
                  audience: AudienceModel, readers: tuple[str, ...], *, at: datetime,
                  people: dict[str, Person] | None = None, deadline_at: datetime | None = None) -> Routed:
        """Event ``seq`` of ``env``'s game, caused by ``env``; ``sent`` (channel -> the seq last sent
        there) names its predecessor on each of its channels, and then it."""
        channels = self.router.of_event(body.type, audience.kind, readers, game.origin_channel)
        envelope = EventEnvelope(
            message_id=f"{env.game_id}:{seq}", game_id=env.game_id, seq=seq, occurred_at=at, audience=audience,
            caused_by=env.message_id, deadline_at=deadline_at, readers=readers, people=people or {},
            prev_seq=self.router.chain(seq, channels, sent) if channels else {}, event=body)
        return envelope, channels

    @staticmethod
    def reply(env: CommandEnvelope, kind: str, body: BaseModel, audience: AudienceModel, channels: tuple[str, ...],
              *, readers: tuple[str, ...] = (), people: dict[str, Person] | None = None) -> Routed:
        """A reply to ``env`` outside its game's stream, on these channels."""
        envelope = EventEnvelope(
            message_id=f"{kind}:{env.message_id}", game_id=env.game_id, seq=0, occurred_at=utcnow(),
            audience=audience, caused_by=env.message_id, readers=readers, people=people or {}, event=body)
        return envelope, channels

    def rejection(self, env: CommandEnvelope, reason, params: dict, message: str) -> Routed:
        """To the actor alone, on their channel and the command's: ``env`` changed nothing, and why. The
        scheduler's own stale messages get no reply."""
        body = CommandRejected(command_type=env.command.type, reason=reason,
                               params={k: getattr(v, "value", v) for k, v in params.items()}, message=message)
        channels = () if env.actor.startswith("@") else self.router.to(env.actor, via=env.channel)
        return self.reply(env, "rejected", body, audience_model(Audience.to(env.actor)), channels)
