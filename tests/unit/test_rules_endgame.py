"""Scenario tests: the end of the game, the assassination and the reveal (docs/rules.md §4)."""

from __future__ import annotations

import pytest

from avalon.services.engine.rules import (
    Accuse, Assassinate, CancelGame, CastVote, ChangeOptions, Confer, HandShot, Join, Options, PhaseTimedOut,
    PlayCard, ProposeTeam, SpeakLastWord, apply,
)
from avalon.shared.game.errors import Reason, Rejection
from avalon.shared.game.events import (
    PUBLIC, AssassinationResolved, ConferenceMessage, ConferenceOpened, GameEnded, LastWordSpoken,
    MerlinAccused, PhaseOpened, QuestResolved, ShotHanded,
)
from avalon.shared.game.model import Card, Phase, Role, Team, WinCause
from avalon.services.engine.rules.view import view

from tests.unit.rules_core_kit import Game, shooter, to_assassination


def _ended(g: Game) -> GameEnded:
    ends = g.events(GameEnded)
    assert len(ends) == 1
    return ends[0]


def _a_servant(g: Game) -> str:
    return g.who(Role.LOYAL_SERVANT)


# -- quests decide ---------------------------------------------------------------


def test_three_failed_quests_give_evil_the_win_at_once():
    """docs/rules.md §4: three failed quests, evil wins at once (no assassination)."""
    g = Game(players=5)
    g.lose_quest()
    g.lose_quest()
    assert g.phase is Phase.PROPOSAL
    g.lose_quest()
    assert g.last_of(QuestResolved).failed is True
    end = g.last_of(GameEnded)
    assert (end.winner, end.cause) == (Team.EVIL, WinCause.THREE_FAILED_QUESTS)
    assert g.phase is Phase.ENDED
    assert not [e for e in g.events(PhaseOpened) if e.phase is Phase.ASSASSINATION]


def test_three_successful_quests_open_the_assassination_not_the_end():
    """docs/rules.md §4: three successes lead to the assassination."""
    g = Game(players=5)
    g.win_quest()
    g.lose_quest()
    g.win_quest()
    assert g.phase is Phase.PROPOSAL
    g.win_quest()
    assert g.phase is Phase.ASSASSINATION
    assert g.last_of(PhaseOpened).phase is Phase.ASSASSINATION
    assert not g.events(GameEnded) and g.state.winner is None


def test_the_fifth_quest_decides_a_two_all_game():
    """docs/rules.md §4: the first side to three quests."""
    g = Game(players=5)
    g.win_quest()
    g.lose_quest()
    g.win_quest()
    g.lose_quest()
    assert g.state.quest == 5 and g.phase is Phase.PROPOSAL
    g.lose_quest()
    assert _ended(g).cause is WinCause.THREE_FAILED_QUESTS


# -- the shot ------------------------------------------------------------------------


def test_the_assassin_who_names_merlin_gives_evil_the_win():
    """docs/rules.md §4: right, evil wins."""
    g = Game(players=7)
    to_assassination(g)
    assert shooter(g) == g.who(Role.ASSASSIN)
    g.do(Assassinate(actor=shooter(g), target=g.who(Role.MERLIN)))
    shot = g.last_of(AssassinationResolved)
    assert shot.hit is True and shot.target == g.who(Role.MERLIN) and shot.audience == PUBLIC
    end = g.last_of(GameEnded)
    assert (end.winner, end.cause) == (Team.EVIL, WinCause.MERLIN_ASSASSINATED)


@pytest.mark.parametrize("victim", [Role.LOYAL_SERVANT, Role.PERCIVAL])
def test_the_assassin_who_misses_merlin_gives_good_the_win(victim):
    """docs/rules.md §4: wrong, good wins."""
    g = Game(players=7)
    to_assassination(g)
    g.do(Assassinate(actor=shooter(g), target=g.who(victim)))
    assert g.last_of(AssassinationResolved).hit is False
    end = g.last_of(GameEnded)
    assert (end.winner, end.cause) == (Team.GOOD, WinCause.ASSASSIN_MISSED)


