"""The message protocol: every command and event on the bus, versioned and typed.

One source of truth: the bodies are generated from the rules core's own
command and event dataclasses (plus a few service-level messages), so the
protocol cannot drift from the engine. Two envelopes carry them:

- ``CommandEnvelope``: a gateway (or the scheduler) asks the engine to act.
  ``message_id`` makes handling idempotent; ``phase_id`` is the phase the
  actor saw, so a stale button press is refused instead of applied later.
- ``EventEnvelope``: the engine tells what happened, with its audience and a
  per-game sequence number ``seq`` (one ordered stream per game). ``readers``
  says who reads it (for a public event: the game's players at that moment), and
  ``people`` names them (``Person``) on the events that change who is at the table,
  so a gateway can name a player of another channel.

``avalon schema`` prints the JSON Schema of both.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import typing
import uuid
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from avalon.shared.channels import CHANNEL_NAME
from avalon.shared.game import commands as core_commands
from avalon.shared.game import events as core_events
from avalon.shared.game.errors import Reason
from avalon.shared.game.events import AudienceKind
from avalon.shared.game.model import Card, CommandKind, Phase
from avalon.shared.languages import LOCALES
from avalon.shared.protocol_board import BoardShown, QuestLine  # noqa: F401 - the protocol's names
from avalon.shared.protocol_records import RECORD_COMMANDS, RECORD_EVENTS

PROTOCOL_VERSION = 1
#: A channel's name (``telegram``, ``email``, ``scheduler``): short and lower-case. Which channels
#: there are is the composition root's to say (shared/channels.py); the engine refuses a command on a
#: channel it does not know.
ChannelName = Annotated[str, Field(pattern=CHANNEL_NAME)]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _body_model(cls: type, skip: set[str], base: type[BaseModel] = Body) -> type[BaseModel]:
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {"type": (Literal[snake(cls.__name__)], snake(cls.__name__))}
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = Field(default_factory=f.default_factory)  # type: ignore[misc]
        else:
            default = ...
        fields[f.name] = (hints[f.name], default)
    model = create_model(cls.__name__, __base__=base, __doc__=cls.__doc__, **fields)
    model.core = cls  # type: ignore[attr-defined]
    return model


# -- commands ---------------------------------------------------------------

_CORE_COMMANDS = [
    core_commands.CreateGame, core_commands.Join, core_commands.Leave, core_commands.ChangeOptions,
    core_commands.StartGame, core_commands.CancelGame, core_commands.ProposeTeam, core_commands.CastVote,
    core_commands.PlayCard, core_commands.UseExcalibur, core_commands.UseLady, core_commands.Confer,
    core_commands.HandShot, core_commands.Accuse, core_commands.SpeakLastWord, core_commands.Assassinate,
    core_commands.PhaseTimedOut,
    core_commands.OpenSeat, core_commands.TakeSeat, core_commands.PauseGame, core_commands.ResumeGame,
    core_commands.VoidGame, core_commands.AnnounceAbsence, core_commands.PassHost, core_commands.RemovePlayer,
    core_commands.Watch, core_commands.Unwatch,
]
# actor and phase_id travel in the envelope; the engine draws a game's seed itself, and the time left of
# a paused phase (pause_game's seconds_left) is the engine's clock's to say
COMMAND_MODELS: dict[str, type[BaseModel]] = {
    snake(c.__name__): _body_model(c, {"actor", "phase_id", "seed", "game_id", "seconds_left"})
    for c in _CORE_COMMANDS
}


class RemindPhase(Body):
    """From the scheduler: remind the players a phase's deadline is near."""

    type: Literal["remind_phase"] = "remind_phase"
    seconds_left: int


#: Where a person can be reached on a channel: a chat id, an email address.
Address = Annotated[str, Field(min_length=1, max_length=254)]
#: The fields an older gateway names an address by, and their channels (protocol version 1 keeps them).
ADDRESS_FIELDS = {"telegram_chat_id": "telegram", "email": "email"}


class UpdateProfile(Body):
    """A person's name, language, time zone and where they can be reached: ``addresses``, channel ->
    their address there. ``telegram_chat_id`` and ``email`` are the older way to give two of those
    (``addresses["telegram"]``, ``addresses["email"]``), still taken."""

    type: Literal["update_profile"] = "update_profile"
    display_name: str | None = Field(default=None, max_length=64)
    language: str | None = Field(default=None, pattern=rf"^({'|'.join(LOCALES)})$")
    addresses: dict[ChannelName, Address] = Field(default_factory=dict, max_length=16)
    telegram_chat_id: int | None = None
    email: str | None = Field(default=None, max_length=254)
    time_zone: str | None = Field(default=None, max_length=64)

    def all_addresses(self) -> dict[str, str]:
        """Every address it gives, the older fields folded in (``addresses`` says last where both do)."""
        older = {channel: str(value) for name, channel in ADDRESS_FIELDS.items()
                 if (value := getattr(self, name)) is not None and value != ""}
        return {**older, **self.addresses}


