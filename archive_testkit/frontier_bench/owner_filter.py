"""OwnerSeenFilter: a prototype seen filter held by one owner (machine) in its own process.

A classic Bloom filter in a numpy byte array memory-mapped from a file in the owner's data
dir. A batch of 16-byte URL fingerprints is tested and set in a few vectorized steps: each
fingerprint gives two words (h1, h2; 32 bits of each) and its k bit positions are
(h1 + i * h2) mod 2**32 scaled onto the m bits (multiply-shift: no division).
Fingerprints repeated within a batch count once (the first is new, the others are not).

"Checkpointed": the map is MAP_SHARED, so a process that dies leaves its bits in the page
cache; `flush` (msync) every `flush_every_s` seconds and at close makes them survive the
machine too. A machine that crashes loses up to that many seconds of bits: those URLs can be
queued again (refetched), never lost.

For bench/crawl_adds.py; not used by the crawler.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from frontier_service.frontier.bloom_sizing import sizing

_LOW32 = np.uint64(0xFFFFFFFF)


def filter_bytes(capacity: int, error_rate: float) -> int:
    """Bytes of the filter's file for `capacity` URLs at `error_rate` (a multiple of 8)."""
    bits, _ = sizing(capacity, error_rate)
    return -(-bits // 64) * 8


class OwnerSeenFilter:
    """A Bloom filter of URL fingerprints in `path`, sized for capacity at error_rate."""

    def __init__(self, path: Path, capacity: int, *, error_rate: float,
                 flush_every_s: float = 5.0) -> None:
        _, self.hashes = sizing(capacity, error_rate)
        size = filter_bytes(capacity, error_rate)
        if size * 8 > 1 << 32:
            raise ValueError("the prototype's positions are 32-bit: at most 512 MB")
        self.path = path
        self.bits = size * 8
        self.flush_every_s = flush_every_s
        fresh = not (path.exists() and path.stat().st_size == size)
        self.array = np.memmap(path, dtype=np.uint8, mode="w+" if fresh else "r+", shape=(size,))
        if fresh:  # allocate every page now, as Redis preallocates its bitmaps
            self.array[:] = 0
        self._bytes = self.array.view(np.ndarray)  # the same pages, without memmap's overhead
        self._bits = np.uint64(self.bits)
        self._steps = np.arange(self.hashes, dtype=np.uint64)
        self._flushed_at = time.monotonic()
        self.flushes = 0

    @property
    def size_bytes(self) -> int:
        return int(self.array.shape[0])

    def add_many(self, fingerprints: Sequence[bytes]) -> np.ndarray:
        """Test and set a batch; a bool array, True where a fingerprint was new."""
        n = len(fingerprints)
        if not n:
            return np.zeros(0, dtype=bool)
        raw = np.frombuffer(b"".join(fingerprints), dtype=np.uint64).reshape(n, 2)
        firsts = _first_occurrences(raw)
        unique = raw[firsts]
        # Double hashing on 32 bits (h2 odd), mapped onto [0, bits) by multiply-shift.
        h1 = unique[:, :1] & _LOW32
        h2 = (unique[:, 1:2] & _LOW32) | np.uint64(1)
        positions = (((h1 + h2 * self._steps) & _LOW32) * self._bits) >> np.uint64(32)
        byte = (positions >> np.uint64(3)).astype(np.intp)
        mask = np.left_shift(np.uint8(1), (positions & np.uint64(7)).astype(np.uint8))
        present = (self._bytes[byte] & mask) != 0
        new_unique = ~present.all(axis=1)
        if new_unique.any():
            _set_bits(self._bytes, positions[new_unique].ravel())
        flags = np.zeros(n, dtype=bool)
        flags[firsts[new_unique]] = True
        self.maybe_flush()
        return flags

    def maybe_flush(self) -> None:
        if time.monotonic() - self._flushed_at >= self.flush_every_s:
            self.flush()

    def flush(self) -> None:
        self.array.flush()
        self._flushed_at = time.monotonic()
        self.flushes += 1

    def close(self) -> None:
        self.flush()
        del self._bytes, self.array


def _first_occurrences(raw: np.ndarray) -> np.ndarray:
    """Row indexes of the first occurrence of each distinct 16-byte row, in order (rows
    sorted by their first word; equal rows are then adjacent but for a 2**-64 chance)."""
    order = np.argsort(raw[:, 0], kind="stable")
    ranked = raw[order]
    repeat = np.zeros(len(order), dtype=bool)
    repeat[1:] = (ranked[1:] == ranked[:-1]).all(axis=1)
    return np.sort(order[~repeat])


def _set_bits(array: np.ndarray, positions: np.ndarray) -> None:
    """Set these bit positions; several may fall in one byte (a fancy-index |= would keep
    only one of their masks), so the masks of each byte are OR-ed first."""
    ranked = np.sort(positions)
    byte = (ranked >> np.uint64(3)).astype(np.intp)
    mask = np.left_shift(np.uint8(1), (ranked & np.uint64(7)).astype(np.uint8))
    starts = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
    array[byte[starts]] |= np.bitwise_or.reduceat(mask, starts)
