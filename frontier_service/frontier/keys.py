"""Redis key names of one crawl, all under the crawl's name."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FrontierKeys:
    """`{name}:domain:{d}` hashes, the ready and leased ZSETs, counters, seen and visited.

    The Lua scripts build `domain:{d}` keys from `domain_prefix`, so the crawl needs one
    Redis node (or a Redis Cluster hash tag in `name`, e.g. "{crawl1}").
    """

    name: str

    @property
    def domain_prefix(self) -> str:
        return f"{self.name}:domain:"

    def domain(self, domain: str) -> str:
        return f"{self.name}:domain:{domain}"

    @property
    def ready(self) -> str:
        """ZSET domain -> next allowed fetch time (unix seconds)."""
        return f"{self.name}:domains:ready"

    @property
    def leases(self) -> str:
        """ZSET domain -> lease expiry (unix seconds)."""
        return f"{self.name}:domains:leased"

    @property
    def counters(self) -> str:
        return f"{self.name}:counters"

    @property
    def seen(self) -> str:
        return f"{self.name}:seen"

    @property
    def visited(self) -> str:
        return f"{self.name}:visited"

    @property
    def epoch(self) -> str:
        """The crawl id whose complete state Redis holds (set last by a rebuild)."""
        return f"{self.name}:epoch"

    @property
    def coordination(self) -> list[str]:
        """KEYS for the domain scripts: ready, leases, counters."""
        return [self.ready, self.leases, self.counters]