def test_only_the_shooter_takes_the_shot():
    """docs/rules.md §4: the Assassin names one player."""
    g = Game(players=7)
    to_assassination(g)
    merlin = g.who(Role.MERLIN)
    other_evil = next(p for p in g.evil() if p != shooter(g))
    g.refuse(Assassinate(actor=other_evil, target=merlin), Reason.NOT_YOUR_TURN)
    g.refuse(Assassinate(actor=merlin, target=_a_servant(g)), Reason.NOT_YOUR_TURN)
    g.refuse(Assassinate(actor=shooter(g), target="stranger"), Reason.UNKNOWN_PLAYER)
    g.refuse(Assassinate(actor=shooter(g), target=shooter(g)), Reason.INVALID_TARGET)


def test_morgana_shoots_when_no_assassin_was_dealt():
    """docs/rules.md §2 fallback and §4: Morgana takes the shot."""
    g = Game(players=5, roles=(Role.MORGANA, Role.MORDRED))
    to_assassination(g)
    morgana, mordred = g.who(Role.MORGANA), g.who(Role.MORDRED)
    assert g.last_of(ConferenceOpened).shooter == morgana
    g.refuse(Assassinate(actor=mordred, target=g.who(Role.MERLIN)), Reason.NOT_YOUR_TURN)
    g.do(Assassinate(actor=morgana, target=g.who(Role.MERLIN)))
    assert _ended(g).cause is WinCause.MERLIN_ASSASSINATED


def test_mordred_shoots_when_neither_assassin_nor_morgana_is_dealt():
    """docs/rules.md §2 fallback and §4."""
    g = Game(players=5, roles=(Role.MORDRED, Role.OBERON))
    to_assassination(g)
    g.refuse(Assassinate(actor=g.who(Role.OBERON), target=g.who(Role.MERLIN)), Reason.NOT_YOUR_TURN)
    g.do(Assassinate(actor=g.who(Role.MORDRED), target=_a_servant(g)))
    assert _ended(g).winner is Team.GOOD


def test_a_player_cannot_forfeit_the_shot_by_claiming_its_deadline_passed():
    """docs/rules.md §4: good wins only if the shot misses Merlin (or its real deadline passes, §7).

    A deadline is the scheduler's to report; Merlin sending ``PhaseTimedOut`` himself
    must not end the game in good's favour.
    """
    g = Game(players=5)
    to_assassination(g)
    merlin = g.who(Role.MERLIN)
    r = apply(g.state, PhaseTimedOut(actor=merlin, phase_id=g.state.phase_id))
    if not isinstance(r, Rejection):
        ended = [e for e in r.events if isinstance(e, GameEnded)]
        assert not ended, f"Merlin ended the game himself: {ended[0].winner.value} by {ended[0].cause.value}"


# -- the conference ------------------------------------------------------------------


def test_the_evil_conference_is_private_to_the_evil_players():
    """docs/rules.md §4: the evil players may confer privately (classic)."""
    g = Game(players=10, seed=2)
    to_assassination(g)
    evil = set(g.evil())
    opened = g.last_of(ConferenceOpened)
    assert set(opened.audience.players) == evil and set(opened.members) == evil
    assert not opened.audience.includes(None)
    sender = next(p for p in g.evil() if p != shooter(g))
    g.do(Confer(actor=sender, text="p3 looked too sure"))
    msg = g.last_of(ConferenceMessage)
    assert (msg.sender, msg.text) == (sender, "p3 looked too sure")
    assert set(msg.audience.players) == evil
    assert not any(msg.audience.includes(p) for p in g.good())
    good = g.good()[0]
    assert view(g.state, good).conference == () and view(g.state, good).shooter is None
    assert view(g.state, None).waiting_for == ()  # the shooter is not shown to the table
    assert set(view(g.state, sender).conference) == evil and view(g.state, sender).shooter == shooter(g)


