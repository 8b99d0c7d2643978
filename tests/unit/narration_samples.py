"""Sample events covering every event kind, from real seeded games, for the narration tests."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from avalon.shared.protocol import (
    INTERNAL_EVENTS,
    BoardShown,
    QuestLine,
    Choice,
    ChoicesOffered,
    CommandRejected,
    EventEnvelope,
    PhaseReminder,
    PlayerInvited,
    ProfileUpdated,
    audience_model,
    event_body,
)
from avalon.services.engine.rules import (
    AnnounceAbsence,
    CastVote,
    Card,
    CommandKind,
    CreateGame,
    HostChange,
    Join,
    Lancelot,
    OpenSeat,
    Options,
    PassHost,
    PauseGame,
    Phase,
    PhaseTimedOut,
    ProposeTeam,
    Reason,
    Rejection,
    RemovePlayer,
    ResumeGame,
    Role,
    StartGame,
    TakeSeat,
    Team,
    Unwatch,
    VoidGame,
    Watch,
    WinCause,
    apply,
    new_game,
)
from avalon.shared.game.numbers import quest_size
from avalon.shared.protocol_records import (
    HistoryShown,
    Leader,
    LeaderboardShown,
    PastGame,
    RecordsForgotten,
    RoleLine,
    SizeLine,
    StatsHidden,
    StatsShown,
    TeamLine,
)
from avalon.shared.game import events as ev
from avalon.services.engine.simulate import random_game

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)

GAMES = [
    (7, replace(Options(), lady=True, excalibur=True, lancelot=Lancelot.V1, last_word=True,
                assassin_may_delegate=True), 0.15),
    (8, replace(Options.preset_defaults("forum"), lady=True, lancelot=Lancelot.V2, anonymous_votes=True), 0.2),
    (6, replace(Options.preset_defaults("online"), excalibur=True, lancelot=Lancelot.V3), 0.1),
]

SAMPLE_PARAMS = {
    "phase": Phase.VOTE, "max": 10, "min": 5, "count": 4, "option": "max_players", "problem": "between 5 and 10",
    "role": "loyal_servant", "seats": 2, "wanted": 3, "quest": 2, "size": 3, "picked": 2, "player": "tg:9",
    "card": "fail", "allowed": "success", "budget": 3,
}


def envelope(event_body_model, audience, seq: int, deadline: bool = False) -> EventEnvelope:
    return EventEnvelope(message_id=f"g1:{seq}", game_id="g1", seq=seq, occurred_at=NOW,
                         audience=audience, event=event_body_model,
                         deadline_at=NOW + timedelta(seconds=getattr(event_body_model, "timeout_seconds", 0)
                                                     or getattr(event_body_model, "seconds_left", 0))
                         if deadline else None)


def game_envelopes(players: int, options: Options, timeout_rate: float, seed: int) -> list[EventEnvelope]:
    record = random_game(players, options, seed, timeout_rate=timeout_rate, keep=True)
    out = []
    for i, event in enumerate(record.events, 1):
        body = event_body(event)
        if body.type in INTERNAL_EVENTS:
            continue
        out.append(envelope(body, audience_model(event.audience), i, deadline=body.type == "phase_opened"))
    return out


def table_envelopes() -> list[EventEnvelope]:
    """A real game of the people around the table: a player removed from the lobby, a spectator who
    comes and goes, an absence, a pause, a seat that misses deadlines until it opens and is taken, a
    seat the host opens after it voted (its substitute is told the vote), one handed over by the host
    after the host's duties were passed on, a call to void and the host voiding it (roles revealed);
    then what that game did not show: a majority's void, a host replaced, an evil seat's briefing in
    the conference."""
    options = Options.preset_defaults("classic", spectators=True, seat_opens_after=2, excused_absences=2,
                                      void_reveals_roles=True)
    ids = [f"p{i}" for i in range(1, 8)]
    state, events = new_game(), []

    def do(command) -> None:
        nonlocal state
        result = apply(state, command)
        assert not isinstance(result, Rejection), f"{command}: {result.message}"
        state = result.state
        events.extend(result.events)

    def propose_and_vote(voters) -> None:
        leader = state.players[state.leader]
        do(ProposeTeam(actor=leader, team=tuple(ids[:quest_size(7, state.quest)]), phase_id=state.phase_id))
        for player in voters:
            do(CastVote(actor=player, approve=False, phase_id=state.phase_id))

    do(CreateGame(actor="p1", game_id="g1", seed=5, options=options))
    for player in ids[1:] + ["p12"]:
        do(Join(actor=player))
    do(RemovePlayer(actor="p1", player="p12"))
    do(StartGame(actor="p1"))
    do(Watch(actor="p9"))
    do(AnnounceAbsence(actor="p4"))
    do(PauseGame(actor="p1", seconds_left=250))
    do(ResumeGame(actor="p1"))
    for _ in range(2):  # p3 misses two votes in a row (its seat opens), p4 is away (excused)
        propose_and_vote([p for p in ids if p not in ("p3", "p4")])
        do(PhaseTimedOut(phase_id=state.phase_id))
    do(TakeSeat(actor="p8", player="p3"))
    propose_and_vote(["p6"])
    do(OpenSeat(actor="p1", player="p6"))
    do(TakeSeat(actor="p10", player="p6"))
    do(VoidGame(actor="p7"))
    do(PassHost(actor="p1", to="p2"))
    do(OpenSeat(actor="p2", player="p2"))
    do(Unwatch(actor="p9"))
    do(VoidGame(actor=state.host))
    out = []
    for i, event in enumerate(events, 2000):
        body = event_body(event)
        if body.type in INTERNAL_EVENTS:
            continue
        out.append(envelope(body, audience_model(event.audience), i,
                            deadline=body.type in ("phase_opened", "game_resumed")))
    private = audience_model(ev.Audience.to("p5"))
    out += [envelope(event_body(ev.GameVoided(by="")), audience_model(ev.PUBLIC), 2900),
            envelope(event_body(ev.HostChanged(host="p4", previous="p1", reason=HostChange.REPLACED)),
                     audience_model(ev.PUBLIC), 2901),
            envelope(event_body(ev.HostChanged(host="p4", previous="p1", reason=HostChange.ABSENT)),
                     audience_model(ev.PUBLIC), 2903),
            envelope(event_body(ev.SeatBriefing(
                audience=ev.Audience.to("p5"), player="p5", seat=4, previous="p11", team=Team.EVIL,
                lancelots_switched=True, lady_results=(("p2", Team.GOOD),), excalibur_peeks=(("p3", Card.FAIL),),
                conference=("p5", "p6", "p7"), shooter="p6", conference_log=(("p6", "p2 is Merlin"),),
                card=Card.FAIL)), private, 2902)]
    return out


def service_envelopes() -> list[EventEnvelope]:
    public = audience_model(ev.PUBLIC)
    private = audience_model(ev.Audience.to("p1"))
    choices = [Choice(kind=CommandKind.PROPOSE_TEAM, targets=("p1", "p2", "p3"), count=2, excalibur=True),
               Choice(kind=CommandKind.CAST_VOTE), Choice(kind=CommandKind.PLAY_CARD, cards=(Card.SUCCESS, Card.FAIL)),
               Choice(kind=CommandKind.USE_EXCALIBUR, targets=("p2",), optional=True),
               Choice(kind=CommandKind.USE_LADY, targets=("p2", "p3")),
               Choice(kind=CommandKind.ASSASSINATE, targets=("p2", "p3")),
               Choice(kind=CommandKind.ACCUSE, targets=("p2", "p3")),
               Choice(kind=CommandKind.HAND_SHOT, targets=("p4",)), Choice(kind=CommandKind.SPEAK_LAST_WORD),
               Choice(kind=CommandKind.CONFER)]
    board = BoardShown(phase=Phase.VOTE, phase_id=7, players=("p1", "p2", "p3", "p4", "p5", "p6", "p7"), leader="p2",
                       quest=2, vote_track=1, quest_sizes=(2, 3, 3, 4, 4), fails_needed=(1, 1, 1, 2, 1),
                       quest_results=(QuestLine(quest=1, fails=1, failed=True),), team=("p2", "p3", "p4"),
                       excalibur_holder="p3", lady_holder="p6", waiting_for=("p5",), deadline_at=NOW)
    table = board.model_copy(update=dict(missed=(0, 0, 2, 0, 1, 0, 0), open_seats=("p6",), paused=True,
                                         deadline_at=None))
    out = [envelope(board, private, 898), envelope(table, private, 897),
           envelope(ChoicesOffered(player="p1", phase=Phase.PROPOSAL, phase_id=4, choices=tuple(choices)),
                    private, 899),
           envelope(PhaseReminder(phase=Phase.VOTE, phase_id=3, seconds_left=90, waiting_for=("p2", "p3")),
                    public, 900),
           envelope(ProfileUpdated(player="p1", display_name="Ann", language="en"), private, 901),
           envelope(PlayerInvited(by="p1", player="mail:bob@example.org"),
                    audience_model(ev.Audience.to("p1", "mail:bob@example.org")), 0),
           envelope(PlayerInvited(by="p1", player="mail:bob@example.org", seat="p3"),
                    audience_model(ev.Audience.to("p1", "mail:bob@example.org")), 0),
           envelope(event_body(ev.PlayerLeft(player="p4")), public, 902),
           envelope(event_body(ev.OptionsChanged(options=GAMES[1][1])), public, 903),
           envelope(event_body(ev.GameCancelled(by="p1")), public, 904)]
    out += record_envelopes(private)
    for i, reason in enumerate(list(Reason) + ["malformed", "unknown_game", "unknown_person", "hidden_stats"]):
        params = {k: v for k, v in SAMPLE_PARAMS.items()}
        out.append(envelope(CommandRejected(command_type="cast_vote", reason=reason, params=params,
                                            message="..."), private, 1000 + i))
    return out


def record_envelopes(private) -> list[EventEnvelope]:
    """The record's answers: stats (with and without games), a leaderboard and a history (with and
    without lines), hiding and showing, forgetting."""
    stats = StatsShown(player="p2", hidden=True, games=12, wins=7,
                       by_role=(RoleLine(role=Role.MERLIN, games=3, wins=2), RoleLine(role=Role.ASSASSIN, games=2, wins=1)),
                       by_team=(TeamLine(team=Team.GOOD, games=8, wins=5), TeamLine(team=Team.EVIL, games=4, wins=2)),
                       by_size=(SizeLine(players=5, games=10, wins=6), SizeLine(players=7, games=2, wins=1)),
                       merlin_shot_at=2, merlin_survived=1, assassin_shots=2, assassin_hits=1)
    past = PastGame(code="7KQ2-M9XD", ended_at=NOW, players=5, winner=Team.EVIL, cause=WinCause.MERLIN_ASSASSINATED,
                    roles=(("p1", Role.MERLIN), ("p2", Role.ASSASSIN), ("p3", Role.LOYAL_SERVANT),
                           ("p4", Role.MORGANA), ("p5", Role.PERCIVAL)))
    bodies = [stats, StatsShown(player="p1", games=0, wins=0),
              LeaderboardShown(table="tg-1", min_games=3, leaders=(Leader(player="p1", games=9, wins=6),
                                                                   Leader(player="p3", games=4, wins=1))),
              LeaderboardShown(table="tg-1", min_games=3, leaders=()),
              LeaderboardShown(host="p2", min_games=5, leaders=(Leader(player="p2", games=7, wins=3),)),
              HistoryShown(table="tg-1", games=(past,)), HistoryShown(table="tg-1", games=()),
              StatsHidden(player="p1", hidden=True), StatsHidden(player="p1", hidden=False),
              RecordsForgotten(player="p1", games=4)]
    return [envelope(body, private, 0) for body in bodies]


def all_samples() -> dict[str, list[EventEnvelope]]:
    """Every published event kind -> sample envelopes (several seeds until all kinds appear)."""
    found: dict[str, list[EventEnvelope]] = {}
    for envelope_ in service_envelopes() + table_envelopes():
        found.setdefault(envelope_.event.type, []).append(envelope_)
    for seed in range(40):
        for players, options, rate in GAMES:
            for envelope_ in game_envelopes(players, options, rate, seed):
                bucket = found.setdefault(envelope_.event.type, [])
                if len(bucket) < 6:
                    bucket.append(envelope_)
    return found
