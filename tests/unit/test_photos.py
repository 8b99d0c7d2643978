"""The pictures the channels send (shared/delivery/photos.py, the table's ``picture``): folded from the
public events every channel receives, drawn once per (game, event, language), and kept whole in an
outbox row."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from datetime import datetime, timezone

from avalon.services.engine.simulate import random_game
from avalon.services.telegram_gateway.channel import MAX_CAPTION, photo
from avalon.shared.delivery.photos import Photos, decode
from avalon.shared.delivery.table import Table, fold
from avalon.shared.game.events import AudienceKind
from avalon.shared.game.options import Options
from avalon.shared.pictures import draw_board, draw_end, picture_of
from avalon.shared.protocol import EVENT_MODELS, BoardShown, EventEnvelope, audience_model, event_body, snake

NAMES = {f"p{i}": name for i, name in enumerate(["Ann", "Bảo", "فرشته", "Дима", "Eva", "Finn", "Gus"], 1)}


def envelopes(events, game_id="g"):
    """The game's events as a channel receives them (the engine's own records are never sent)."""
    sent = [e for e in events if snake(type(e).__name__) in EVENT_MODELS]
    return [EventEnvelope(message_id=f"{game_id}:{i}", game_id=game_id, seq=i, occurred_at=datetime.now(timezone.utc),
                          audience=audience_model(e.audience), event=event_body(e)) for i, e in enumerate(sent, 1)]


def a_game(seed=5):
    return random_game(7, replace(Options(), lady=True, excalibur=True), seed, keep=True).events


def board_asked(game_id="g", n=1):
    body = BoardShown(phase=None, phase_id=0, players=(), leader=None, quest=1, vote_track=0, quest_sizes=(),
                      fails_needed=(), quest_results=(), team=(), excalibur_holder=None, lady_holder=None,
                      waiting_for=())
    return EventEnvelope(message_id=f"board:{n}", game_id=game_id, seq=0, occurred_at=datetime.now(timezone.utc),
                         audience=audience_model(a_game()[0].audience), event=body)


def test_the_table_folds_the_picture_of_what_every_channel_is_told():
    events = a_game()
    table = Table("g")
    for envelope in envelopes(events):
        fold(table, envelope)
    assert table.picture == picture_of(events) and table.picture.ending is not None
    assert len(pickle.dumps(table)) < 12_000, "the table is pickled with every event: kept small"


def test_private_events_never_reach_the_picture():
    events = a_game()
    everything, public = Table("g"), Table("g")
    for envelope in envelopes(events):
        fold(everything, envelope)
        if envelope.audience.kind is AudienceKind.PUBLIC:
            fold(public, envelope)
    private = [e for e in envelopes(events) if e.audience.kind is not AudienceKind.PUBLIC]
    assert {e.event.type for e in private} >= {"role_assigned", "vote_cast", "card_played"}
    assert everything.picture == public.picture


def test_each_picture_is_drawn_once_per_event_and_language_whatever_the_readers():
    table = Table("g")
    for envelope in envelopes(a_game()):
        fold(table, envelope)
    photos = Photos()
    asked = board_asked()
    drawn = [photos.of(table, asked, NAMES, locale) for locale in ("en", "fa", "en", "en", "fa", "en", "fa")]
    assert photos.drawings == 2
    assert drawn[0] == draw_board(table.picture, NAMES, "en") and drawn[1] == draw_board(table.picture, NAMES, "fa")
    assert photos.of(table, board_asked(n=2), NAMES, "en") == drawn[0], "the same game: the same bytes"


def test_no_picture_before_the_game_starts_or_for_other_events():
    events = envelopes(a_game())
    table = Table("g")
    for envelope in events:
        if envelope.event.type == "game_started":
            break
        fold(table, envelope)
    assert Photos().of(table, board_asked(), NAMES, "en") is None
    assert Photos().of(table, events[0], NAMES, "en") is None


def test_the_end_picture_survives_the_outbox_row_whole():
    table = Table("g")
    events = envelopes(a_game())
    for envelope in events:
        fold(table, envelope)
    png = Photos().of(table, events[-1], NAMES, "vi")
    assert events[-1].event.type == "game_ended" and png == draw_end(table.picture, NAMES, "vi")
    rows = photo(-100, png, "🏁 " + "x" * 100)
    assert len(rows) == 1 and rows[0].body["caption"].startswith("🏁")
    assert decode(json.loads(json.dumps(rows[0].body))["photo"]) == png


def test_a_text_too_long_for_a_caption_goes_beside_the_photo():
    png = b"\x89PNG..."
    text = "🏁" * (MAX_CAPTION // 2 + 1)  # 513 characters, 1026 in Telegram's count (UTF-16)
    first, second = photo(-100, png, text)
    assert first.body["op"] == "photo" and first.body["caption"] is None and decode(first.body["photo"]) == png
    assert second.body == {"op": "send", "chat": -100, "text": text, "markup": None, "slot": None}
