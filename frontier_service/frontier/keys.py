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

    # -- several machines (frontier_service/machines/) --------------------------------

    @property
    def machines(self) -> str:
        """HASH machine -> its lease's end (unix seconds, renewed by its heartbeat)."""
        return f"{self.name}:machines"

    @property
    def slotmap(self) -> str:
        """HASH slot -> the machine that owns its domains (`>m`: m is handing it over)."""
        return f"{self.name}:slotmap"

    @property
    def slot_count(self) -> str:
        """The crawl's number of slots, fixed by the first machine."""
        return f"{self.name}:slots"

    def inbox(self, slot: int) -> str:
        """STREAM of URLs for a slot's domains, from the machines that found them."""
        return f"{self.name}:inbox:{slot}"

    @property
    def orphaned(self) -> str:
        """HASH machine -> bytes of unfetched frontier lines only its disk holds."""
        return f"{self.name}:orphaned"

    def orphans(self, machine: str) -> str:
        """SET of domains whose unfetched lines only `machine`'s disk holds."""
        return f"{self.name}:orphans:{machine}"

    @property
    def coordination(self) -> list[str]:
        """KEYS for the domain scripts: ready, leases, counters."""
        return [self.ready, self.leases, self.counters]