class ShowBoard(Body):
    """Anyone may ask for the board: the engine answers them alone with ``board_shown``."""

    type: Literal["show_board"] = "show_board"


class ShowRole(Body):
    """A seated player asks for their role card again: the engine answers them alone with
    ``role_assigned`` (what they were dealt and learned in the night), outside the game's stream."""

    type: Literal["show_role"] = "show_role"


class ShowChoices(Body):
    """A player asks again for what is open for them (they were unreachable when it was offered): the
    engine answers them alone with ``choices_offered`` for the open phase, outside the game's stream;
    nothing when nothing waits for them."""

    type: Literal["show_choices"] = "show_choices"


_ADDRESS = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")


def plausible_address(address: str) -> bool:
    """An email address as far as a gateway can tell: one @, a dot in the domain, no spaces, at most
    254 characters. ``mail:`` and the lower-cased address is an email player's id."""
    return len(address) <= 254 and _ADDRESS.fullmatch(address) is not None


class Invite(Body):
    """The host seats someone of another channel: the engine answers ``player_invited`` (their gateway
    invites them; they join with ``join``, or take the open seat named by ``seat`` with ``take_seat``).
    ``player`` is ``mail:`` and a lower-cased address."""

    type: Literal["invite"] = "invite"
    player: str = Field(max_length=254 + 5)
    table: str = Field("", max_length=128)  # the table's name where it has one (a Telegram group's title)
    #: in a game under way: the player whose open seat is offered (they take it with ``take_seat``)
    seat: str = Field("", max_length=254 + 5)


SERVICE_COMMANDS: dict[str, type[BaseModel]] = {"remind_phase": RemindPhase, "update_profile": UpdateProfile,
                                                "show_board": ShowBoard, "invite": Invite, "show_role": ShowRole,
                                                "show_choices": ShowChoices, **RECORD_COMMANDS}
ALL_COMMANDS = {**COMMAND_MODELS, **SERVICE_COMMANDS}

CommandBody = Annotated[Union[tuple(ALL_COMMANDS.values())], Field(discriminator="type")]  # type: ignore[valid-type]


class CommandEnvelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = PROTOCOL_VERSION
    message_id: str = Field(default_factory=lambda: str(uuid.uuid4()), min_length=1, max_length=200)
    game_id: str = Field(min_length=1, max_length=200)
    actor: str = Field(min_length=1, max_length=200)
    channel: ChannelName = "test"
    sent_at: datetime = Field(default_factory=utcnow)
    phase_id: int | None = None
    command: CommandBody


# -- events ---------------------------------------------------------------------

_CORE_EVENTS = [
    cls for cls in vars(core_events).values()
    if isinstance(cls, type) and issubclass(cls, core_events.Event) and cls is not core_events.Event
]
EVENT_MODELS: dict[str, type[BaseModel]] = {snake(c.__name__): _body_model(c, {"audience"}) for c in _CORE_EVENTS}
#: Events the engine keeps for itself (the seed, the deal): persisted, never published.
INTERNAL_EVENTS = frozenset(snake(c.__name__) for c in (core_events.GameCreated, core_events.Dealt,
                                                         core_events.MissedCardsCounted))


class CommandRejected(Body):
    """To the actor alone: the command changed nothing, and why."""

    type: Literal["command_rejected"] = "command_rejected"
    command_type: str | None
    reason: Reason | Literal["malformed", "unknown_game", "unknown_person", "hidden_stats"]
    params: dict[str, Any] = Field(default_factory=dict)
    message: str


class Choice(Body):
    """One command a player may send now (from the rules core's ``legal_commands``)."""

    kind: CommandKind
    targets: tuple[str, ...] = ()
    count: int = 0
    cards: tuple[Card, ...] = ()
    excalibur: bool = False
    optional: bool = False


class ChoicesOffered(Body):
    """To one player: what they may do in the phase that just opened (their buttons)."""

    type: Literal["choices_offered"] = "choices_offered"
    player: str
    phase: Phase
    phase_id: int
    choices: tuple[Choice, ...]


class PhaseReminder(Body):
    type: Literal["phase_reminder"] = "phase_reminder"
    phase: Phase
    phase_id: int
    seconds_left: int
    waiting_for: tuple[str, ...]


class ProfileUpdated(Body):
    type: Literal["profile_updated"] = "profile_updated"
    player: str
    display_name: str | None
    language: str | None


