"""A channel tells a lost event from one never meant for it by ``prev_seq``."""

from datetime import datetime, timezone

from avalon.shared.delivery.chain import check_chain
from avalon.shared.protocol import EventEnvelope


def envelope(seq: int, prev: dict[str, int]) -> EventEnvelope:
    return EventEnvelope(message_id=f"g:{seq}", game_id="g", seq=seq, occurred_at=datetime.now(timezone.utc),
                         audience={"kind": "public"}, prev_seq=prev,
                         event={"type": "player_joined", "player": "tg:1"})


def test_events_never_meant_for_a_channel_are_no_gap_but_a_missing_one_is(caplog):
    assert check_chain(envelope(7, {"telegram": 4, "email": 6}), "telegram", 4)  # 5, 6 went elsewhere
    assert check_chain(envelope(2, {"telegram": 0}), "telegram", 0)  # the first one sent here
    assert check_chain(envelope(7, {"telegram": 4}), "telegram", 9)  # a redelivery of an old one
    assert check_chain(envelope(0, {}), "telegram", 3)  # a reply outside the stream
    assert not caplog.records
    assert not check_chain(envelope(9, {"telegram": 8}), "telegram", 4)
    assert "events 5..8 sent to telegram never arrived" in caplog.text
