"""How full the seen filter is, and the warnings a crawl gives as it nears its capacity.

The seen filter is a Bloom filter sized once, when the crawl's first process creates it in
Redis (`seen_capacity` URLs at `seen_error_rate`). It cannot grow. Past its capacity its false
positives climb: a new URL taken for one already seen is never queued, so the crawl silently
misses pages. The filter cannot say which URLs it dropped, so the crawl says early that it
is filling: once at 80% of capacity, and again at 100%, 150% and 200%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from frontier_service.frontier.bloom_sizing import blocked_false_positive_rate

WARN_AT = (0.8, 1.0, 1.5, 2.0)  # fractions of capacity at which a crawl warns, once each


@dataclass(frozen=True, slots=True)
class SeenFill:
    """URLs added to a filter of `capacity` with `bits` bits and `hashes` hashes (in blocks of
    `hashes` segments of `segment_bits` bits; 0: a classic Bloom filter, RedisBloom's)."""

    added: int
    capacity: int
    bits: int
    hashes: int
    segment_bits: int = 0

    @property
    def fraction(self) -> float:
        return self.added / max(self.capacity, 1)

    def false_positive_rate(self, added: int | None = None) -> float:
        """The chance that a new URL is taken for a seen one, after `added` URLs (default:
        now)."""
        n = self.added if added is None else added
        if n <= 0 or self.bits <= 0:
            return 0.0
        if self.segment_bits:
            return blocked_false_positive_rate(self.bits / n, self.hashes, self.segment_bits)
        return (1.0 - math.exp(-self.hashes * n / self.bits)) ** self.hashes

    def describe(self) -> str:
        return (f"seen filter: {self.added:,} URLs added, {self.fraction:.0%} of its capacity "
                f"{self.capacity:,} (a new URL is now taken for a seen one with probability "
                f"{self.false_positive_rate():.2%})")


class SeenCapacityWatch:
    """Says once per threshold (WARN_AT) that the filter is filling up; None otherwise."""

    def __init__(self, *, capacity: int, bits: int, hashes: int, segment_bits: int = 0,
                 thresholds: tuple[float, ...] = WARN_AT) -> None:
        self.capacity = capacity
        self.bits = bits
        self.hashes = hashes
        self.segment_bits = segment_bits
        self.thresholds = thresholds
        self._passed = 0  # thresholds already warned about

    def fill(self, added: int) -> SeenFill:
        return SeenFill(added=added, capacity=self.capacity, bits=self.bits, hashes=self.hashes,
                        segment_bits=self.segment_bits)

    def check(self, added: int) -> str | None:
        """The warning to give now that `added` URLs were added, or None."""
        fill = self.fill(added)
        crossed = sum(1 for t in self.thresholds if fill.fraction >= t)
        if crossed <= self._passed:
            return None
        self._passed = crossed
        at_capacity = fill.false_positive_rate(self.capacity)
        return (f"{fill.describe()}; at capacity that is {at_capacity:.2%}. Past it, new "
                f"URLs are increasingly dropped as already seen and never fetched. The filter "
                f"cannot grow: start the next crawl with a larger seen_capacity ([crawl] "
                f"seen_capacity in archive.toml or --seen-capacity), about 1.9 bytes of Redis "
                f"per URL at 0.1%.")
