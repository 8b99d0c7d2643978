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
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from avalon.services.engine.rules import Options, Rejection, apply
from avalon.shared.game import commands as cmd
from avalon.services.engine.rules.endgame import MAX_TEXT
from avalon.shared.game.errors import Reason
from avalon.shared.game.events import Audience
from avalon.shared.game.model import Phase
from avalon.shared.narration.render import LOCALES, Context, Narrator, Recipient, reasons
from avalon.shared.protocol import CommandRejected, EventEnvelope, audience_model, utcnow

from .bad_command_kit import SHOT, STOPS, build, commands, games, is_legal, names

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


FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.data_too_large])


@pytest.mark.parametrize("stop", STOPS, ids=lambda p: getattr(p, "value", "new"))
@FAST
@given(data=st.data())
def test_an_illegal_command_at_any_moment_is_refused_with_a_reason_and_changes_nothing(stop, data):
    state = data.draw(games(stop))
    before = copy.deepcopy(state)
    for _ in range(10):
        command = data.draw(commands(state))
        result = apply(state, command)
        assert state == before, f"{command!r} changed the state it was applied to"
        if not is_legal(state, command):
            assert isinstance(result, Rejection), f"illegal {command!r} was accepted in {state.phase}"
        if isinstance(result, Rejection):  # illegal, or legal but refused (a full lobby, impossible settings)
            assert_sayable(result, command.actor)


@FAST
@given(data=st.data())
def test_a_deadline_for_a_phase_that_is_over_or_never_opened_changes_nothing(data):
    state = data.draw(games(data.draw(st.sampled_from(STOPS))))
    before = copy.deepcopy(state)
    phase_id = data.draw(st.sampled_from((state.phase_id - 1, state.phase_id + 1, -1, 2**63)))
    result = apply(state, cmd.PhaseTimedOut(phase_id=phase_id))
    assert state == before
    if isinstance(result, Rejection):
        assert result.reason is Reason.GAME_NOT_CREATED and state.phase is None
    else:
        assert result.events == () and result.state == before
    if state.phase in (Phase.LOBBY, Phase.ENDED, Phase.CANCELLED):  # no deadline runs here
        result = apply(state, cmd.PhaseTimedOut(phase_id=state.phase_id))
        assert result.events == () and result.state == before


@FAST
@given(data=st.data())
def test_only_the_scheduler_says_a_deadline_passed_and_the_scheduler_plays_no_move(data):
    state = data.draw(games(data.draw(st.sampled_from(STOPS[2:-2]))))
    before = copy.deepcopy(state)
    # anyone but the scheduler (whose own timeout is legal: drawn names may hit its id)
    player = data.draw((st.sampled_from(state.players) | names(state)).filter(lambda p: p != cmd.SCHEDULER))
    result = apply(state, cmd.PhaseTimedOut(actor=player, phase_id=state.phase_id))
    assert isinstance(result, Rejection) and result.reason is Reason.NOT_YOUR_TURN, player
    command = data.draw(commands(state).filter(lambda c: type(c) is not cmd.PhaseTimedOut))
    result = apply(state, replace(command, actor=cmd.SCHEDULER))
    assert isinstance(result, Rejection), command
    assert_sayable(result, cmd.SCHEDULER)
    assert state == before


@pytest.mark.parametrize("text", ["", " \n\t ", "\u200f", "\u200b\u2060\ufeff", "\x00", "\x1f\x7f",
                                  "a" * (MAX_TEXT + 1), "b" * 100_000, " " * 5000 + "a" * (MAX_TEXT + 1)],
                         ids=["empty", "spaces", "rtl-mark", "zero-width", "nul", "controls", "one-too-long",
                              "100k", "padded-too-long"])
def test_a_word_in_the_council_or_a_last_word_that_shows_nothing_or_is_too_long_is_refused(text):
    state = build(7, Options(last_word=True), 3, Phase.LAST_WORD, lucky=True)
    assert state.phase is Phase.LAST_WORD
    accused, council = state.players[state.accused], [p for p in state.players if p in evil_of(state)]
    for command in [cmd.SpeakLastWord(actor=accused, text=text), *(cmd.Confer(actor=p, text=text) for p in council)]:
        result = apply(state, command)
        assert isinstance(result, Rejection), command
        assert result.reason in (Reason.EMPTY_MESSAGE, Reason.MESSAGE_TOO_LONG)
    said = apply(state, cmd.SpeakLastWord(actor=accused, text="\u200fمن مرلین نیستم " + text[:MAX_TEXT - 20]))
    assert not isinstance(said, Rejection), "a real sentence with the same marks is spoken"


def evil_of(state) -> set[str]:
    return {state.players[i] for i in state.evil_seats()}


@pytest.mark.parametrize("stop", [s for s in STOPS if s is not None], ids=lambda p: p.value)
def test_the_games_drawn_above_reach_every_phase(stop):
    """The property above means something only if the games it draws stand in every phase."""
    options = Options(lady=True, excalibur=True, last_word=True)
    reached = {build(players, options, seed, stop, lucky=stop in SHOT).phase
               for players in (5, 8, 10) for seed in range(4)}
    assert stop in reached
