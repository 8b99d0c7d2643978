"""The lobby says which role cards a start would deal (docs/rules.md §2 and §8).

Every lobby event that can change it (``lobby_opened``, ``player_joined``,
``player_left``, ``options_changed``) carries ``deals``, so a settings screen
shows what the engine will deal instead of working it out itself.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from avalon.services.engine.rules import (
    OPTIONAL_ROLES,
    ChangeOptions,
    Join,
    Lancelot,
    Leave,
    Role,
    StartGame,
    replay_events,
)
from avalon.shared.game import events as ev
from avalon.shared.game.errors import Reason
from avalon.shared.protocol import EVENT_MODELS, EventEnvelope, event_body, to_core_event

from .gamekit import Game
from .rules_core_kit import started

R = Role
LOBBY_EVENTS = (ev.LobbyOpened, ev.PlayerJoined, ev.PlayerLeft, ev.OptionsChanged)


def deals_now(g: Game) -> tuple[Role, ...]:
    """What the lobby's last event says a start would deal."""
    return [e for e in g.log if isinstance(e, LOBBY_EVENTS)][-1].deals


@pytest.mark.parametrize("variant", (Lancelot.V1, Lancelot.V2, Lancelot.V3), ids=lambda v: f"variant {v.value}")
def test_a_five_player_lobby_with_lancelot_says_it_deals_the_assassin_and_both_lancelots(variant):
    """docs/rules.md §2 (the standard set) and §8: the Lancelots take the seat Morgana would have."""
    g = Game(players=5, lancelot=variant, start=False)
    dealt = (R.MERLIN, R.PERCIVAL, R.GOOD_LANCELOT, R.ASSASSIN, R.EVIL_LANCELOT)
    assert deals_now(g) == dealt
    g.do(StartGame(actor="p1"))
    assert started(g).roles_in_play == dealt


def test_unticking_percival_in_that_lobby_deals_the_assassin_not_morgana():
    """docs/rules.md §2: the host's choice is the optional roles shown, less the one un-ticked.

    The Telegram settings screen used to show Morgana ticked here and send ``roles=(morgana,)``,
    which deals Morgana instead of the Assassin.
    """
    g = Game(players=5, lancelot=Lancelot.V1, start=False)
    chosen = tuple(r for r in deals_now(g) if r in OPTIONAL_ROLES and r is not R.PERCIVAL)
    assert chosen == ()
    g.do(ChangeOptions(actor="p1", options=replace(g.options, roles=chosen)))
    dealt = (R.MERLIN, R.LOYAL_SERVANT, R.GOOD_LANCELOT, R.ASSASSIN, R.EVIL_LANCELOT)
    assert g.last_of(ev.OptionsChanged).deals == dealt
    g.do(StartGame(actor="p1"))
    assert started(g).roles_in_play == dealt
    assert g.role(g.events(ev.Dealt)[0].shooter) is R.ASSASSIN


def test_choosing_morgana_with_lancelot_at_five_is_shown_as_dealing_morgana_in_the_assassins_place():
    """docs/rules.md §2, the fallback shooter: the chosen evil roles fill both evil seats."""
    g = Game(players=5, lancelot=Lancelot.V1, start=False)
    g.do(ChangeOptions(actor="p1", options=replace(g.options, roles=(R.MORGANA,))))
    assert g.last_of(ev.OptionsChanged).deals == (R.MERLIN, R.LOYAL_SERVANT, R.GOOD_LANCELOT, R.MORGANA,
                                                  R.EVIL_LANCELOT)


def test_the_cards_shown_follow_the_count_as_players_join_and_leave():
    """docs/rules.md §1 and §2: a lobby still filling up shows the five-player table's cards."""
    five = (R.MERLIN, R.PERCIVAL, R.LOYAL_SERVANT, R.ASSASSIN, R.MORGANA)
    six = (R.MERLIN, R.PERCIVAL, R.LOYAL_SERVANT, R.LOYAL_SERVANT, R.ASSASSIN, R.MORGANA)
    seven = (R.MERLIN, R.PERCIVAL, R.LOYAL_SERVANT, R.LOYAL_SERVANT, R.ASSASSIN, R.MORGANA, R.MORDRED)
    g = Game(players=1, start=False)
    assert g.events(ev.LobbyOpened)[0].deals == five
    shown = []
    for player in ("p2", "p3", "p4", "p5", "p6", "p7"):
        g.do(Join(actor=player))
        shown.append(g.last_of(ev.PlayerJoined).deals)
    assert shown == [five, five, five, five, six, seven]
    g.do(Leave(actor="p7"))
    assert g.last_of(ev.PlayerLeft).deals == six
    g.do(Leave(actor="p6"))
    assert g.last_of(ev.PlayerLeft).deals == five


def test_a_choice_that_does_not_fit_the_count_shows_no_cards_until_enough_players_join():
    """docs/rules.md §2: three evil roles need three evil seats, which seven players have."""
    g = Game(players=6, roles=(R.MORGANA, R.MORDRED, R.OBERON), start=False)
    assert all(e.deals == () for e in g.log if isinstance(e, LOBBY_EVENTS))
    g.refuse(StartGame(actor="p1"), Reason.TOO_MANY_EVIL_ROLES)
    g.do(Join(actor="p7"))
    dealt = (R.MERLIN, R.LOYAL_SERVANT, R.LOYAL_SERVANT, R.LOYAL_SERVANT, R.MORGANA, R.MORDRED, R.OBERON)
    assert g.last_of(ev.PlayerJoined).deals == dealt
    g.do(StartGame(actor="p1"))
    assert started(g).roles_in_play == dealt


def test_an_event_log_written_before_the_lobby_said_what_it_deals_still_replays():
    """Stored games keep loading: a lobby event without ``deals`` reads as dealing nothing known."""
    g = Game(players=5, lancelot=Lancelot.V1)
    back = []
    for seq, event in enumerate(g.log, 1):
        wire = json.loads(EventEnvelope(message_id=f"g:{seq}", game_id="g", seq=seq,
                                        occurred_at="2026-01-01T00:00:00Z",
                                        audience={"kind": event.audience.kind, "players": event.audience.players},
                                        event=event_body(event)).model_dump_json())
        wire["event"].pop("deals", None)
        envelope = EventEnvelope.model_validate(wire)
        back.append(to_core_event(envelope.event, envelope.audience))
    assert [e.deals for e in back if isinstance(e, LOBBY_EVENTS)] == [()] * 6
    assert replay_events(back) == replay_events(g.log)
    schema = EVENT_MODELS["player_joined"].model_json_schema()
    assert "deals" in schema["properties"] and "deals" not in schema.get("required", ())
