"""The per-owner seen filter prototype: no URL seen twice, none lost, kept across a reopen."""

from __future__ import annotations

import hashlib
from pathlib import Path

from archive_testkit.frontier_bench.owner_filter import OwnerSeenFilter, filter_bytes


def fingerprints(prefix: str, n: int) -> list[bytes]:
    return [hashlib.blake2b(f"{prefix}{i}".encode(), digest_size=16).digest() for i in range(n)]


def test_every_added_fingerprint_is_seen_again_even_when_bits_share_bytes(tmp_path: Path) -> None:
    # A small filter filled to capacity in large batches: many bits of one batch fall in the
    # same byte, and each must be set (a plain fancy-index |= keeps only one of them).
    seen = OwnerSeenFilter(tmp_path / "seen.bloom", 2_000, error_rate=0.01)
    fps = fingerprints("u", 2_000)
    new = sum(int(seen.add_many(fps[i:i + 1_000]).sum()) for i in range(0, 2_000, 1_000))
    assert new >= 2_000 - 40
    assert not seen.add_many(fps).any()


def test_repeats_within_a_batch_are_new_once(tmp_path: Path) -> None:
    seen = OwnerSeenFilter(tmp_path / "seen.bloom", 1_000, error_rate=0.001)
    a, b = fingerprints("x", 2)
    assert seen.add_many([a, b, a, a, b]).tolist() == [True, True, False, False, False]
    assert seen.add_many([b, a]).tolist() == [False, False]


def test_false_positives_near_the_error_rate_at_capacity(tmp_path: Path) -> None:
    # Testing sets bits too: 45,000 in, then 5,000 others take it from 90% to 100% full.
    seen = OwnerSeenFilter(tmp_path / "seen.bloom", 50_000, error_rate=0.01)
    seen.add_many(fingerprints("in", 45_000))
    others = fingerprints("out", 5_000)
    false_positives = sum(10 - int(seen.add_many(others[i:i + 10]).sum())
                          for i in range(0, 5_000, 10))
    assert false_positives / 5_000 < 0.012


def test_a_reopened_filter_keeps_its_bits(tmp_path: Path) -> None:
    path = tmp_path / "seen.bloom"
    seen = OwnerSeenFilter(path, 10_000, error_rate=0.001)
    fps = fingerprints("r", 500)
    assert seen.add_many(fps).all()
    seen.close()
    assert path.stat().st_size == filter_bytes(10_000, 0.001)
    again = OwnerSeenFilter(path, 10_000, error_rate=0.001)
    assert not again.add_many(fps).any()
    assert again.add_many(fingerprints("s", 10)).all()
