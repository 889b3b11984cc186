"""The seen filter: have we ever queued this URL? A Bloom filter in Redis.

RedisBloom's `BF.MADD`/`BF.MEXISTS` when the module is loaded; otherwise a Lua script over
sharded bitmap strings (plain Redis 7). Either way one call tests-and-sets a whole batch.
The bitmap layout is stored in `{name}:meta` the first time, so every process agrees on it.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from frontier_service.frontier import lua_seen
from frontier_service.frontier.bloom_sizing import blocked_bits, sizing
from frontier_service.frontier.script_guard import GuardedScript, guarded
from frontier_service.frontier.seen_capacity import SeenCapacityWatch

log = logging.getLogger(__name__)

Backend = Literal["auto", "bitmap", "bloom"]
_BF_CHUNK = 10_000
_LUA_CHUNK = 20_000


@dataclass(frozen=True, slots=True)
class BitmapLayout:
    """Where a fingerprint's bits live: `shards` strings of `blocks_per_shard` blocks."""

    hashes: int
    segment_bytes: int
    blocks: int
    shards: int

    @property
    def block_bytes(self) -> int:
        return self.hashes * self.segment_bytes

    @property
    def blocks_per_shard(self) -> int:
        return -(-self.blocks // self.shards)

    @property
    def shard_bytes(self) -> int:
        return self.blocks_per_shard * self.block_bytes

    @property
    def bits(self) -> int:
        return self.blocks * self.block_bytes * 8

    @property
    def stride(self) -> int:
        """Bytes of hash per URL: 4 pick the block, one per hash picks a bit."""
        return max(16, 4 + self.hashes)


def plan_layout(capacity: int, error_rate: float, *, segment_bytes: int = 32,
                max_shard_bytes: int = 64 << 20) -> BitmapLayout:
    """A layout holding `error_rate` at `capacity`, in shards of at most max_shard_bytes.

    Each hash costs Redis CPU on every add, so the layout takes the fewest hashes whose
    filter is no bigger than the textbook k's with 8-byte segments: with 32-byte segments
    that is 7 hashes instead of 10 at 0.1%, in slightly fewer bits.
    """
    if segment_bytes not in (1, 2, 4, 8, 16, 32):
        raise ValueError("segment_bytes must be a power of two <= 32 (one hash byte per bit)")
    if not 0 < max_shard_bytes <= 512 << 20:
        raise ValueError("a Redis string holds at most 512 MB")
    textbook = sizing(capacity, error_rate)[1]
    budget = max(blocked_bits(capacity, error_rate, textbook, segment_bits=64),
                 blocked_bits(capacity, error_rate, textbook, segment_bits=segment_bytes * 8))
    hashes = next(k for k in range(1, textbook + 1)
                  if blocked_bits(capacity, error_rate, k, segment_bits=segment_bytes * 8) <= budget)
    if hashes > lua_seen.MAX_HASHES:
        raise ValueError(f"error rate {error_rate} needs {hashes} hashes; "
                         f"the filter supports {lua_seen.MAX_HASHES}")
    bits = blocked_bits(capacity, error_rate, hashes, segment_bits=segment_bytes * 8)
    block_bytes = hashes * segment_bytes
    blocks = max(1, math.ceil(bits / (block_bytes * 8)))
    if blocks >= 1 << 32:
        raise ValueError("capacity too large for 32-bit block numbers")
    shards = max(1, math.ceil(blocks * block_bytes / max_shard_bytes))
    return BitmapLayout(hashes, segment_bytes, blocks, shards)


async def bloom_module_loaded(redis: Redis, probe_key: str) -> bool:
    """True if `BF.*` commands exist: MODULE LIST names RedisBloom, or a BF.EXISTS probe works."""
    try:
        modules = await redis.module_list()
    except ResponseError:
        modules = []
    for module in modules or []:
        name = module.get(b"name", module.get("name", b""))
        if (name.decode() if isinstance(name, bytes) else str(name)).lower() in ("bf", "bloom"):
            return True
    try:
        await redis.execute_command("BF.EXISTS", probe_key, "probe")
    except ResponseError as exc:
        return "unknown command" not in str(exc).lower()
    return True


class SeenFilter:
    """A Bloom filter of URL fingerprints sized for `capacity` URLs at `error_rate`."""

    def __init__(self, redis: Redis, name: str, capacity: int, *, error_rate: float,
                 backend: Backend = "auto", segment_bytes: int = 32,
                 max_shard_bytes: int = 64 << 20) -> None:
        self.redis = redis
        self.name = name
        self.capacity = capacity
        self.error_rate = error_rate
        self.requested_backend = backend
        self.backend: Literal["bitmap", "bloom"] = "bitmap"
        self.layout = plan_layout(capacity, error_rate, segment_bytes=segment_bytes,
                                  max_shard_bytes=max_shard_bytes)
        self._script = self._script_for(self.layout)

    @property
    def meta_key(self) -> str:
        return f"{self.name}:meta"

    @property
    def bloom_key(self) -> str:
        return f"{self.name}:bf"

    @property
    def shard_keys(self) -> list[str]:
        return [f"{self.name}:{i}" for i in range(self.layout.shards)]

    async def open(self) -> SeenFilter:
        """Pick the backend, then create the filter or adopt the one already in Redis."""
        stored = await self._stored_meta()
        if stored:
            self._adopt(stored)
        else:
            self.backend = await self._choose_backend()
            stored = await self._create_meta()
            self._adopt(stored)
        if self.backend == "bloom":
            try:
                await self.redis.execute_command("BF.RESERVE", self.bloom_key,
                                                 self.error_rate, self.capacity)
            except ResponseError as exc:
                if "exists" not in str(exc).lower():
                    raise
        else:
            await self.redis.eval(lua_seen.PREALLOCATE, len(self.shard_keys),
                                  *self.shard_keys, self.layout.shard_bytes)
        return self

    def capacity_watch(self) -> SeenCapacityWatch:
        """Warnings as the filter (as opened: the layout in Redis) nears its capacity."""
        if self.backend == "bloom":  # RedisBloom sizes its own: a textbook filter's bits
            bits, hashes = sizing(self.capacity, self.error_rate)
            return SeenCapacityWatch(capacity=self.capacity, bits=bits, hashes=hashes)
        layout = self.layout
        return SeenCapacityWatch(capacity=self.capacity, bits=layout.bits, hashes=layout.hashes,
                                 segment_bits=layout.segment_bytes * 8)

    async def add_many(self, fingerprints: Sequence[bytes]) -> list[bool]:
        """Add fingerprints; True where one was new. Duplicates within the batch count once."""
        return await self._run(fingerprints, add=True)

    async def contains_many(self, fingerprints: Sequence[bytes]) -> list[bool]:
        """True where a fingerprint may have been added (no false negatives)."""
        return await self._run(fingerprints, add=False)

    async def memory_bytes(self) -> int:
        keys = [self.bloom_key] if self.backend == "bloom" else self.shard_keys
        total = 0
        for key in keys:
            total += int(await self.redis.memory_usage(key) or 0)
        return total

    async def _run(self, fingerprints: Sequence[bytes], *, add: bool) -> list[bool]:
        if not fingerprints:
            return []
        if self.backend == "bloom":
            command = "BF.MADD" if add else "BF.MEXISTS"
            flags: list[bool] = []
            for i in range(0, len(fingerprints), _BF_CHUNK):
                chunk = fingerprints[i:i + _BF_CHUNK]
                replies = await self.redis.execute_command(command, self.bloom_key, *chunk)
                flags += [bool(int(reply)) for reply in replies]
            return flags
        layout = self.layout
        offsets, masks = lua_seen.hash_byte_tables(layout.segment_bytes)
        flags = []
        for i in range(0, len(fingerprints), _LUA_CHUNK):
            chunk = fingerprints[i:i + _LUA_CHUNK]
            if layout.stride == 16:
                blob = b"".join(chunk)
            else:  # more than 12 hashes: stretch each fingerprint
                blob = b"".join(hashlib.blake2b(fp, digest_size=layout.stride).digest()
                                for fp in chunk)
            reply = await self._script(
                keys=self.shard_keys,
                args=[layout.blocks, layout.stride, "1" if add else "0", blob,
                      blob.translate(offsets), blob.translate(masks)])
            flags += [byte == 49 for byte in reply]  # b"1"
        return flags

    async def _stored_meta(self) -> dict[str, str]:
        raw = await self.redis.hgetall(self.meta_key)
        return {_text(k): _text(v) for k, v in raw.items()}

    async def _choose_backend(self) -> Literal["bitmap", "bloom"]:
        if self.requested_backend == "bitmap":
            return "bitmap"
        loaded = await bloom_module_loaded(self.redis, f"{self.name}:probe")
        if self.requested_backend == "bloom" and not loaded:
            raise RuntimeError("backend='bloom' asked for, but RedisBloom (BF.*) is not loaded")
        return "bloom" if loaded else "bitmap"

    async def _create_meta(self) -> dict[str, str]:
        layout = self.layout
        fields = {"backend": self.backend, "capacity": self.capacity,
                  "error_rate": repr(self.error_rate), "hashes": layout.hashes,
                  "segment_bytes": layout.segment_bytes, "blocks": layout.blocks,
                  "shards": layout.shards}
        args = [str(part) for item in fields.items() for part in item]
        raw = await self.redis.eval(lua_seen.CREATE_META, 1, self.meta_key, *args)
        return {_text(raw[i]): _text(raw[i + 1]) for i in range(0, len(raw), 2)}

    def _adopt(self, meta: dict[str, str]) -> None:
        """Use the layout already in Redis, whatever this process was configured with."""
        stored = BitmapLayout(int(meta["hashes"]), int(meta["segment_bytes"]),
                              int(meta["blocks"]), int(meta["shards"]))
        if stored != self.layout or int(meta["capacity"]) != self.capacity:
            log.warning("seen filter %s already exists with capacity %s, error rate %s; "
                        "using it", self.name, meta["capacity"], meta["error_rate"])
        self.backend = "bloom" if meta["backend"] == "bloom" else "bitmap"
        self.capacity = int(meta["capacity"])
        self.error_rate = float(meta["error_rate"])
        self.layout = stored
        self._script = self._script_for(stored)

    def _script_for(self, layout: BitmapLayout) -> GuardedScript:
        return guarded(self.redis.register_script(
            lua_seen.test_and_set(layout.hashes, layout.segment_bytes)))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