def test_a_good_player_cannot_speak_in_the_conference():
    """docs/rules.md §4: only the evil players confer."""
    g = Game(players=5)
    to_assassination(g)
    g.refuse(Confer(actor=g.who(Role.MERLIN), text="it's not me"), Reason.NOT_EVIL)
    g.refuse(Confer(actor=shooter(g), text="   "), Reason.EMPTY_MESSAGE)


def test_the_forum_conference_is_public():
    """docs/rules.md §4 and §9: in the forum preset the evil players confer in public."""
    g = Game(players=5, preset="forum")
    to_assassination(g)
    assert g.last_of(ConferenceOpened).audience == PUBLIC
    g.do(Confer(actor=shooter(g), text="I will shoot the quiet one"))
    assert g.last_of(ConferenceMessage).audience == PUBLIC
    good = g.good()[0]
    assert set(view(g.state, good).conference) == set(g.evil())
    g.refuse(Confer(actor=good, text="me too"), Reason.NOT_EVIL)


# -- house rule: the Assassin hands the shot -----------------------------------------


def _delegating(**options) -> tuple[Game, str, str]:
    g = Game(players=7, assassin_may_delegate=True, **options)
    to_assassination(g)
    assassin = shooter(g)
    other = next(p for p in g.evil() if p != assassin)
    return g, assassin, other


def test_the_assassin_may_hand_the_shot_to_another_evil_player():
    """docs/rules.md §4 house rule (ru, nl): the shot goes to another evil player."""
    g, assassin, other = _delegating()
    g.do(HandShot(actor=assassin, to=other))
    handed = g.last_of(ShotHanded)
    assert (handed.by, handed.to) == (assassin, other)
    assert set(handed.audience.players) == set(g.evil())
    assert shooter(g) == other
    g.refuse(Assassinate(actor=assassin, target=g.who(Role.MERLIN)), Reason.NOT_YOUR_TURN)
    g.do(Assassinate(actor=other, target=g.who(Role.MERLIN)))
    assert g.last_of(AssassinationResolved).shooter == other
    assert _ended(g).cause is WinCause.MERLIN_ASSASSINATED


def test_the_shot_is_handed_only_once():
    """docs/rules.md §4 house rule; README: the shot may be handed over once."""
    g, assassin, other = _delegating()
    g.do(HandShot(actor=assassin, to=other))
    g.refuse(HandShot(actor=other, to=assassin), Reason.SHOT_ALREADY_HANDED)


def test_the_shot_cannot_be_handed_without_the_house_rule():
    """docs/rules.md §4: the hand-over is a house rule, off by default."""
    g = Game(players=7)
    to_assassination(g)
    other = next(p for p in g.evil() if p != shooter(g))
    g.refuse(HandShot(actor=shooter(g), to=other), Reason.HOUSE_RULE_OFF)


def test_the_shot_cannot_be_handed_to_a_good_player_or_by_someone_else():
    """docs/rules.md §4: to another evil player, by the Assassin."""
    g, assassin, other = _delegating()
    g.refuse(HandShot(actor=assassin, to=g.who(Role.MERLIN)), Reason.INVALID_TARGET)
    g.refuse(HandShot(actor=assassin, to=assassin), Reason.INVALID_TARGET)
    g.refuse(HandShot(actor=other, to=other), Reason.NOT_YOUR_TURN)


# -- house rule: the last word -----------------------------------------------------------


