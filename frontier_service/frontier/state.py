"""Domain coordination in Redis: leases, the ready queue, offsets in bytes, counters.

Every change two workers could race on is one Lua script (see lua_domain.py), so no domain
is ever leased to two workers, a crashed worker's domain comes back when its lease expires,
and appending to a domain that is being retired never loses it. A host gate per domain,
shared by every crawl on the Redis, makes two crawls of one host take turns: one holder at
a time, each starting no sooner than the last one's release allowed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from redis.asyncio import Redis

from frontier_service.frontier import lua_domain
from frontier_service.frontier.keys import FrontierKeys
from frontier_service.frontier.script_guard import guarded

HOST_GATES = "hostgate:"  # the default prefix of the host gates, shared by every crawl


class Release(IntEnum):
    """What releasing a leased domain did."""

    LEASE_LOST = 0
    READY = 1
    RETIRED = 2


class Renewal(IntEnum):
    """What renewing a held domain's lease found."""

    LOST = 0  # not ours any more (or its host is held by another crawl's process)
    RENEWED = 1
    WANTED = 2  # renewed; other crawls wait for the host: give it up soon


@dataclass(frozen=True, slots=True)
class Reschedule:
    """Release a leased domain: fetch again no sooner than next_fetch_at, from new_read_offset."""

    domain: str
    next_fetch_at: float
    new_read_offset: int


