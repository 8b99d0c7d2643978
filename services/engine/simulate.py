"""Random legal games through the real engine: ``avalon simulate``.

A random player picks one of the players the phase waits for and one of that
player's legal commands, with random choices inside it. Optionally a deadline
is missed now and then (``timeout_rate``), so the missed-deadline rules are
played too. The generator is the driver's own: the engine stays pure.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from .rules import (
    Assassinate,
    Accuse,
    CastVote,
    CommandKind,
    Confer,
    CreateGame,
    GameState,
    HandShot,
    Join,
    Options,
    PhaseTimedOut,
    PlayCard,
    ProposeTeam,
    SpeakLastWord,
    StartGame,
    UseExcalibur,
    UseLady,
    apply,
    legal_commands,
    new_game,
    pending_players,
    table_commands,
)
from avalon.shared.game import commands as table
from avalon.shared.game.errors import Rejection

K = CommandKind
MAX_STEPS = 5000


@dataclass
class GameRecord:
    state: GameState
    events: list = field(default_factory=list)
    commands: list = field(default_factory=list)
    proposals: int = 0


def setup(players: int, options: Options, seed: int, *, keep: bool = False) -> GameRecord:
    ids = [f"p{i + 1}" for i in range(players)]
    record = GameRecord(new_game())
    play(record, CreateGame(actor=ids[0], game_id=f"sim-{seed}", seed=seed, options=options), keep)
    for pid in ids[1:]:
        play(record, Join(actor=pid), keep)
    play(record, StartGame(actor=ids[0]), keep)
    return record


def play(record: GameRecord, command, keep: bool) -> None:
    result = apply(record.state, command)
    if isinstance(result, Rejection):
        raise AssertionError(f"legal command refused: {command} -> {result.message}")
    record.state = result.state
    if keep:
        record.events.extend(result.events)
        record.commands.append(command)


def random_command(state: GameState, rng: random.Random, timeout_rate: float = 0.0):
    if timeout_rate and rng.random() < timeout_rate:
        return PhaseTimedOut(phase_id=state.phase_id)
    waiting = pending_players(state)
    if not waiting:
        return PhaseTimedOut(phase_id=state.phase_id)
    player = waiting[rng.randrange(len(waiting))] if len(waiting) > 1 else waiting[0]
    choices = [c for c in legal_commands(state, player) if c.kind is not K.CANCEL_GAME]
    if not choices:  # paused, or a seat handed over: only the deadline moves the game on
        return PhaseTimedOut(phase_id=state.phase_id)
    legal = choices[rng.randrange(len(choices))] if len(choices) > 1 else choices[0]
    kind = legal.kind
    pid = state.phase_id
    if kind is K.CAST_VOTE:
        return CastVote(actor=player, approve=rng.random() < 0.5, phase_id=pid)
    if kind is K.PLAY_CARD:
        cards = legal.cards
        return PlayCard(actor=player, card=cards[rng.randrange(len(cards))] if len(cards) > 1 else cards[0],
                        phase_id=pid)
    if kind is K.PROPOSE_TEAM:
        team = tuple(rng.sample(legal.targets, legal.count))
        sword = None
        if legal.excalibur:
            others = [p for p in team if p != player]
            sword = others[rng.randrange(len(others))]
        return ProposeTeam(actor=player, team=team, excalibur=sword, phase_id=pid)
    if kind is K.USE_EXCALIBUR:
        target = None if rng.random() < 0.5 else legal.targets[rng.randrange(len(legal.targets))]
        return UseExcalibur(actor=player, target=target, phase_id=pid)
    if kind is K.USE_LADY:
        return UseLady(actor=player, target=rng.choice(legal.targets), phase_id=pid)
    if kind is K.CONFER:
        return Confer(actor=player, text="who is Merlin?", phase_id=pid)
    if kind is K.HAND_SHOT:
        return HandShot(actor=player, to=rng.choice(legal.targets), phase_id=pid)
    if kind is K.ACCUSE:
        return Accuse(actor=player, target=rng.choice(legal.targets), phase_id=pid)
    if kind is K.SPEAK_LAST_WORD:
        return SpeakLastWord(actor=player, text="I am a loyal servant.", phase_id=pid)
    if kind is K.ASSASSINATE:
        return Assassinate(actor=player, target=rng.choice(legal.targets), phase_id=pid)
    raise AssertionError(f"no random choice for {kind}")


def random_table_command(state: GameState, rng: random.Random, newcomers: int):
    """Something the people around the table do at a random moment: a pause (or, paused, the resume),
    a seat opened or handed over, a substitute (``sub<n>``) taking an open seat, a spectator
    (``spectator<n>``) coming or going, an absence, the host's duties passed on, a call to void."""
    if state.paused:
        return table.ResumeGame(actor=state.host)
    people = (*state.players, *state.spectators, f"sub{newcomers}", f"spectator{newcomers}")
    offers = [(p, legal) for p in people for legal in table_commands(state, p)]
    if not offers:
        return None
    player, legal = rng.choice(offers)
    target = rng.choice(legal.targets) if legal.targets else ""
    return {
        K.OPEN_SEAT: lambda: table.OpenSeat(actor=player, player=target),
        K.TAKE_SEAT: lambda: table.TakeSeat(actor=player, player=target),
        K.PAUSE_GAME: lambda: table.PauseGame(actor=player, seconds_left=rng.randrange(0, 700)),
        K.RESUME_GAME: lambda: table.ResumeGame(actor=player),
        K.VOID_GAME: lambda: table.VoidGame(actor=player),
        K.ANNOUNCE_ABSENCE: lambda: table.AnnounceAbsence(actor=player),
        K.PASS_HOST: lambda: table.PassHost(actor=player, to=target),
        K.REMOVE_PLAYER: lambda: table.RemovePlayer(actor=player, player=target),
        K.WATCH: lambda: table.Watch(actor=player),
        K.UNWATCH: lambda: table.Unwatch(actor=player),
    }[legal.kind]()


def random_game(players: int, options: Options, seed: int, *, timeout_rate: float = 0.0,
                keep: bool = False, table_rate: float = 0.0) -> GameRecord:
    """One random legal game from lobby to the end; with ``table_rate``, the people around the table
    act now and then too (``random_table_command``; a call to void is heeded once in ten)."""
    rng = random.Random(seed ^ 0x5EED)
    record = setup(players, options, seed, keep=keep)
    newcomers = 0
    for _ in range(MAX_STEPS):
        state = record.state
        if state.over:
            return record
        if state.paused or table_rate and rng.random() < table_rate:
            command = random_table_command(state, rng, newcomers)
            if command is not None and (type(command) is not table.VoidGame or rng.random() < 0.1):
                newcomers += type(command) in (table.TakeSeat, table.Watch)
                play(record, command, keep)
                continue
        command = random_command(state, rng, timeout_rate)
        if type(command) is ProposeTeam or (type(command) is PhaseTimedOut and state.phase.value == "proposal"):
            record.proposals += 1
        play(record, command, keep)
    raise AssertionError(f"game {seed} did not end in {MAX_STEPS} steps")


@dataclass
class Summary:
    games: int = 0
    good_wins: int = 0
    evil_wins: int = 0
    wins_by_cause: Counter = field(default_factory=Counter)
    proposals: int = 0

    def add(self, record: GameRecord) -> None:
        s = record.state
        self.games += 1
        if s.winner is not None and s.winner.value == "good":
            self.good_wins += 1
        else:
            self.evil_wins += 1
        self.wins_by_cause[s.cause.value] += 1
        self.proposals += record.proposals
