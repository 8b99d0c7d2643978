"""Bad input changes nothing: any command the rules do not allow, from any reachable moment of a game.

Hypothesis draws a game (preset, 5-10 players, Lady, Excalibur, a Lancelot variant, the house rules)
and plays it some random way to any phase, then throws commands at it: the wrong phase, the wrong
player, ids that are not in the game, buttons of an earlier or a later phase, teams of the wrong size
or with a player twice, targets outside the game, texts from empty to 100,000 characters in any script
(right-to-left marks, NUL, lone surrogates), the scheduler's name in a player's command and a player's
name in the scheduler's. ``legal_commands`` (what the gateways draw their buttons from) tells a legal
command from an illegal one; every illegal one must be refused with a reason every locale can say,
and must leave the game exactly as it was. Legal ones may be accepted (and no command may change the
state it was applied to: the core is pure).

Commands here have the core's types (a card is a ``Card``, a vote a bool): what cannot even be
parsed is the bus's business (tests/integration/test_bus_garbage.py).
"""

from __future__ import annotations

import copy
import random
from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from services.engine.rules import Accepted, CreateGame, Join, Options, Rejection, apply, legal_commands, new_game
from services.engine.rules import commands as cmd
from services.engine.rules.endgame import MAX_TEXT
from services.engine.rules.model import Card, CommandKind, Lancelot, Phase, Role
from services.engine.simulate import random_command, setup
from shared.narration.render import LOCALES, Context, Narrator, Recipient, reasons
from shared.protocol import CommandRejected, EventEnvelope, audience_model, utcnow
from services.engine.rules.events import Audience

K = CommandKind
PRESETS = ("classic", "online", "forum")
#: where a drawn game stops: the first time it reaches this phase (or its end, if it never does)
STOPS = (None, Phase.LOBBY, Phase.PROPOSAL, Phase.VOTE, Phase.QUEST, Phase.EXCALIBUR, Phase.LADY,
         Phase.ASSASSINATION, Phase.LAST_WORD, Phase.ENDED, Phase.CANCELLED)
ODD_TEXTS = (
    "", " ", "\n\t ", "\x00", "a\x00b", "\u200f", "\u200f\u202e\u2066", "\ufeff", "\ud800", "x\udfffy",
    "سلام \u200fدوستان", "Привет", "Tiếng Việt", "💀" * 300, "a" * MAX_TEXT, "a" * (MAX_TEXT + 1),
    " " * 5000 + "a", "b" * 100_000,
)
ODD_IDS = ("", " ", "ghost", "p0", "p11", "P1", "p1 ", "\u200fp1", "p1\x00", "\ud800", "@scheduler", "@", "@p1",
           "tg:42", "mail:x@example.org", "x" * 200, "x" * 201, "y" * 10_000)


# -- a reachable game -------------------------------------------------------------------------------

@st.composite
def games(draw):
    """A game at a drawn moment: not created, in the lobby, in any phase of play, ended or cancelled."""
    preset = draw(st.sampled_from(PRESETS))
    players = draw(st.integers(5, 10))
    options = Options.preset_defaults(
        preset, lady=draw(st.booleans()), excalibur=draw(st.booleans()), lancelot=draw(st.sampled_from(Lancelot)),
        last_word=draw(st.booleans()), assassin_may_delegate=draw(st.booleans()),
        good_may_fail=draw(st.booleans()), close_early=draw(st.booleans()),
        anonymous_votes=draw(st.booleans()))
    seed = draw(st.integers(0, 2**32))
    stop = draw(st.sampled_from(STOPS))
    return build(players, options, seed, stop, lucky=draw(st.booleans()), timeouts=draw(st.sampled_from((0, .1))))


