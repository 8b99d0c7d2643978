"""Per-user flood throttling: a token bucket per key (``(channel, user)``), in each gateway's memory.

Each key starts with ``burst`` tokens; a command takes one; tokens come back at ``rate`` a second,
up to ``burst``. A command finding less than one token is refused, with the seconds until the
next one (``retry_after``). The refusals of a key come in *windows*: the first refusal opens one
(``quiet`` seconds long: by default the time a drained bucket takes to fill again) and says so
(``first``), so a gateway tells the user once, not once per message, and stays silent until the
window has passed.

Memory stays bounded: a key whose bucket is full again and whose window has passed is the same as
a key never seen, so it is forgotten (the least recently used keys are looked at on every call);
past ``max_keys`` the least recently used key is forgotten anyway (it starts afresh: lenient).
The clock is injectable (``clock``: seconds, monotonic), so tests need no sleeping.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Hashable

#: Keys kept at most (about 300 bytes each: 10,000 keys are 3 MB).
MAX_KEYS = 10_000
#: Keys looked at for forgetting on each call (amortized: one call adds at most one key).
SWEEP = 4


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the throttle says of one command."""

    allowed: bool
    retry_after: float = 0.0  # refused: seconds until one more command of this key would pass
    first: bool = False  # refused: the first refusal of a new window (tell the user now, then not again)

    @property
    def wait_seconds(self) -> int:
        """``retry_after`` in whole seconds, at least 1 (what a user is told to wait)."""
        return max(1, math.ceil(self.retry_after))


ALLOWED = Verdict(True)


class _Bucket:
    __slots__ = ("tokens", "at", "quiet_until")

    def __init__(self, tokens: float, at: float) -> None:
        self.tokens = tokens
        self.at = at
        self.quiet_until = -math.inf


class Throttle:
    """A token bucket per key. ``rate`` tokens a second, ``burst`` at most; either 0: off (every
    command passes). ``quiet``: the length of a refusal window (default ``burst / rate``)."""

    def __init__(self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
                 quiet: float | None = None, max_keys: int = MAX_KEYS) -> None:
        if rate < 0 or burst < 0 or max_keys < 1:
            raise ValueError("rate and burst must be 0 (off) or more, max_keys at least 1")
        self.rate = float(rate)
        self.burst = int(burst)
        self.clock = clock
        self.quiet = (self.burst / self.rate if self.rate else 0.0) if quiet is None else float(quiet)
        self.max_keys = max_keys
        self._buckets: OrderedDict[Hashable, _Bucket] = OrderedDict()
        self.allowed = 0  # commands let through, since start (all keys)
        self.refused = 0  # commands refused, since start (all keys)

    @property
    def off(self) -> bool:
        return self.rate <= 0 or self.burst <= 0

    def __len__(self) -> int:
        """Keys remembered now."""
        return len(self._buckets)

    def check(self, key: Hashable) -> Verdict:
        """Take a token for ``key``: allowed, or refused with the wait and whether it opens a window."""
        if self.off:
            self.allowed += 1
            return ALLOWED
        now = self.clock()
        self._forget_idle(now)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            bucket.tokens = min(float(self.burst), bucket.tokens + max(0.0, now - bucket.at) * self.rate)
            bucket.at = max(bucket.at, now)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            self.allowed += 1
            return ALLOWED
        self.refused += 1
        first = now >= bucket.quiet_until
        if first:
            bucket.quiet_until = now + self.quiet
        return Verdict(False, (1.0 - bucket.tokens) / self.rate, first)

    def _idle(self, bucket: _Bucket, now: float) -> bool:
        """Full again and out of its window: the same as a key never seen."""
        full = bucket.tokens + max(0.0, now - bucket.at) * self.rate >= self.burst
        return full and now >= bucket.quiet_until

    def _forget_idle(self, now: float) -> None:
        for _ in range(SWEEP):
            if not self._buckets:
                return
            key, bucket = next(iter(self._buckets.items()))
            if not self._idle(bucket, now):
                return
            del self._buckets[key]


def from_settings(settings, *, quiet_at_least: float = 0.0, clock: Callable[[], float] = time.monotonic) -> Throttle:
    """The throttle ``THROTTLE_RATE`` and ``THROTTLE_BURST`` ask for (off when either is 0); a
    refusal window lasts at least ``quiet_at_least`` seconds (the email gateway: an hour)."""
    throttle = Throttle(settings.throttle_rate, settings.throttle_burst, clock=clock)
    throttle.quiet = max(throttle.quiet, quiet_at_least)
    return throttle
