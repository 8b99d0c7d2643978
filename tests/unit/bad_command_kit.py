"""Games at any moment, and commands that nearly fit them: the material of test_bad_commands.py.

``games(stop)`` draws a game standing in phase ``stop``; ``commands(state)`` draws a command for it,
mostly a near miss of a legal one; ``is_legal`` says whether ``legal_commands`` (the gateways'
buttons) offers exactly that command now.
"""

from __future__ import annotations

import random
import unicodedata
from dataclasses import replace

from hypothesis import strategies as st

from avalon.services.engine.rules import CreateGame, Join, Options, apply, legal_commands, new_game
from avalon.shared.game import commands as cmd
from avalon.services.engine.rules.endgame import MAX_TEXT
from avalon.services.engine.rules.legal import ACCEPTS, table_commands
from avalon.shared.game.model import TABLE_KINDS, Card, CommandKind, Lancelot, Phase, Role
from avalon.services.engine.simulate import random_command, random_table_command, setup

K = CommandKind
PRESETS = ("classic", "online", "forum")
#: where a drawn game stops: the first time it reaches this phase (or its end, if it never does)
STOPS = (None, Phase.LOBBY, Phase.PROPOSAL, Phase.VOTE, Phase.QUEST, Phase.EXCALIBUR, Phase.LADY,
         Phase.ASSASSINATION, Phase.LAST_WORD, Phase.ENDED, Phase.CANCELLED)
SHOT = (Phase.ASSASSINATION, Phase.LAST_WORD)
ODD_TEXTS = (
    "", " ", "\n\t ", "\x00", "a\x00b", "\u200f", "\u200f\u202e\u2066", "\ufeff", "\u200b\u2060", "\x1f\x7f",
    "\ud800", "x\udfffy",
    "سلام \u200fدوستان", "Привет", "Tiếng Việt", "💀" * 300, "a" * MAX_TEXT, "a" * (MAX_TEXT + 1),
    " " * 5000 + "a", "b" * 100_000,
)
ODD_IDS = ("", " ", "ghost", "p0", "p11", "P1", "p1 ", "\u200fp1", "p1\x00", "\ud800", "@scheduler", "@", "@p1",
           "tg:42", "mail:x@example.org", "x" * 200, "x" * 201, "y" * 10_000)


# -- a reachable game -------------------------------------------------------------------------------

@st.composite
def games(draw, stop: Phase | None):
    """A game at ``stop``: not created (None), in the lobby, in a phase of play, ended or cancelled."""
    options = Options.preset_defaults(
        draw(st.sampled_from(PRESETS)), lancelot=draw(st.sampled_from(Lancelot)),
        lady=stop is Phase.LADY or draw(st.booleans()), excalibur=stop is Phase.EXCALIBUR or draw(st.booleans()),
        last_word=stop is Phase.LAST_WORD or draw(st.booleans()), assassin_may_delegate=draw(st.booleans()),
        good_may_fail=draw(st.booleans()), close_early=draw(st.booleans()), anonymous_votes=draw(st.booleans()),
        spectators=draw(st.booleans()), excused_absences=draw(st.integers(0, 2)))
    return build(draw(st.integers(5, 10)), options, draw(st.integers(0, 2**32)), stop, skip=draw(st.integers(0, 3)),
                 linger=draw(st.integers(0, 6)), lucky=stop in SHOT or draw(st.booleans()),
                 timeouts=draw(st.sampled_from((0, .1))), table=draw(st.sampled_from((0, 0, .15))))


def build(players: int, options: Options, seed: int, stop: Phase | None, *, skip: int = 0, linger: int = 0,
          lucky: bool = False, timeouts: float = 0, table: float = 0):
    """A random game played until ``stop`` opens for the ``skip`` + 1st time (or the last time, or the
    end), then up to ``linger`` moves more inside that phase (some have voted, the shot was handed...);
    ``lucky``: the votes pass and the cards succeed, so the shot comes; ``table``: how often the people
    around the table act in between (seats opened and taken, a pause, spectators: never a void)."""
    if stop is None:
        return new_game()
    if stop is Phase.LOBBY:
        state = apply(new_game(), CreateGame(actor="p1", game_id="g", seed=seed, options=options)).state
        for i in range(2, 2 + seed % options.max_players):  # up to a full lobby
            state = apply(state, Join(actor=f"p{i}")).state
        return state
    state = setup(players, options, seed).state
    rng = random.Random(seed)
    if stop is Phase.CANCELLED:
        return apply(state, cmd.CancelGame(actor=state.host)).state
    seen = None  # the last time ``stop`` opened
    for _ in range(3000):
        if state.over:
            return seen or state
        if state.phase is stop and (seen is None or state.phase_id != seen.phase_id):
            seen, skip = state, skip - 1
            if skip < 0:
                break
        state = apply(state, move(state, rng, timeouts, lucky)).state
        if table and rng.random() < table or state.paused:
            churn = random_table_command(state, rng, rng.randrange(3))
            if churn is not None and type(churn) is not cmd.VoidGame:
                state = apply(state, churn).state
    else:
        raise AssertionError("a random game did not end")
    for _ in range(linger):
        after = apply(state, move(state, rng, 0, lucky)).state
        if after.phase_id != state.phase_id:
            break
        state = after
    if table and rng.random() < .3:  # and now and then the host has just paused the game
        paused = apply(state, cmd.PauseGame(actor=state.host, seconds_left=100))
        state = getattr(paused, "state", state)
    return state


def move(state, rng: random.Random, timeouts: float, lucky: bool):
    command = random_command(state, rng, timeouts)
    if lucky and type(command) is cmd.PlayCard and Card.SUCCESS in legal_of(state, command).cards:
        command = replace(command, card=Card.SUCCESS)
    if lucky and type(command) is cmd.CastVote:
        command = replace(command, approve=True)
    return command


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


