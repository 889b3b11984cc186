"""Exact, compact records of fetched URLs: bucketed Redis hashes in listpack encoding.

A URL's 16-byte fingerprint picks a bucket `{name}:{n}` (bytes 0-3) and a field (bytes 4-11);
the value packs status, fetch time and a body-hash prefix into 14 bytes. Buckets stay under
`hash-max-listpack-entries`, so each record costs ~30 bytes instead of the ~200+ of a hash
per URL.
"""

from __future__ import annotations

import math
import struct
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from archive_pipelines.canonical_urls import canonical_url_and_domain

_VALUE = struct.Struct(">HI8s")
_DEFAULT_LISTPACK_ENTRIES = 128


@dataclass(frozen=True, slots=True)
class VisitedRecord:
    """One fetch of a URL; only the first 8 bytes of body_hash are kept."""

    url: str
    status: int
    fetched_at: int
    body_hash: bytes = b""


@dataclass(frozen=True, slots=True)
class Visit:
    """What the store remembers of a fetched URL."""

    status: int
    fetched_at: int
    body_hash_prefix: bytes


class VisitedStore:
    """Visited URLs in bucketed hashes; the bucket count is fixed when the store is created."""

    def __init__(self, redis: Redis, name: str, *, expected_records: int = 10_000_000) -> None:
        self.redis = redis
        self.name = name
        self.expected_records = expected_records
        self.buckets = 0
        self.listpack_entries = _DEFAULT_LISTPACK_ENTRIES

    @property
    def meta_key(self) -> str:
        return f"{self.name}:meta"

    async def open(self) -> VisitedStore:
        """Adopt the stored bucket count, or size buckets to stay under the listpack limit."""
        self.listpack_entries = await self._listpack_entries()
        per_bucket = max(8, min(256, self.listpack_entries * 3 // 4))
        buckets = max(1, math.ceil(self.expected_records / per_bucket))
        await self.redis.hsetnx(self.meta_key, "buckets", buckets)
        self.buckets = int(await self.redis.hget(self.meta_key, "buckets") or buckets)
        return self

    def locate(self, fingerprint: bytes) -> tuple[str, bytes]:
        """(bucket key, field) of a URL fingerprint."""
        bucket = int.from_bytes(fingerprint[:4], "little") % self.buckets
        return f"{self.name}:{bucket}", fingerprint[4:12]

    async def mark_many(self, records: Sequence[VisitedRecord], *,
                        fingerprints: Sequence[bytes] | None = None) -> int:
        """Store (or overwrite) visits; returns how many URLs were not visited before.
        `fingerprints`: the records' URLs' (url_fingerprint), when the caller has them."""
        if fingerprints is None:
            fingerprints = [canonical_url_and_domain(record.url)[2] for record in records]
        by_bucket: dict[str, dict[bytes, bytes]] = defaultdict(dict)
        for record, fingerprint in zip(records, fingerprints, strict=True):
            key, field = self.locate(fingerprint)
            by_bucket[key][field] = _VALUE.pack(
                min(max(record.status, 0), 0xFFFF), min(max(record.fetched_at, 0), 0xFFFFFFFF),
                record.body_hash[:8])
        if not by_bucket:
            return 0
        async with self.redis.pipeline(transaction=False) as pipe:
            for key, mapping in by_bucket.items():
                pipe.hset(key, mapping=mapping)  # type: ignore[arg-type]
            added = sum(int(n) for n in await pipe.execute())
        if added:
            await self.redis.hincrby(self.meta_key, "records", added)
        return added

    async def get(self, url: str) -> Visit | None:
        return (await self.get_many([url]))[0]

    async def get_many(self, urls: Sequence[str]) -> list[Visit | None]:
        located = [self.locate(canonical_url_and_domain(url)[2]) for url in urls]
        async with self.redis.pipeline(transaction=False) as pipe:
            for key, field in located:
                pipe.hget(key, field)
            values = await pipe.execute()
        return [None if value is None else Visit(*_VALUE.unpack(value)) for value in values]

    async def count(self) -> int:
        return int(await self.redis.hget(self.meta_key, "records") or 0)

    async def memory_bytes(self) -> int:
        """MEMORY USAGE summed over every bucket (a full walk: for tests and benchmarks)."""
        total = 0
        for first in range(0, self.buckets, 1000):
            async with self.redis.pipeline(transaction=False) as pipe:
                for bucket in range(first, min(first + 1000, self.buckets)):
                    pipe.memory_usage(f"{self.name}:{bucket}")
                total += sum(int(n or 0) for n in await pipe.execute())
        return total

    async def _listpack_entries(self) -> int:
        try:
            config = await self.redis.config_get("hash-max-listpack-entries")
        except ResponseError:  # CONFIG may be disabled on managed Redis
            return _DEFAULT_LISTPACK_ENTRIES
        for value in config.values():
            if value is not None:
                return int(value)
        return _DEFAULT_LISTPACK_ENTRIES
