"""The leader's team in progress (shared/delivery/table.py ``Draft``), kept with the game's row: a press
handled again after a restart (the game's row written, the gateway killed before its memory said the
update was handled) must not toggle its pick back out."""

from avalon.shared.delivery.table import PRESSES_KEPT, Draft


def test_a_press_handled_twice_picks_once_and_a_new_press_still_drops_the_pick():
    draft = Draft()
    draft.toggle("tg:1", press="q1")
    draft.toggle("tg:2", press="q2")
    draft.toggle("tg:2", press="q2")  # the same press again, after a restart
    assert draft.picks == ["tg:1", "tg:2"]
    draft.toggle("tg:2", press="q3")  # a new press of the same seat: dropped, as the leader asked
    assert draft.picks == ["tg:1"]


def test_a_draft_remembers_only_its_last_presses():
    draft = Draft()
    for i in range(PRESSES_KEPT + 5):
        draft.toggle(f"tg:{i % 2}", press=f"q{i}")
    assert len(draft.presses) == PRESSES_KEPT and draft.presses[-1] == f"q{PRESSES_KEPT + 4}"


def test_a_draft_kept_before_presses_were_remembered_reads_as_none_remembered():
    old = Draft.__new__(Draft)
    old.__dict__.update({"picks": ["tg:1"], "holder": None})  # a game row pickled before the field
    old.toggle("tg:2", press="q1")
    assert old.picks == ["tg:1", "tg:2"] and old.presses == ("q1",)
