"""Per-domain facts that need no coordination: robots.txt cache, fetch statistics, a snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from frontier_service.frontier.keys import FrontierKeys


@dataclass(frozen=True, slots=True)
class DomainInfo:
    """A snapshot of a domain's hash (offsets and size in bytes)."""

    domain: str
    read_offset: int
    size: int
    next_fetch_at: float
    state: str
    lease_owner: str
    lease_until: float
    excluded: bool
    excluded_reason: str
    pages_fetched: int
    fetch_errors: int
    last_response_ms: float

    @property
    def pending_bytes(self) -> int:
        return max(0, self.size - self.read_offset)


@dataclass(frozen=True, slots=True)
class CachedRobots:
    body: str
    expires_at: float


_INFO_FIELDS = ("read_offset", "size", "next_fetch_at", "state", "lease_owner", "lease_until",
                "excluded", "excluded_reason", "pages_fetched", "fetch_errors",
                "last_response_ms")


def _str(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else value


class DomainMeta:
    """robots.txt bodies, fetch counts and response times kept in the domain hashes."""

    def __init__(self, redis: Redis, name: str) -> None:
        self.redis = redis
        self.keys = FrontierKeys(name)

    async def set_robots(self, domain: str, body: str, expires_at: float) -> None:
        await self.redis.hset(self.keys.domain(domain),
                              mapping={"robots": body, "robots_expires": repr(expires_at)})

    async def get_robots(self, domain: str, now: float) -> CachedRobots | None:
        """The cached robots.txt, or None if absent or expired at `now`."""
        body, expires = await self.redis.hmget(self.keys.domain(domain),
                                               ["robots", "robots_expires"])
        if body is None or expires is None or float(expires) <= now:
            return None
        return CachedRobots(_str(body), float(expires))

    async def record_fetch(self, domain: str, *, response_ms: float, ok: bool) -> None:
        """Count one fetch for the domain and the crawl; keep its response time for politeness."""
        key = self.keys.domain(domain)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(key, "pages_fetched" if ok else "fetch_errors", 1)
            pipe.hset(key, "last_response_ms", repr(float(response_ms)))
            pipe.hincrby(self.keys.counters, "pages_fetched" if ok else "fetch_errors", 1)
            await pipe.execute()

    async def info(self, domain: str) -> DomainInfo:
        values = await self.redis.hmget(self.keys.domain(domain), list(_INFO_FIELDS))
        raw = dict(zip(_INFO_FIELDS, (_str(v) for v in values), strict=True))
        return DomainInfo(
            domain=domain,
            read_offset=int(raw["read_offset"] or 0),
            size=int(raw["size"] or 0),
            next_fetch_at=float(raw["next_fetch_at"] or 0),
            state={"r": "ready", "l": "leased"}.get(raw["state"], "idle"),
            lease_owner=raw["lease_owner"],
            lease_until=float(raw["lease_until"] or 0),
            excluded=raw["excluded"] == "1",
            excluded_reason=raw["excluded_reason"],
            pages_fetched=int(raw["pages_fetched"] or 0),
            fetch_errors=int(raw["fetch_errors"] or 0),
            last_response_ms=float(raw["last_response_ms"] or 0),
        )