def build(players: int, options: Options, seed: int, stop: Phase | None, *, lucky: bool, timeouts: float):
    """Play a random game until ``stop`` opens (``lucky``: quests mostly succeed, so the shot comes)."""
    if stop is None:
        return new_game()
    if stop is Phase.LOBBY:
        state = apply(new_game(), CreateGame(actor="p1", game_id="g", seed=seed, options=options)).state
        for i in range(2, 2 + seed % players):
            state = apply(state, Join(actor=f"p{i}")).state
        return state
    state = setup(players, options, seed).state
    rng = random.Random(seed)
    if stop is Phase.CANCELLED:
        return apply(state, cmd.CancelGame(actor=state.host)).state
    for _ in range(3000):
        if state.phase is stop or state.over:
            return state
        command = random_command(state, rng, timeouts)
        if lucky and type(command) is cmd.PlayCard and Card.SUCCESS in legal_of(state, command).cards:
            command = replace(command, card=Card.SUCCESS)
        if lucky and type(command) is cmd.CastVote:
            command = replace(command, approve=True)
        state = apply(state, command).state
    raise AssertionError("a random game did not end")


# -- any command ------------------------------------------------------------------------------------

def texts():
    return st.one_of(st.sampled_from(ODD_TEXTS), st.text(max_size=50),
                     st.text(st.characters(codec=None, exclude_categories=()), max_size=50))


def names(state):
    known = list(state.players) or ["p1"]
    return st.one_of(st.sampled_from(known), st.sampled_from(ODD_IDS), st.text(max_size=12))


def option_sets():
    roles = st.none() | st.lists(st.sampled_from(Role), max_size=6).map(tuple)
    return st.builds(lambda preset, most, roles, seconds, lancelot: replace(
        Options.preset_defaults(preset, max_players=most, roles=roles, lancelot=lancelot),
        timers=replace(Options().timers, vote=seconds)),
        st.sampled_from(PRESETS), st.integers(0, 15), roles, st.sampled_from((-1, 0, 30, 300, 10**8)),
        st.sampled_from(Lancelot))


@st.composite
def commands(draw, state):
    actor = draw(st.one_of(names(state), st.just(state.host or "p1"), st.just(cmd.SCHEDULER)))
    phase_id = draw(st.sampled_from((None, state.phase_id, state.phase_id - 1, state.phase_id + 1, -1, 2**63)))
    who = names(state)
    kind = draw(st.sampled_from(sorted(K, key=lambda k: k.value)))
    fields = {
        K.CREATE_GAME: lambda: cmd.CreateGame(game_id=draw(texts()), seed=draw(st.integers(0, 2**63)),
                                              options=draw(option_sets()), actor=actor),
        K.CHANGE_OPTIONS: lambda: cmd.ChangeOptions(options=draw(option_sets()), actor=actor),
        K.PROPOSE_TEAM: lambda: cmd.ProposeTeam(team=tuple(draw(st.lists(who, max_size=12))),
                                                excalibur=draw(st.none() | who), actor=actor),
        K.CAST_VOTE: lambda: cmd.CastVote(approve=draw(st.booleans()), actor=actor),
        K.PLAY_CARD: lambda: cmd.PlayCard(card=draw(st.sampled_from(Card)), actor=actor),
        K.USE_EXCALIBUR: lambda: cmd.UseExcalibur(target=draw(st.none() | who), actor=actor),
        K.USE_LADY: lambda: cmd.UseLady(target=draw(who), actor=actor),
        K.CONFER: lambda: cmd.Confer(text=draw(texts()), actor=actor),
        K.HAND_SHOT: lambda: cmd.HandShot(to=draw(who), actor=actor),
        K.ACCUSE: lambda: cmd.Accuse(target=draw(who), actor=actor),
        K.SPEAK_LAST_WORD: lambda: cmd.SpeakLastWord(text=draw(texts()), actor=actor),
        K.ASSASSINATE: lambda: cmd.Assassinate(target=draw(who), actor=actor),
    }
    simple = {K.JOIN: cmd.Join, K.LEAVE: cmd.Leave, K.START_GAME: cmd.StartGame, K.CANCEL_GAME: cmd.CancelGame}
    if kind is K.PHASE_TIMED_OUT:
        command = cmd.PhaseTimedOut(actor=actor, phase_id=phase_id if phase_id is not None else state.phase_id)
        return command
    command = fields[kind]() if kind in fields else simple[kind](actor=actor)
    return replace(command, phase_id=phase_id)


