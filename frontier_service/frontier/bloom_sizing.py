"""Bloom filter sizing: the textbook formula, and the blocked layout's correction."""

from __future__ import annotations

import math


def sizing(capacity: int, error_rate: float) -> tuple[int, int]:
    """(bits, hashes) of a classic Bloom filter: m = -n ln p / (ln 2)^2, k = m/n ln 2.

    160M URLs at 0.1% need 2.30e9 bits (~288 MB) and 10 hashes.
    """
    if capacity <= 0 or not 0 < error_rate < 1:
        raise ValueError("capacity must be > 0 and error_rate in (0, 1)")
    bits = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
    hashes = max(1, round(bits / capacity * math.log(2)))
    return bits, hashes


def blocked_false_positive_rate(bits_per_item: float, hashes: int, segment_bits: int) -> float:
    """False-positive rate of a blocked, partitioned Bloom filter.

    Each item picks one block of `hashes` segments of `segment_bits` bits and sets one bit
    per segment. Block loads are Poisson with mean `hashes * segment_bits / bits_per_item`.
    """
    mean = hashes * segment_bits / bits_per_item
    total, weight, load = 0.0, math.exp(-mean), 0
    while load < mean * 6 + 60:
        total += weight * (1 - (1 - 1 / segment_bits) ** load) ** hashes
        load += 1
        weight *= mean / load
    return total


def blocked_bits(capacity: int, error_rate: float, hashes: int, *, segment_bits: int) -> int:
    """Bits the blocked layout needs to keep `error_rate` at `capacity` (a few % over sizing)."""
    low = sizing(capacity, error_rate)[0] / capacity
    high = low * 2
    while blocked_false_positive_rate(high, hashes, segment_bits) > error_rate:
        high *= 2
    for _ in range(60):
        middle = (low + high) / 2
        if blocked_false_positive_rate(middle, hashes, segment_bits) > error_rate:
            low = middle
        else:
            high = middle
    return math.ceil(high * capacity)
