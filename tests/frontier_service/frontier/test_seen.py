"""The seen filter on plain Redis 7: sizing, no false negatives, measured false positives."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from frontier_service.frontier import lua_seen
from frontier_service.frontier.bloom_sizing import (
    blocked_bits,
    blocked_false_positive_rate,
    sizing,
)
from frontier_service.frontier.seen import (
    BitmapLayout,
    SeenFilter,
    bloom_module_loaded,
    plan_layout,
)
from tests.frontier_service.frontier.helpers import connect


def fingerprints(tag: str, n: int) -> list[bytes]:
    return [hashlib.blake2b(f"{tag}{i}".encode(), digest_size=16).digest() for i in range(n)]


@pytest.mark.unit
def test_sizing_for_160m_urls_at_a_tenth_of_a_percent() -> None:
    bits, hashes = sizing(160_000_000, 0.001)
    assert hashes == 10
    assert bits / 8 == pytest.approx(290e6, rel=0.03)  # ~288 MB, not the seed's 2 GB
    assert sizing(1_000, 0.01) == (9_586, 7)


@pytest.mark.unit
def test_blocked_layout_pays_a_few_percent_to_keep_the_rate() -> None:
    bits, hashes = sizing(160_000_000, 0.001)
    blocked = blocked_bits(160_000_000, 0.001, hashes, segment_bits=64)
    assert 1.0 < blocked / bits < 1.10
    assert blocked_false_positive_rate(blocked / 160e6, hashes, 64) <= 0.001
    layout = plan_layout(160_000_000, 0.001)
    assert layout.shards * layout.shard_bytes < 330e6
    assert layout.shard_bytes <= 64 << 20 and layout.shards == 5
    with pytest.raises(ValueError):
        plan_layout(1_000, 0.01, segment_bytes=3)


def test_plain_redis_has_no_bloom_module_and_falls_back(redis_url: str, crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            assert not await bloom_module_loaded(redis, f"{crawl_name}:probe")
            seen = await SeenFilter(redis, f"{crawl_name}:seen", 1_000, error_rate=0.01).open()
            assert seen.backend == "bitmap"
            with pytest.raises(RuntimeError, match="RedisBloom"):
                await SeenFilter(redis, f"{crawl_name}:other", 1_000, error_rate=0.01,
                                 backend="bloom").open()

    asyncio.run(main())


def test_no_false_negatives_and_the_configured_false_positive_rate(
        redis_url: str, crawl_name: str) -> None:
    added, fresh = fingerprints("added-", 100_000), fingerprints("fresh-", 100_000)

    async def main() -> tuple[list[bool], list[bool], list[bool], list[bool]]:
        async with connect(redis_url) as redis:
            seen = await SeenFilter(redis, f"{crawl_name}:seen", 100_000, error_rate=0.001).open()
            first = []
            for i in range(0, len(added), 1_000):
                first += await seen.add_many(added[i:i + 1_000])
            again = await seen.add_many(added)
            present = await seen.contains_many(added)
            false_hits = await seen.contains_many(fresh)
            return first, again, present, false_hits

    first, again, present, false_hits = asyncio.run(main())
    assert sum(first) > 99_900  # only a few false "already seen" while filling up
    assert not any(again)  # no false negatives
    assert all(present)
    rate = sum(false_hits) / len(fresh)
    assert 0.0004 < rate < 0.002, rate


def test_duplicates_within_one_batch_count_once(redis_url: str, crawl_name: str) -> None:
    a, b = fingerprints("x", 2)

    async def main() -> list[bool]:
        async with connect(redis_url) as redis:
            seen = await SeenFilter(redis, f"{crawl_name}:seen", 1_000, error_rate=0.001).open()
            return await seen.add_many([a, b, a, b, a])

    assert asyncio.run(main()) == [True, True, False, False, False]


def test_sharded_layout_and_many_hashes(redis_url: str, crawl_name: str) -> None:
    """Small shards force several keys; a tiny error rate needs more than 12 hash bytes."""
    items = fingerprints("s", 5_000)

    async def main() -> None:
        async with connect(redis_url) as redis:
            seen = await SeenFilter(redis, f"{crawl_name}:seen", 5_000, error_rate=1e-6,
                                    segment_bytes=8, max_shard_bytes=4_096).open()
            assert seen.layout.shards > 3 and seen.layout.hashes > 12
            assert all(await seen.add_many(items))
            assert not any(await seen.add_many(items))
            assert not any(await seen.contains_many(fingerprints("t", 5_000)))
            for key in seen.shard_keys:
                assert await redis.strlen(key) == seen.layout.shard_bytes

    asyncio.run(main())


def test_a_second_process_adopts_the_stored_layout(redis_url: str, crawl_name: str) -> None:
    items = fingerprints("p", 100)

    async def main() -> None:
        async with connect(redis_url) as redis:
            first = await SeenFilter(redis, f"{crawl_name}:seen", 10_000, error_rate=0.001).open()
            await first.add_many(items)
            second = await SeenFilter(redis, f"{crawl_name}:seen", 50_000, error_rate=0.01).open()
            assert second.layout == first.layout and second.capacity == 10_000
            assert not any(await second.add_many(items))
            assert await second.memory_bytes() >= second.layout.shard_bytes

    asyncio.run(main())


def test_layout_takes_the_fewest_hashes_that_cost_no_memory() -> None:
    textbook = plan_layout(2_000_000, 0.001, segment_bytes=8)
    layout = plan_layout(2_000_000, 0.001)
    assert textbook.hashes == 10 and layout.hashes == 7 and layout.segment_bytes == 32
    assert layout.blocks * layout.block_bytes <= textbook.blocks * textbook.block_bytes
    bits_per_url = layout.blocks * layout.block_bytes * 8 / 2_000_000
    assert blocked_false_positive_rate(bits_per_url, 7, 256) <= 0.001
    with pytest.raises(ValueError, match="hashes"):
        lua_seen.test_and_set(lua_seen.MAX_HASHES + 1, 8)


def bits_of(fingerprint: bytes, layout: BitmapLayout) -> tuple[int, list[int]]:
    """Reference model of the blocked layout: (shard, bit numbers in that shard's string)."""
    block = int.from_bytes(fingerprint[:4], "little") % layout.blocks
    shard, index = block % layout.shards, block // layout.shards
    first_bit = index * layout.block_bytes * 8
    bits = []
    for i in range(layout.hashes):
        v = fingerprint[4 + i]
        byte = i * layout.segment_bytes + v % layout.segment_bytes
        bits.append(first_bit + byte * 8 + (v // layout.segment_bytes) % 8)
    return shard, bits


@pytest.mark.parametrize("segment_bytes", [8, 32])
def test_bits_set_match_the_layout(redis_url: str, crawl_name: str,
                                   segment_bytes: int) -> None:
    """The script sets exactly the layout's bits: filters made before it keep working."""
    items = fingerprints(f"b{segment_bytes}", 300)

    async def main() -> None:
        async with connect(redis_url) as redis:
            seen = await SeenFilter(redis, f"{crawl_name}:seen", 2_000, error_rate=0.001,
                                    segment_bytes=segment_bytes, max_shard_bytes=1_024).open()
            layout = seen.layout
            assert layout.shards > 1
            assert all(await seen.add_many(items))
            expected: dict[int, set[int]] = {}
            for fp in items:
                shard, bits = bits_of(fp, layout)
                expected.setdefault(shard, set()).update(bits)
            for shard, key in enumerate(seen.shard_keys):
                raw = await redis.get(key)
                assert raw is not None
                # BITFIELD-style numbering: bit 0 is the lowest bit of byte 0.
                found = {i * 8 + b for i, byte in enumerate(raw) for b in range(8)
                         if byte >> b & 1}
                assert found == expected.get(shard, set())
            # A process opened with the other default adopts the stored layout.
            other = await SeenFilter(redis, f"{crawl_name}:seen", 2_000, error_rate=0.001).open()
            assert other.layout == layout
            assert not any(await other.add_many(items))

    asyncio.run(main())
