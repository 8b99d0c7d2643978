"""Over many random games on both channels, nobody is told a secret that is not theirs.

Each test runs its games at once on one narrator as ``avalon run`` starts it: the engine, the real
Telegram gateway against the fake Bot API on loopback, the real email gateway sending through an
SMTP server on loopback; one in-process bus, one SQLite database. Mail *in* goes to the gateway's
inbound handler directly (the bytes a mail program sends, stamped as the receiving server stamps
them): a real IMAP server per game would not fit dozens of games in a test, and
tests/e2e/test_mixed_game.py and test_email_safety.py run that leg for real.

Every game has 5 to 10 players split between Telegram and mail (every fifth game by mail alone),
one of the three presets, a Lancelot variant (none, 1, 2, 3 in turn), and at random the Lady of the
Lake, Excalibur, anonymous votes, good may fail, the last word, the handed shot, Oberon known to
evil, the host's choice of optional roles and the group's language, each set through the host's
channel. Every player makes random legal moves (the rules core's ``legal_commands``) through their
own channel: the group's team picker and vote buttons, private buttons and private messages on
Telegram; links and typed replies by mail, each player in their own language. Evil players fail a
quest one time in four (so that many games reach the shot) and speak in the council before it.

Then ``secrets_check`` compares what every reader received (each group chat, each private chat,
each mailbox) with what the engine's event log lets that reader know; its docstring says what it
catches. The test seeds are printed with each game's set-up; the engine deals from a seed of its own
(so the deal differs from run to run), printed with each game's result."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from .secrets_check import check
from .secrets_run import play_all
from .secrets_spec import draw
from .secrets_stack import Stack, stack  # noqa: F401 - the fixture

#: The default run: game i has preset i % 3 and Lancelot variant i % 4 (every preset, every variant);
#: game 4 is played by mail alone.
QUICK = [7001, 7002, 7003, 7004, 7005, 7006, 7007, 7008]
#: More of the same under the slow marker (still part of the default suite): 30 games in all.
MORE = list(range(8101, 8123))


async def test_random_games_tell_no_reader_a_secret_that_is_not_theirs(stack):
    await play_and_check(stack, QUICK, first_index=0)


@pytest.mark.slow
async def test_more_random_games_tell_no_reader_a_secret_that_is_not_theirs(stack):
    await play_and_check(stack, MORE, first_index=len(QUICK))


async def play_and_check(stack: Stack, seeds: list[int], first_index: int) -> None:
    for i, seed in enumerate(seeds):
        print(draw(first_index + i, seed).describe())
    loop = asyncio.get_running_loop()
    started = loop.time()
    played = await play_all(stack, seeds, first_index=first_index, timeout=90 + 12 * len(seeds),
                            at_once=len(seeds))
    took = loop.time() - started
    found = check(played)
    kinds = Counter(e.event.type for p in played for e in p.log)
    for p in played:
        print(f"{p.spec.describe()}: engine seed {p.engine_seed}, {len(p.log)} events, {p.moves} moves, "
              f"winner {next(e.event.winner.value for e in p.log if e.event.type == 'game_ended')}")
    print(f"{len(played)} games in {took:.0f} s; {found.readers} readers, {found.texts} texts, "
          f"{found.lines_checked} lines checked against {found.secret_lines} secret lines of "
          f"{found.secret_events} private events; leaks {len(found.leaks)}; own secrets missing "
          f"{len(found.missing)}; private events: "
          + ", ".join(f"{k} {kinds[k]}" for k in ("role_assigned", "lady_result", "excalibur_used", "card_played",
                                                   "vote_cast", "conference_message", "shot_handed",
                                                   "merlin_accused", "last_word_spoken", "assassination_resolved",
                                                   "loyalty_card_revealed")))

    assert not found.leaks, "\n".join(found.leaks[:20])
    assert not found.missing, "\n".join(found.missing[:20])
    for p in played:
        seated = next(e.event.seats for e in p.log if e.event.type == "game_started")
        carded = {e.event.player for e in p.log if e.event.type == "role_assigned"}
        assert carded == set(seated), f"{p.spec.describe()}: a role card for each seat"
        assert all(p.transcripts.values()), f"{p.spec.describe()}: every reader was told something"
        channels = {s.channel for s in p.spec.seats}
        acted = {e.event.player for e in p.log if e.event.type == "player_voted"}
        assert acted == set(seated), f"{p.spec.describe()}: every seat voted, through {channels}"
    assert_nobody_else_was_written_to(stack, played)


def assert_nobody_else_was_written_to(stack: Stack, played) -> None:
    """The bot wrote only in the games' groups and their Telegram players' private chats, and the
    narrator mailed only their mail players."""
    chats = {p.spec.group_id for p in played if not p.spec.mail_only}
    chats |= {s.tg_id for p in played for s in p.spec.seats if s.channel == "telegram"}
    written = {call.chat_id for call in stack.fake.calls("sendMessage")}
    assert written <= chats, f"messages to chats outside the games: {written - chats}"
    addresses = {s.address for p in played for s in p.spec.seats if s.channel == "email"}
    mailed = set(stack.postbox.boxes)
    assert mailed <= addresses, f"mail to addresses outside the games: {mailed - addresses}"