# -- the oracle: legal_commands ------------------------------------------------------------------

def legal_of(state, command):
    return next((c for c in legal_commands(state, command.actor) if c.kind is command.kind), None)


def is_legal(state, command) -> bool:
    """Whether the buttons a gateway draws from ``legal_commands`` offer exactly this command now."""
    if type(command) is cmd.PhaseTimedOut:
        return command.actor == cmd.SCHEDULER  # the scheduler's own; whether it acts: the next test
    if command.actor == cmd.SCHEDULER:
        return False
    if type(command) is cmd.CreateGame:
        return state.phase is None
    if command.phase_id is not None and command.phase_id != state.phase_id:
        return False  # a button of another phase
    legal = legal_of(state, command)
    if legal is None:
        return False
    if type(command) is cmd.ProposeTeam:
        team = command.team
        if len(team) != legal.count or len(set(team)) != len(team) or not set(team) <= set(legal.targets):
            return False
        if legal.excalibur:
            return command.excalibur in team and command.excalibur != command.actor
        return command.excalibur is None
    if type(command) is cmd.PlayCard:
        return command.card in legal.cards
    if type(command) is cmd.UseExcalibur:
        return command.target is None or command.target in legal.targets
    if type(command) in (cmd.UseLady, cmd.Accuse, cmd.Assassinate):
        return command.target in legal.targets
    if type(command) is cmd.HandShot:
        return command.to in legal.targets
    if type(command) in (cmd.Confer, cmd.SpeakLastWord):
        return 0 < len(command.text.strip()) <= MAX_TEXT
    return True  # join, leave, settings, start, cancel, a vote: offered means allowed


# -- what a player is told -------------------------------------------------------------------------

narrator = Narrator()
_told: set = set()


def assert_sayable(rejection: Rejection, actor: str) -> None:
    """The refusal renders in every locale and channel, as the engine sends it (params on the wire)."""
    key = rejection.reason.value
    for locale in LOCALES:
        assert key in reasons(locale), f"{locale}/reasons.toml has no sentence for {key}"
    assert rejection.message  # the English line for logs and the command line
    params = {k: getattr(v, "value", v) for k, v in rejection.params.items()}
    shape = (key, tuple(sorted((k, v if k == "phase" else type(v).__name__) for k, v in params.items())))
    if shape in _told:  # one rendering per reason and kind of parameters keeps the file fast
        return
    body = CommandRejected(command_type=None, reason=rejection.reason, params=params, message=rejection.message)
    envelope = EventEnvelope(message_id="m", game_id="g", seq=0, occurred_at=utcnow(),
                             audience=audience_model(Audience.to(actor or "x")), event=body)
    for locale in LOCALES:
        for channel in ("telegram", "email"):
            text = narrator.render_in(locale, envelope, Recipient(actor, (locale,)), channel, Context()).text
            assert len(text.strip("⚠️ ")) > 1, f"{locale}/{channel}: {key} says nothing"
    _told.add(shape)


FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.data_too_large])


@FAST
@given(games(), st.data())
def test_an_illegal_command_at_any_moment_is_refused_with_a_reason_and_changes_nothing(state, data):
    before = copy.deepcopy(state)
    for _ in range(8):
        command = data.draw(commands(state))
        result = apply(state, command)
        assert state == before, f"{command!r} changed the state it was applied to"
        if is_legal(state, command):
            continue
        assert isinstance(result, Rejection), f"illegal {command!r} was accepted in {state.phase}"
        assert_sayable(result, command.actor)
