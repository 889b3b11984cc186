"""Stable pseudo-randomness: the same (seed, parts) always gives the same numbers.

Python's hash() is salted per process, so everything is derived from blake2b instead.
"""

from __future__ import annotations

import hashlib
import random


def stable_int(seed: int, *parts: object) -> int:
    """A 64-bit integer determined only by the seed and the parts."""
    key = "\x1f".join([str(seed), *map(str, parts)]).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def stable_fraction(seed: int, *parts: object) -> float:
    """A float in [0, 1) determined only by the seed and the parts."""
    return stable_int(seed, *parts) / 2**64


def stable_rng(seed: int, *parts: object) -> random.Random:
    """A random.Random seeded from the seed and the parts."""
    return random.Random(stable_int(seed, *parts))


def below(rng: random.Random, n: int) -> int:
    """A uniform int in [0, n): cheaper than rng.randrange on hot paths."""
    return int(rng.random() * n)
