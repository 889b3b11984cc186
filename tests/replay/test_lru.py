"""The size-bounded LRU behind the body and header caches."""

from __future__ import annotations

import pytest

from archive_pipelines.replay.lru import SizedLru

pytestmark = pytest.mark.unit


def test_it_evicts_the_least_recently_used_to_stay_within_its_bytes() -> None:
    cache: SizedLru[str, bytes] = SizedLru(10, size_of=len)
    assert cache.put("a", b"1234") and cache.put("b", b"1234")
    assert cache.get("a") == b"1234"  # a is now the most recent
    assert cache.put("c", b"1234")  # 12 bytes: b goes
    assert cache.get("b") is None and cache.get("a") == b"1234" and cache.get("c") == b"1234"
    assert cache.size == 8 and len(cache) == 2
    assert (cache.hits, cache.misses) == (3, 1)


def test_it_never_keeps_an_item_over_its_limit() -> None:
    cache: SizedLru[str, bytes] = SizedLru(100, size_of=len, max_item=5)
    assert not cache.put("big", b"123456")
    assert cache.get("big") is None and cache.size == 0


def test_replacing_a_key_counts_its_size_once() -> None:
    cache: SizedLru[str, bytes] = SizedLru(10, size_of=len)
    cache.put("a", b"12345678")
    cache.put("a", b"12")
    assert cache.size == 2 and len(cache) == 1