def candidates(state) -> list[str]:
    """Who might press something: everyone seated, those replaced, spectators, and a newcomer."""
    return [*state.players, *state.former, *state.spectators, "newcomer"]


@st.composite
def commands(draw, state):
    """Mostly a near miss: what someone may do now, with one thing broken (the player, the phase the
    button belongs to, the scheduler's name) or with odd contents (a wrong team, an odd target or
    text, impossible settings); otherwise a command of this phase, or anything at all, from anyone."""
    mode = draw(st.sampled_from(("near", "near", "near", "phase", "any")))
    offered = [(p, legal) for p in candidates(state)
               for legal in (*legal_commands(state, p), *table_commands(state, p))
               if legal.kind is not K.CANCEL_GAME and (p != "newcomer" or state.phase is Phase.LOBBY
                                                         or legal.kind in TABLE_KINDS)]
    pool, size = state.players, 3
    if mode == "near" and offered:
        actor, legal = draw(st.sampled_from(offered))
        kind, pool, size = legal.kind, legal.targets or state.players, legal.count
    elif mode != "any" and ACCEPTS.get(state.phase) and state.players:
        actor = draw(st.sampled_from(state.players))
        kind = draw(st.sampled_from(sorted(ACCEPTS[state.phase], key=lambda k: k.value)))
    else:
        actor = draw(st.one_of(st.just(state.host or "p1"), names(state), st.just(cmd.SCHEDULER)))
        kind = draw(st.sampled_from(sorted(K, key=lambda k: k.value)))
    broken = draw(st.sampled_from(("contents",) * 4 + ("actor", "phase", "scheduler")))
    if broken == "actor":
        actor = draw(names(state))
    elif broken == "scheduler":
        actor = cmd.SCHEDULER
    now = state.phase_id
    phase_id = draw(st.sampled_from((now - 1, now + 1, -1, 2**63) if broken == "phase" else (None, now)))
    mine = st.sampled_from(pool) if pool else names(state)
    who = st.one_of(mine, mine, mine, names(state))
    team = st.one_of(st.permutations(pool).map(lambda p: p[:size]),
                     st.integers(max(size - 1, 0), size + 1).flatmap(lambda n: st.lists(who, min_size=n, max_size=n)),
                     st.lists(who, max_size=12))
    fields = {
        K.CREATE_GAME: lambda: cmd.CreateGame(game_id=draw(texts()), seed=draw(st.integers(0, 2**63)),
                                              options=draw(option_sets()), actor=actor),
        K.CHANGE_OPTIONS: lambda: cmd.ChangeOptions(options=draw(option_sets()), actor=actor),
        K.PROPOSE_TEAM: lambda: cmd.ProposeTeam(team=tuple(draw(team)),
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
        K.OPEN_SEAT: lambda: cmd.OpenSeat(player=draw(who), actor=actor),
        K.TAKE_SEAT: lambda: cmd.TakeSeat(player=draw(who), actor=actor),
        K.PASS_HOST: lambda: cmd.PassHost(to=draw(who), actor=actor),
        K.REMOVE_PLAYER: lambda: cmd.RemovePlayer(player=draw(who), actor=actor),
        K.PAUSE_GAME: lambda: cmd.PauseGame(seconds_left=draw(st.sampled_from((-5, 0, 1, 29, 30, 600, 10**9))),
                                            actor=actor),
    }
    simple = {K.JOIN: cmd.Join, K.LEAVE: cmd.Leave, K.START_GAME: cmd.StartGame, K.CANCEL_GAME: cmd.CancelGame,
              K.RESUME_GAME: cmd.ResumeGame, K.VOID_GAME: cmd.VoidGame, K.ANNOUNCE_ABSENCE: cmd.AnnounceAbsence,
              K.WATCH: cmd.Watch, K.UNWATCH: cmd.Unwatch}
    if kind is K.PHASE_TIMED_OUT:
        command = cmd.PhaseTimedOut(actor=actor, phase_id=phase_id if phase_id is not None else state.phase_id)
        return command
    command = fields[kind]() if kind in fields else simple[kind](actor=actor)
    return replace(command, phase_id=phase_id)


# -- the oracle: legal_commands ------------------------------------------------------------------

def legal_of(state, command):
    offers = table_commands if command.kind in TABLE_KINDS else legal_commands
    return next((c for c in offers(state, command.actor) if c.kind is command.kind), None)


def is_legal(state, command) -> bool:
    """Whether the buttons a gateway draws from ``legal_commands`` offer exactly this command now."""
    if type(command) is cmd.PhaseTimedOut:
        return command.actor == cmd.SCHEDULER  # the scheduler's own; whether it acts: the next test
    if command.actor == cmd.SCHEDULER:
        return False
    if type(command) is cmd.CreateGame:
        return state.phase is None
    if command.phase_id is not None and command.phase_id != state.phase_id and command.kind not in TABLE_KINDS:
        return False  # a button of another phase (the table's commands belong to no phase)
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
    if type(command) in (cmd.HandShot, cmd.PassHost):
        return command.to in legal.targets
    if type(command) in (cmd.OpenSeat, cmd.TakeSeat, cmd.RemovePlayer):
        return command.player in legal.targets
    if type(command) in (cmd.Confer, cmd.SpeakLastWord):
        return visible(command.text) and len(command.text.strip()) <= MAX_TEXT
    return True  # join, leave, settings, start, cancel, a vote, pause, void...: offered means allowed


def visible(text: str) -> bool:
    """At least one character a reader can see: not a space, a control, a format mark (RTL, zero
    width) or a lone surrogate."""
    return any(unicodedata.category(ch)[0] not in "CZ" for ch in text)