class FrontierState:
    """The atomic domain state machine of one crawl (`name` prefixes every key)."""

    def __init__(self, redis: Redis, name: str, *, max_expired_per_claim: int = 100,
                 shard: int = 0, shards: int = 1, steal_after_s: float = 2.0,
                 host_gates: str = HOST_GATES) -> None:
        """`shard` of `shards`: claims prefer the domains that hash to this shard and take
        others' once they have been due `steal_after_s` (one process per shard keeps its
        domains, and their keep-alive connections, unless it falls behind or dies).
        `host_gates`: the key prefix of the host gates, the same for every crawl that must
        share its politeness towards a host ('' = none: this crawl minds only itself)."""
        if not 0 <= shard < shards:
            raise ValueError(f"shard {shard} is not one of {shards} shards")
        if any(c.isspace() for c in host_gates) or any(c.isspace() for c in name):
            raise ValueError(f"crawl name {name!r} and host gate prefix {host_gates!r} "
                             "must hold no whitespace")
        self.redis = redis
        self.keys = FrontierKeys(name)
        self.host_gates = host_gates
        self._prefixes = [self.keys.domain_prefix, host_gates]  # ARGV[1], ARGV[2] of every script
        self.max_expired_per_claim = max_expired_per_claim
        self.affinity: list[str | int] = [shard, shards, repr(float(steal_after_s)), ""]
        self._keys = self.keys.coordination  # + the epoch key once `guard_epoch` is called
        self._claim = guarded(redis.register_script(lua_domain.CLAIM))
        self._reschedule = guarded(redis.register_script(lua_domain.RESCHEDULE))
        self._release_and_claim = guarded(redis.register_script(lua_domain.RELEASE_AND_CLAIM))
        self._retire = guarded(redis.register_script(lua_domain.RETIRE_IF_EXHAUSTED))
        self._renew = guarded(redis.register_script(lua_domain.RENEW))
        self._renew_many = guarded(redis.register_script(lua_domain.RENEW_MANY))
        self._record_appends = guarded(redis.register_script(lua_domain.RECORD_APPENDS))
        self._exclude = guarded(redis.register_script(lua_domain.EXCLUDE))
        self._include = guarded(redis.register_script(lua_domain.INCLUDE))
        self._expire_leases_of = guarded(redis.register_script(lua_domain.EXPIRE_LEASES_OF))

    def own_slots(self, machine: str, slots: int) -> None:
        """From now on claims take only the domains of the slots `machine` owns (and let go
        of those whose lines another machine's disk holds): see lua_machines.py."""
        keys = self.keys
        self.affinity[3] = f"{machine} {keys.slotmap} {slots} {keys.orphaned} {keys.orphans('')}"

    def guard_epoch(self) -> None:
        """From now on every script refuses (FrontierLost) once the epoch key is gone: a
        Redis that lost the crawl's state changes nothing until it is rebuilt from disk."""
        self._keys = [*self.keys.coordination, self.keys.epoch]

    async def claim(self, worker_id: str, now: float, lease_seconds: float,
                    *, max_domains: int) -> list[str]:
        """Lease up to max_domains due domains to worker_id; expired leases are reclaimed first."""
        domains = await self._claim(
            keys=self._keys,
            args=[*self._prefixes, worker_id, repr(now), repr(lease_seconds),
                  max_domains, self.max_expired_per_claim, *self.affinity])
        return [_text(d) for d in domains]

    async def reschedule(self, domain: str, worker_id: str, next_fetch_at: float,
                         *, new_read_offset: int, now: float | None = None) -> bool:
        """Release a domain we lease; False if the lease is no longer ours (nothing changed).

        An exhausted domain (read offset reached its size) is retired instead of re-queued.
        Its host gate, if ours, is freed: no crawl's next request before next_fetch_at.
        """
        released = await self.reschedule_many(
            worker_id, [Reschedule(domain, next_fetch_at, new_read_offset)], now=now)
        return released[0] is not Release.LEASE_LOST

    async def reschedule_many(self, worker_id: str, items: Sequence[Reschedule], *,
                              now: float | None = None) -> list[Release]:
        """reschedule for many leased domains in one atomic call (`now`: the clock the
        gates' expiry is counted from, default time.time())."""
        if not items:
            return []
        codes = await self._reschedule(
            keys=self._keys,
            args=[*self._prefixes, worker_id, _release_lines(items),
                  repr(time.time() if now is None else now)])
        return [Release(int(code)) for code in codes]

    async def release_and_claim(self, worker_id: str, items: Sequence[Reschedule], now: float,
                                *, lease_seconds: float, max_domains: int
                                ) -> tuple[list[Release], list[str]]:
        """reschedule_many, then claim, in one round trip: a worker's steady-state loop."""
        codes, domains = await self._release_and_claim(
            keys=self._keys,
            args=[*self._prefixes, worker_id, _release_lines(items), repr(now),
                  repr(lease_seconds), max_domains, self.max_expired_per_claim, *self.affinity])
        return [Release(int(code)) for code in codes], [_text(d) for d in domains]

    async def retire_if_exhausted(self, domain: str, worker_id: str,
                                  read_offset: int | None = None, *,
                                  next_fetch_at: float | None = None,
                                  now: float | None = None) -> bool:
        """Retire a domain we lease if nothing is left past read_offset; else keep the lease.

        Refuses (False) when URLs were appended after the worker read, or the lease is not ours.
        A retired domain's host gate, if ours, is freed (next request no sooner than
        next_fetch_at, when given).
        """
        code = await self._retire(
            keys=self._keys,
            args=[*self._prefixes, worker_id, domain,
                  "" if read_offset is None else int(read_offset),
                  repr(time.time() if now is None else now),
                  "" if next_fetch_at is None else repr(float(next_fetch_at))])
        return int(code) == 1

    async def renew(self, domain: str, worker_id: str, now: float, *, lease_seconds: float,
                    read_offset: int | None = None) -> bool:
        """Extend our lease (and checkpoint the read offset); False if the lease is not ours."""
        code = await self._renew(
            keys=self._keys,
            args=[*self._prefixes, worker_id, domain, repr(now), repr(lease_seconds),
                  "" if read_offset is None else int(read_offset)])
        return int(code) == 1

    async def renew_many(self, worker_id: str, offsets: Sequence[tuple[str, int]], now: float,
                         *, lease_seconds: float) -> list[Renewal]:
        """renew for many (domain, read_offset) in one atomic call; LOST where the lease is
        no longer ours, WANTED where other crawls wait for the host. Read offsets only move
        forward."""
        if not offsets:
            return []
        codes = await self._renew_many(
            keys=self._keys,
            args=[*self._prefixes, worker_id, repr(now), repr(lease_seconds),
                  "".join(f"{_checked(domain)} {int(offset)}\n" for domain, offset in offsets)])
        return [Renewal(int(code)) for code in codes]

    async def record_append(self, domain: str, end_offset: int, now: float, *, urls: int = 1) -> bool:
        """Note bytes appended to a domain's file; True if that made an idle domain ready."""
        return await self.record_appends(now, [(domain, end_offset, urls)]) == 1

    async def record_appends(self, now: float, appends: Sequence[tuple[str, int, int]], *,
                             offered: int = 0) -> int:
        """record_append for many (domain, end_offset, urls) in one call; returns domains readied.

        size = max(size, end_offset); a domain that is not ready, not leased and not excluded
        becomes ready, so an append racing a retirement never strands its URLs. `offered`
        (URLs tested, new or not) goes to the `urls_offered` counter.
        """
        if not appends and not offered:
            return 0
        return int(await self._record_appends(
            keys=self._keys,
            args=[*self._prefixes, repr(float(now)), _lines(appends), offered]))

    async def exclude(self, domain: str, reason: str) -> None:
        """Stop scheduling a domain (a lease in flight ends without re-queueing it)."""
        await self._exclude(keys=self._keys,
                            args=[*self._prefixes, domain, reason])

    async def include(self, domain: str, now: float) -> bool:
        """Lift an exclusion; True if the domain went back to ready."""
        return int(await self._include(keys=self._keys,
                                       args=[*self._prefixes, domain, repr(now)])) == 1

    async def expire_leases_of(self, worker_id: str) -> int:
        """End the leases of a worker known to be dead; returns how many it held.

        Its domains go back to ready at their last checkpointed offset on the next claim.
        """
        return int(await self._expire_leases_of(keys=self._keys,
                                                args=[*self._prefixes, worker_id]))

    async def read_offset(self, domain: str) -> int:
        value = await self.redis.hget(self.keys.domain(domain), "read_offset")
        return int(value or 0)

    async def count(self, name: str, amount: int = 1) -> None:
        await self.redis.hincrby(self.keys.counters, name, amount)

    async def counters(self) -> dict[str, int]:
        raw = await self.redis.hgetall(self.keys.counters)
        return {_text(k): int(v) for k, v in raw.items()}


_DOMAIN_TOKEN = re.compile(r"\S+")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _checked(domain: str) -> str:
    if _DOMAIN_TOKEN.fullmatch(domain) is None:
        raise ValueError(f"invalid domain key {domain!r}")
    return domain


def _lines(rows: Iterable[tuple[str, object, object]]) -> str:
    """The `a b c\n` blob the scripts parse; a domain key with whitespace is refused."""
    return "".join(f"{_checked(domain)} {second} {third}\n" for domain, second, third in rows)


def _release_lines(items: Sequence[Reschedule]) -> str:
    return _lines((i.domain, repr(float(i.next_fetch_at)), int(i.new_read_offset)) for i in items)