class PlayerInvited(Body):
    """To the host and the invitee: ``by`` invited ``player`` to the lobby (not yet seated), or to take
    ``seat``'s open seat in a game under way."""

    type: Literal["player_invited"] = "player_invited"
    by: str
    player: str
    table: str = ""  # the table's name as the host's channel knows it (a Telegram group's title), or ""
    #: "" for the lobby; in a game under way, the player whose open seat ``player`` is offered
    seat: str = ""


SERVICE_EVENTS: dict[str, type[BaseModel]] = {
    "command_rejected": CommandRejected, "phase_reminder": PhaseReminder, "profile_updated": ProfileUpdated,
    "choices_offered": ChoicesOffered, "board_shown": BoardShown, "player_invited": PlayerInvited,
    **RECORD_EVENTS,
}
ALL_EVENTS = {**EVENT_MODELS, **SERVICE_EVENTS}
EventBody = Annotated[Union[tuple(ALL_EVENTS.values())], Field(discriminator="type")]  # type: ignore[valid-type]


class AudienceModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: AudienceKind
    players: tuple[str, ...] = ()


class Person(BaseModel):
    """What the engine knows of a player (from ``update_profile``): how to name them, in which
    language and time zone. Null where they never said."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    display_name: str | None = None
    language: str | None = None
    time_zone: str | None = None


class EventEnvelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = PROTOCOL_VERSION
    message_id: str
    game_id: str
    seq: int  # per game, from 1; the engine's own records take numbers too (see prev_seq)
    occurred_at: datetime
    audience: AudienceModel
    caused_by: str | None = None  # the command's message_id
    deadline_at: datetime | None = None  # with phase_opened: when the phase times out
    #: every player who reads it: a public event's are the game's players at that moment (with the one
    #: who left, for player_left; the host, for lobby_opened), a private event's its audience; empty for
    #: a reply outside the game's stream (seq 0), whose audience says it (player_invited: its audience)
    readers: tuple[str, ...] = ()
    #: reader -> what the engine knows of them, on lobby_opened, player_joined, player_left,
    #: game_started and player_invited (every reader) and profile_updated (that person); empty on the others
    people: dict[str, Person] = Field(default_factory=dict)
    #: channel -> the seq of this game's previous event sent to that channel (0: none before), for
    #: each channel this event is sent to: a gateway that handled every event sent to it has handled
    #: prev_seq[its channel]; anything else is a lost event. Empty for a reply outside the stream.
    prev_seq: dict[str, int] = Field(default_factory=dict)
    event: EventBody


# -- conversions ------------------------------------------------------------------

def to_core_command(env: CommandEnvelope, seed: int = 0) -> core_commands.Command:
    body = env.command
    cls = body.core  # type: ignore[attr-defined]
    data = {name: getattr(body, name) for name in type(body).model_fields if name != "type"}
    data["actor"] = env.actor
    if cls is core_commands.PhaseTimedOut:
        data["phase_id"] = env.phase_id if env.phase_id is not None else -1
    else:
        data["phase_id"] = env.phase_id
    if cls is core_commands.CreateGame:
        data["game_id"] = env.game_id
        data["seed"] = seed
    return cls(**data)


def from_core_command(command: core_commands.Command, game_id: str, *, channel: str = "test",
                      message_id: str | None = None) -> CommandEnvelope:
    """A core command as a gateway would send it (the seed is the engine's to draw)."""
    model = COMMAND_MODELS[snake(type(command).__name__)]
    body = model(**{name: getattr(command, name) for name in model.model_fields if name != "type"})
    extra = {"message_id": message_id} if message_id else {}
    return CommandEnvelope(game_id=game_id, actor=command.actor, channel=channel, phase_id=command.phase_id,
                           command=body, **extra)


def event_body(event: core_events.Event) -> BaseModel:
    model, names = _event_model_of(type(event))
    return model(**{name: getattr(event, name) for name in names})


@functools.cache
def _event_model_of(cls: type) -> tuple[type[BaseModel], tuple[str, ...]]:
    model = EVENT_MODELS[snake(cls.__name__)]
    return model, tuple(name for name in model.model_fields if name != "type")


def to_core_event(body: BaseModel, audience: "AudienceModel | None" = None) -> core_events.Event:
    """Back from the wire (or the event log) to the core's event, for replay."""
    cls = body.core  # type: ignore[attr-defined]
    data = {name: getattr(body, name) for name in type(body).model_fields if name != "type"}
    if audience is not None:
        data["audience"] = core_events.Audience(audience.kind, audience.players)
    return cls(**data)


@functools.lru_cache(maxsize=65536)
def audience_model(audience: core_events.Audience) -> AudienceModel:
    """The wire form of an audience (immutable, so one instance serves every event with it)."""
    return AudienceModel(kind=audience.kind, players=audience.players)


def json_schema() -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Avalon narrator message protocol",
        "version": PROTOCOL_VERSION,
        "command": CommandEnvelope.model_json_schema(),
        "event": EventEnvelope.model_json_schema(),
    }
