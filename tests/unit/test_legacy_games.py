"""A game kept by a gateway before the tables were shared is read into today's Game on start, so a
game under way when the narrator is upgraded goes on (its seats, phase, buttons, draft, receipts)."""

from __future__ import annotations

import pickle
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest

from avalon.services.email_gateway import legacy as mail_legacy
from avalon.services.telegram_gateway import legacy as telegram_legacy
from avalon.shared.delivery.games import GameBook
from avalon.shared.game import CommandKind, Options, Phase
from avalon.shared.protocol import Choice, ChoicesOffered, Person

OFFER = ChoicesOffered(player="tg:1", phase=Phase.PROPOSAL, phase_id=7, choices=(
    Choice(kind=CommandKind.PROPOSE_TEAM, targets=("tg:1", "tg:2", "mail:c@x.org"), count=2),))


@dataclass
class GameMemo:  # the Telegram gateway's record of a game, as it was pickled
    game_id: str
    chat_id: int
    host: str = ""
    players: list[str] = field(default_factory=list)
    options: Any = None
    options_wanted: Any = None
    phase: str = "lobby"
    phase_id: int = 0
    leader: str | None = None
    team_size: int = 0
    picked: list[str] = field(default_factory=list)
    sword: str | None = None
    lobby_message: int | None = None
    pick_message: int | None = None
    vote_message: int | None = None
    voted: list[str] = field(default_factory=list)
    language: str = "en"
    title: str = ""
    council: list[str] = field(default_factory=list)
    over: bool = False
    seen_seq: int = 0


@dataclass
class Pending:
    player: str
    what: str
    names: str = ""
    text: str = ""


@dataclass
class MailGame:  # the email gateway's, as it was pickled
    game_id: str
    host: str = ""
    players: list[str] = field(default_factory=list)
    phase: str = "lobby"
    phase_id: int = 0
    leader: str | None = None
    team_size: int = 0
    over: bool = False
    title: str = ""
    options: Any = None
    offers: dict[str, Any] = field(default_factory=dict)
    draft: list[str] = field(default_factory=list)
    draft_excalibur: str | None = None
    drafted: list[str] = field(default_factory=list)
    pending: dict[str, Pending] = field(default_factory=dict)
    invited: list[str] = field(default_factory=list)
    seen_seq: int = 0
    people: dict[str, Any] = field(default_factory=dict)


def pickled_as(module: str, obj, *classes) -> bytes:
    """``obj`` pickled as the classes were named in ``module`` then (a module that may be gone now)."""
    saved = sys.modules.get(module)
    stand_in = types.ModuleType(module)
    for cls in classes:
        cls.__module__ = module
        setattr(stand_in, cls.__name__, cls)
    sys.modules[module] = stand_in
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        if saved is None:
            del sys.modules[module]
        else:
            sys.modules[module] = saved


class NoRows:
    channel = "test"


def test_a_telegram_game_kept_before_the_shared_tables_goes_on_with_its_seats_phase_and_picker():
    memo = GameMemo("tg-5_1", -5, host="tg:1", players=["tg:1", "tg:2", "mail:c@x.org"], options=Options(lady=True),
                    phase="proposal", phase_id=7, leader="tg:1", team_size=2, picked=["tg:2"], pick_message="pick:x",
                    language="fr", title="Camelot", council=[], seen_seq=40)
    blob = pickled_as("services.telegram_gateway.memory", (memo, {"tg:1": OFFER}), GameMemo)
    game = GameBook(NoRows(), lambda game_id: None, upgrade=telegram_legacy.upgrade)._read(blob)
    t = game.table
    assert (t.game_id, t.seats.host, t.seats.players) == ("tg-5_1", "tg:1", ["tg:1", "tg:2", "mail:c@x.org"])
    assert (t.turn.phase, t.turn.phase_id, t.turn.leader, t.turn.team_size) == (Phase.PROPOSAL, 7, "tg:1", 2)
    assert t.offer("tg:1") == OFFER and t.draft.picks == ["tg:2"] and t.options.lady and t.seen_seq == 40
    assert (game.own.chat_id, game.own.language, game.own.title, game.own.pick_message) == (-5, "fr", "Camelot",
                                                                                             "pick:x")


def test_a_mail_game_kept_before_the_shared_tables_goes_on_with_its_draft_links_and_receipts():
    kept = MailGame("mail-abc", host="mail:a@x.org", players=["mail:a@x.org", "mail:b@x.org"], phase="proposal",
                    phase_id=3, leader="mail:a@x.org", team_size=2, title="mail-abc",
                    offers={"mail:a@x.org": OFFER.model_copy(update={"player": "mail:a@x.org",
                                                                       "phase_id": 3}).model_dump(mode="json")},
                    draft=["mail:b@x.org"], draft_excalibur="mail:b@x.org", drafted=["<m1@x.org>"],
                    pending={"mail-1:0": Pending("mail:a@x.org", "what_pick", names="Bea")},
                    invited=["mail:c@x.org"], seen_seq=12, people={"mail:b@x.org": Person(display_name="Bea")})
    blob = pickled_as("services.email_gateway.memory", kept, MailGame, Pending)
    game = GameBook(NoRows(), lambda game_id: None, upgrade=mail_legacy.upgrade)._read(blob)
    t = game.table
    assert t.seats.invited == ["mail:c@x.org"] and t.seats.people["mail:b@x.org"].display_name == "Bea"
    assert t.offer("mail:a@x.org").phase_id == 3 and t.turn.phase is Phase.PROPOSAL
    assert (t.draft.picks, t.draft.holder) == (["mail:b@x.org"], "mail:b@x.org")
    assert t.draft.presses == ("<m1@x.org>",) and game.own.pending["mail-1:0"].what == "what_pick"


def test_a_row_that_is_neither_is_refused_and_left_to_the_games_next_events():
    with pytest.raises(Exception):
        GameBook(NoRows(), lambda game_id: None, upgrade=telegram_legacy.upgrade)._read(b"not a pickle")
