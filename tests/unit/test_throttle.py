"""The per-user flood bucket (``shared/throttle.py``) with a clock the test moves by hand: how many
commands pass at once and over time, what a refused user is told to wait, that a user is told once
per refusal window, that one user's flood costs nobody else anything, and that a million distinct
users never grow its memory past its bound."""

from __future__ import annotations

import pytest

from avalon.shared.config import Settings
from avalon.shared.throttle import Throttle, from_settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_burst_passes_at_once_and_the_next_command_is_refused_with_the_wait(clock):
    throttle = Throttle(rate=2, burst=5, clock=clock)
    verdicts = [throttle.check("ann") for _ in range(8)]
    assert [v.allowed for v in verdicts] == [True] * 5 + [False] * 3
    assert verdicts[5].retry_after == pytest.approx(0.5)  # one token comes back every 1/rate seconds
    assert verdicts[5].wait_seconds == 1
    assert (throttle.allowed, throttle.refused) == (5, 3)


def test_tokens_come_back_at_the_rate_and_never_beyond_the_burst(clock):
    throttle = Throttle(rate=1, burst=3, clock=clock)
    assert sum(throttle.check("ann").allowed for _ in range(10)) == 3
    clock.now += 2.5  # two and a half tokens back: two commands pass
    assert [throttle.check("ann").allowed for _ in range(3)] == [True, True, False]
    assert throttle.check("ann").retry_after == pytest.approx(0.5)
    clock.now += 3600  # an hour idle: the bucket is full, not 3600 tokens deep
    assert sum(throttle.check("ann").allowed for _ in range(10)) == 3


def test_a_sustained_flood_gets_the_rate_through_and_no_more(clock):
    throttle = Throttle(rate=1, burst=20, clock=clock)
    passed = 0
    for _ in range(600):  # 10 messages a second for a minute
        passed += throttle.check("flooder").allowed
        clock.now += 0.1
    assert 20 + 59 <= passed <= 20 + 60


def test_the_first_refusal_of_a_window_says_so_and_the_next_window_opens_after_it(clock):
    throttle = Throttle(rate=1, burst=4, clock=clock)  # a window lasts burst/rate = 4 s
    assert throttle.quiet == 4
    for _ in range(4):
        throttle.check("ann")
    refusals = [throttle.check("ann") for _ in range(50)]
    assert [v.first for v in refusals] == [True] + [False] * 49, "told once, not once per message"
    clock.now += 3.5  # still in the window (and the tokens that came back are spent again)
    later = [throttle.check("ann") for _ in range(10)]
    assert sum(v.allowed for v in later) == 3 and not any(v.first for v in later)
    clock.now += 0.6  # the window has passed: the next refusal is told again
    again = [throttle.check("ann") for _ in range(10)]
    assert sum(v.first for v in again) == 1 and next(v for v in again if not v.allowed).first


def test_a_longer_window_is_kept_whatever_the_rate(clock):
    """The email gateway asks for an hour at least: one answer an hour to a flooding address."""
    throttle = from_settings(Settings(throttle_rate=1, throttle_burst=2), quiet_at_least=3600, clock=clock)
    told = 0
    for _ in range(7200):  # two mails a second for two hours
        told += throttle.check("zed@example.org").first + throttle.check("zed@example.org").first
        clock.now += 1
    assert told == 2


def test_one_users_flood_costs_another_user_nothing(clock):
    throttle = Throttle(rate=1, burst=5, clock=clock)
    for _ in range(1000):
        throttle.check(("telegram", 1))
    assert all(throttle.check(("telegram", 2)).allowed for _ in range(5))
    assert all(throttle.check(("email", 1)).allowed for _ in range(5)), "keyed by channel too"


def test_zero_turns_it_off(clock):
    for throttle in (Throttle(0, 20, clock=clock), Throttle(1, 0, clock=clock),
                     from_settings(Settings(throttle_rate=0), clock=clock)):
        assert throttle.off
        assert all(throttle.check("ann").allowed for _ in range(10_000))
        assert len(throttle) == 0


def test_the_defaults_are_a_burst_of_20_and_one_a_second_and_a_negative_setting_is_refused():
    assert (Settings().throttle_rate, Settings().throttle_burst) == (1.0, 20)
    with pytest.raises(ValueError):
        Settings(throttle_rate=-1)
    with pytest.raises(ValueError):
        Settings(throttle_burst=-5)


def test_a_million_distinct_users_at_once_keep_no_more_than_the_cap(clock):
    throttle = Throttle(rate=1, burst=20, clock=clock, max_keys=1000)
    for user in range(1_000_000):
        assert throttle.check(user).allowed
        if user % 1000 == 0:
            assert len(throttle) <= 1000
    assert len(throttle) == 1000
    flooder = 999_999  # among the most recent: still remembered, still throttled
    assert sum(throttle.check(flooder).allowed for _ in range(30)) == 19


def test_idle_users_are_forgotten_as_time_passes(clock):
    throttle = Throttle(rate=1, burst=5, clock=clock)
    for user in range(500):  # at once
        throttle.check(user)
    assert len(throttle) == 500
    clock.now += 10  # every bucket is full again and no window is open: nothing to remember
    for user in range(500, 1000):  # newcomers, one every 10 ms, sweep the idle ones away as they come
        throttle.check(user)
        clock.now += 0.01
    assert len(throttle) <= 101, "only those seen in the last second (a bucket refills in 1 s) are kept"


def test_a_user_in_a_refusal_window_is_not_forgotten_early(clock):
    """Forgetting a refused user while their window is open would tell them again at once."""
    throttle = Throttle(rate=1, burst=2, clock=clock, quiet=3600)
    for _ in range(3):
        throttle.check("flooder")
    clock.now += 60  # the bucket is full again, but the window lasts an hour
    for user in range(100):
        throttle.check(user)
    for _ in range(2):
        assert throttle.check("flooder").allowed
    assert not throttle.check("flooder").first


async def test_both_gateways_take_the_bucket_from_the_settings_and_mail_keeps_an_hour_between_answers(tmp_path):
    from avalon.services.email_gateway.main import EmailRunner
    from avalon.services.telegram_gateway.main import TelegramRunner
    from avalon.shared.ops import readiness

    settings = Settings(telegram_bot_token="123456:TEST", throttle_rate=0.5, throttle_burst=7,
                        database_url=f"sqlite+aiosqlite:///{tmp_path / 'a.db'}", email_address="narrator@example.org",
                        email_secret="x" * 16, imap_user="narrator", imap_password="secret",
                        smtp_host="127.0.0.1", imap_host="127.0.0.1")
    telegram = TelegramRunner(settings, bus=None)
    email = EmailRunner(settings, bus=None)
    try:
        for throttle in (telegram.gateway.throttle, email.gateway.inbound.throttle):
            assert (throttle.rate, throttle.burst) == (0.5, 7)
        assert telegram.gateway.throttle.quiet == 14  # burst / rate
        assert email.gateway.inbound.throttle.quiet == 3600
    finally:
        await telegram.bot.session.close()
        await email.engine.dispose()
        readiness.unregister("telegram")
        readiness.unregister("email")