def test_the_accused_speaks_a_last_word_before_the_final_shot_at_anyone():
    """docs/rules.md §4 house rule: the accused gets a last word before the shot."""
    g = Game(players=7, last_word=True)
    to_assassination(g)
    merlin, accused = g.who(Role.MERLIN), _a_servant(g)
    g.refuse(Assassinate(actor=shooter(g), target=merlin), Reason.WRONG_PHASE)
    g.do(Accuse(actor=shooter(g), target=accused))
    assert g.last_of(MerlinAccused).target == accused and g.last_of(MerlinAccused).audience == PUBLIC
    assert g.phase is Phase.LAST_WORD
    assert view(g.state, None).waiting_for == (accused,) and view(g.state, None).accused == accused
    g.refuse(SpeakLastWord(actor=merlin, text="not me"), Reason.NOT_YOUR_TURN)
    g.refuse(Assassinate(actor=shooter(g), target=merlin), Reason.WRONG_PHASE)
    g.do(SpeakLastWord(actor=accused, text="I was only a servant"))
    spoken = g.last_of(LastWordSpoken)
    assert (spoken.player, spoken.text, spoken.audience) == (accused, "I was only a servant", PUBLIC)
    assert g.phase is Phase.ASSASSINATION
    g.refuse(Accuse(actor=shooter(g), target=merlin), Reason.ALREADY_ACTED)
    g.do(Assassinate(actor=shooter(g), target=merlin))  # the final shot need not hit the accused
    assert _ended(g).cause is WinCause.MERLIN_ASSASSINATED


def test_an_accusation_needs_the_last_word_house_rule():
    """docs/rules.md §4: the last word is a house rule, off by default."""
    g = Game(players=7)
    to_assassination(g)
    g.refuse(Accuse(actor=shooter(g), target=_a_servant(g)), Reason.HOUSE_RULE_OFF)


def test_only_the_shooter_accuses():
    """docs/rules.md §4."""
    g = Game(players=7, last_word=True)
    to_assassination(g)
    other = next(p for p in g.evil() if p != shooter(g))
    g.refuse(Accuse(actor=other, target=_a_servant(g)), Reason.NOT_YOUR_TURN)


# -- the reveal and after the end ---------------------------------------------------------


def _finish(g: Game, how: str) -> None:
    if how == "hammer":
        for _ in range(5):
            g.reject_proposal()
    elif how == "fails":
        for _ in range(3):
            g.lose_quest()
    else:
        to_assassination(g)
        g.do(Assassinate(actor=shooter(g), target=_a_servant(g)))


@pytest.mark.parametrize("how", ["hammer", "fails", "shot"])
def test_every_role_is_revealed_at_the_end(how):
    """docs/rules.md §4: at the end every role is revealed."""
    g = Game(players=7, seed=4)
    everyone = {p: g.role(p) for p in g.seats}
    assert all(view(g.state, p).revealed == () for p in (*g.seats, None))
    _finish(g, how)
    end = _ended(g)
    assert end.audience == PUBLIC
    assert dict(end.roles) == everyone and len(end.roles) == 7
    assert dict(end.teams) == {p: r.team for p, r in everyone.items()}
    for p in (*g.seats, None, "stranger"):
        assert dict(view(g.state, p).revealed) == everyone


def test_the_roles_stay_hidden_during_the_assassination():
    """docs/rules.md §4: the reveal comes at the end, not before the shot."""
    g = Game(players=7)
    to_assassination(g)
    assert all(view(g.state, p).revealed == () for p in (*g.seats, None))


@pytest.mark.parametrize("how", ["hammer", "fails", "shot"])
def test_nothing_can_be_done_once_the_game_is_over(how):
    """docs/rules.md §4: the game ends at once; later commands are refused."""
    g = Game(players=5, seed=3, last_word=False)
    _finish(g, how)
    lead, anyone = g.seats[0], g.seats[1]
    for command in (
        ProposeTeam(actor=lead, team=tuple(g.seats[:2])),
        CastVote(actor=anyone, approve=True),
        PlayCard(actor=anyone, card=Card.SUCCESS),
        Assassinate(actor=g.evil()[0], target=g.who(Role.MERLIN)),
        Confer(actor=g.evil()[0], text="again?"),
        Join(actor="late"),
        ChangeOptions(actor="p1", options=Options()),
        CancelGame(actor="p1"),
    ):
        g.refuse(command, Reason.GAME_OVER)
