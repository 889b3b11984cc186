"""Samples as slices of the hash space: the share they cover, where, and how many copies."""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest

from archive_pipelines.blobstore.hash_prefixes import prefix_range
from archive_pipelines.replication.sampling import sample_fraction, sample_windows

SPACE = 16 ** 64


def width(low: str, high: str | None) -> int:
    return (SPACE if high is None else int(high.ljust(64, "0"), 16)) - int(low.ljust(64, "0"), 16)


@pytest.mark.unit
@pytest.mark.parametrize(("copies", "fraction", "minimum", "expected"), [
    (1_000_000, 0.01, 1000, 0.01),  # 1% is more than 1,000
    (50_000, 0.01, 1000, 0.02),  # 1,000 is more than 1%
    (800, 0.01, 1000, 1.0),  # fewer copies than the minimum: all of them
    (0, 0.01, 1000, 1.0),
    (1_000_000, None, 1000, 1.0),  # no sample: everything
    (1_000_000, 0.5, 0, 0.5),
])
def test_sample_fraction(copies: int, fraction: float | None, minimum: int,
                         expected: float) -> None:
    assert sample_fraction(copies, fraction=fraction, minimum=minimum) == pytest.approx(expected)


@pytest.mark.unit
@pytest.mark.parametrize("prefix", ["", "0", "a7", "ff", "f"])
@pytest.mark.parametrize("fraction", [0.001, 0.01, 0.3])
def test_windows_cover_the_fraction_spread_over_the_range(prefix: str, fraction: float) -> None:
    windows = sample_windows(prefix, fraction, rng=random.Random(7), strata=64)
    low, high = prefix_range(prefix)
    whole = width(low, high)
    assert len(windows) == 64
    assert sum(width(a, b) for a, b in windows) == pytest.approx(whole * fraction, rel=1e-6)
    ordered = sorted(windows)
    for (_a, b), (c, _d) in itertools.pairwise(ordered):
        assert b is not None and b <= c  # disjoint
    assert ordered[0][0] >= low and (high is None or (ordered[-1][1] or "g") <= high)
    part = whole // 64
    for i, (a, _b) in enumerate(ordered):  # one window in each equal part
        assert int(a, 16) - int(low.ljust(64, "0"), 16) >= i * part


@pytest.mark.unit
def test_a_whole_sample_is_the_whole_range() -> None:
    assert sample_windows("0a", 1.0, rng=random.Random(1)) == [("0a", "0b")]
    assert sample_windows(None, 1.0, rng=random.Random(1)) == [("", None)]


@pytest.mark.unit
def test_each_hash_is_drawn_with_the_sample_probability() -> None:
    hashes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(20_000)]
    rng = random.Random(3)
    drawn = 0
    for _ in range(20):
        windows = sample_windows(None, 0.05, rng=rng)
        drawn += sum(any(a <= h and (b is None or h < b) for a, b in windows)
                     for h in hashes[:2000])
    assert drawn / (20 * 2000) == pytest.approx(0.05, abs=0.01)


@pytest.mark.unit
def test_bad_fractions_are_refused() -> None:
    with pytest.raises(ValueError, match="fraction"):
        sample_fraction(10, fraction=-0.1)
    with pytest.raises(ValueError, match="lowercase hex"):
        sample_windows("XY", 0.5, rng=random.Random())
