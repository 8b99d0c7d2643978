"""Sender trust: which commands the engine believes, and from whom.

A delivered body becomes a command only if it is one (the protocol's schema), holds no NUL
character (no database column takes it), came on a channel the engine knows (the composition root's,
or the scheduler's) and its sender may have sent it: a gateway's channel speaks only for that
channel's players, and a gateway's broker user only for its own channel. What fails is
dead-lettered (``PoisonMessage``). A deadline or a reminder is believed only from the scheduler, and
only when the engine's own clock agrees (``scheduler_may``); otherwise it changes nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from pydantic import ValidationError

from avalon.shared import ops
from avalon.shared.bus import PoisonMessage
from avalon.shared.channels import ChannelMap
from avalon.shared.game.commands import SCHEDULER
from avalon.shared.protocol import CommandEnvelope

from .deadlines import SCHEDULER_CHANNEL
from .store import LoadedGame

log = logging.getLogger(__name__)

#: How early the scheduler's timer may fire, by this engine's clock (APScheduler's own jitter)
TIMER_EARLY = timedelta(seconds=2)
#: How much longer than it says a reminder may come before the deadline (a reminder sent late by a
#: scheduler that was stopped says less time is left than there is, never more)
REMINDER_SLACK = timedelta(seconds=30)
#: The commands only the scheduler sends.
SCHEDULER_COMMANDS = frozenset({"phase_timed_out", "remind_phase"})

_DEAD_COMMANDS = ops.DEAD_MESSAGES.labels(service="engine", channel="commands")


class SenderTrust:
    """Whether a command may be believed as sent, given the channels and the bus's user prefix."""

    def __init__(self, channels: ChannelMap, prefix: str | None) -> None:
        self.channels = channels
        self.prefix = prefix  # the bus's: its broker users are ``<prefix>-<role>``

    def admit(self, body: bytes, sender: str | None) -> CommandEnvelope:
        """The command in a delivered body, as published by ``sender`` (the broker user RabbitMQ
        verified, if any); raises PoisonMessage (dead-letter it) for anything not to be believed."""
        try:
            envelope = CommandEnvelope.model_validate_json(body)
        except ValidationError as error:
            # without the input: a 10 MB field would be a 10 MB log line
            log.warning("malformed command dead-lettered: %s",
                        error.errors(include_input=False, include_url=False)[:3])
            _DEAD_COMMANDS.inc()
            raise PoisonMessage(str(error)) from error
        if b"\\u0000" in body and _holds_nul(envelope.model_dump()):
            log.warning("command %s dead-lettered: a NUL character, which no database column takes",
                        envelope.message_id.replace("\x00", "\\0"))
            _DEAD_COMMANDS.inc()
            raise PoisonMessage("a NUL character in the command")
        if not self._knows(envelope.channel):
            log.warning("command %s dead-lettered: channel %r is none the engine knows", envelope.message_id,
                        envelope.channel)
            _DEAD_COMMANDS.inc()
            raise PoisonMessage(f"unknown channel {envelope.channel!r}")
        forged = self._foreign_player(envelope) or self._not_sent_by(envelope, sender)
        if forged:
            log.warning("command %s dead-lettered: %s", envelope.message_id, forged)
            _DEAD_COMMANDS.inc()
            raise PoisonMessage(forged)
        return envelope

    def _knows(self, channel: str) -> bool:
        return channel == SCHEDULER_CHANNEL or self.channels.knows(channel)

    def _foreign_player(self, env: CommandEnvelope) -> str | None:
        """Whoever sent it, a gateway's channel speaks only for that channel's players: no gateway sends
        a command for a player of another channel (``tg:1`` on the email channel)."""
        gateways = self.channels.gateways
        claimed = self.channels.channel_of(env.actor)
        if env.channel in gateways and claimed in gateways and claimed != env.channel:
            return f"actor {env.actor[:60]!r} is no {env.channel} player, claimed on the {env.channel} channel"
        return None

    def _not_sent_by(self, env: CommandEnvelope, sender: str | None) -> str | None:
        """Why ``sender`` may not have sent it. A gateway's own user (``<prefix>-telegram``, see
        services/broker_users.py) speaks only for its own channel and its own channel's players: the
        Telegram gateway cannot act as a mail player, or as the scheduler. The engine's user may send
        anything (the scheduler is in it); any other user (guest, an admin: a development broker) is
        trusted as before."""
        prefix = self.prefix
        if not sender or not prefix or not sender.startswith(prefix + "-"):
            return None
        role = sender[len(prefix) + 1:]
        if role == "engine":
            return None
        if env.channel != role:
            return f"channel {env.channel!r} claimed by the {role} gateway's broker user {sender!r}"
        if self.channels.channel_of(env.actor) != role:
            return f"actor {env.actor[:60]!r} is no {role} player, claimed by broker user {sender!r}"
        return None

    @staticmethod
    def scheduler_may(env: CommandEnvelope, loaded: LoadedGame | None, now: datetime) -> bool:
        """A deadline or a reminder is believed only from the scheduler, and only when this engine's own
        clock agrees: a timeout once the open phase's deadline has passed, a reminder before it and
        no earlier than it says. Anything else (a gateway claiming to be the scheduler, a forged early
        timeout) changes nothing. A command for a phase that is over is left to the rules (ignored)."""
        if env.actor != SCHEDULER or env.channel != SCHEDULER_CHANNEL:
            return False
        if loaded is None or env.phase_id != loaded.state.phase_id or loaded.state.over:
            return True  # stale or unknown: the rules and the reminder ignore it anyway
        deadline = loaded.deadline_at
        if deadline is None:
            return False
        if env.command.type == "phase_timed_out":
            return deadline <= now + TIMER_EARLY
        return now < deadline <= now + timedelta(seconds=env.command.seconds_left) + REMINDER_SLACK


def _holds_nul(value) -> bool:
    """Whether a NUL character is anywhere in a command (PostgreSQL refuses it in every text column)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds_nul(v) for v in value)
    return False
