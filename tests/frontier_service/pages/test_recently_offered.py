"""RecentlyOffered: the links a process offered lately, in a table of fixed size."""

from __future__ import annotations

import hashlib
import tracemalloc

import pytest

from frontier_service.pages.link_buffer import RecentlyOffered

pytestmark = pytest.mark.unit


def fingerprint(n: int) -> bytes:
    return hashlib.blake2b(str(n).encode(), digest_size=16).digest()


def test_a_fingerprint_is_offered_once_then_known_until_its_slot_is_taken() -> None:
    slots = 1 << 12
    recent = RecentlyOffered(slots=slots)
    prints = [fingerprint(n) for n in range(1000)]
    assert [recent.check_and_add(p) for p in prints] == [False] * 1000
    # A slot is the first 4 bytes (little-endian) modulo the slots; the last one in keeps it.
    holder = {int.from_bytes(p[:4], "little") % slots: p for p in prints}
    kept = set(holder.values())
    assert 800 < len(kept) < 1000  # some slots were shared: the test sees both cases
    assert all(recent.check_and_add(p) for p in prints if p in kept)
    assert not any(recent.check_and_add(p) for p in prints if p not in kept)


def test_a_fingerprint_never_offered_is_never_known() -> None:
    """Full of other fingerprints, it still says "new" for every new one (a wrong "known"
    would drop a link the crawl never queued)."""
    recent = RecentlyOffered(slots=1 << 10)
    for n in range(20_000):
        recent.check_and_add(fingerprint(n))
    assert not any(recent.check_and_add(fingerprint(n)) for n in range(20_000, 40_000))


def test_a_slot_taken_forgets_its_older_fingerprint() -> None:
    recent = RecentlyOffered(slots=1)
    first, second = fingerprint(1), fingerprint(2)
    assert not recent.check_and_add(first)
    assert not recent.check_and_add(second)
    assert not recent.check_and_add(first)  # forgotten: offered again, the seen filter decides


def test_memory_is_fixed_whatever_it_meets() -> None:
    recent = RecentlyOffered(slots=1 << 16)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(200_000):
            recent.check_and_add(fingerprint(n))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, grown


@pytest.mark.parametrize("slots", [0, -4, 3, 1000])
def test_slots_must_be_a_power_of_two(slots: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        RecentlyOffered(slots=slots)
