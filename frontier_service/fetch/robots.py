"""RobotsCache: robots.txt fetched once per origin, parsed with protego, cached with expiry.

RFC 9309: 2xx is parsed (capped at 512 KB, the cut falling on a line boundary; binary junk
counts as allow-all); 4xx allows everything; 5xx, 429, network errors and timeouts disallow
everything for a short retry period. A miss in the local parsed cache consults the
pluggable store (Redis in the frontier) before fetching, and concurrent callers for one
origin share a single fetch.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import urlsplit

from archive_pipelines.canonical_urls import canonicalize
from frontier_service.fetch.fetcher import Fetcher
from frontier_service.fetch.robots_rules import (
    DEFAULT_TTL_S,
    DEFAULT_UNREACHABLE_RETRY_S,
    RobotsRules,
    entry_from_fetch,
    rules_from_entry,
)
from frontier_service.fetch.robots_store import InMemoryRobotsStore, RobotsStore, StoredRobots

MAX_ROBOTS_BYTES = 512 * 1024  # RFC 9309 asks crawlers to parse at least 500 KiB
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309: follow at least five
_PARSE_IN_THREAD_BYTES = 64 * 1024  # protego takes ~0.1 s on 512 KB: keep that off the loop


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, canonical (robots.txt applies per origin).

    Raises InvalidURL (from the frontier's canonicalizer) for URLs the crawler cannot fetch.
    """
    parts = urlsplit(canonicalize(url))
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


class LoadedRules(NamedTuple):
    """An origin's rules, and whether getting them sent robots.txt requests to it.

    `requested` False: they came from this process's parsed cache or the shared store, and
    the host owes no delay for them (a host's first page must not wait on a cache miss).
    """

    rules: RobotsRules
    requested: bool


class RobotsCache:
    """robots.txt rules per origin for one user agent.

    Args:
        fetcher: a started Fetcher (its user agent is the one the rules are matched for).
        store: shared storage of fetched files; in memory if not given.
        parsed_entries: how many parsed rule sets to keep in this process.
        clock: wall-clock epoch seconds (tests pass a fake).
    """

    def __init__(
        self,
        fetcher: Fetcher,
        store: RobotsStore | None = None,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        unreachable_retry_s: float = DEFAULT_UNREACHABLE_RETRY_S,
        max_bytes: int = MAX_ROBOTS_BYTES,
        max_attempts: int = 2,
        parsed_entries: int = 4096,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.fetcher = fetcher
        self.store: RobotsStore = store if store is not None else InMemoryRobotsStore()
        self.ttl_s = ttl_s
        self.unreachable_retry_s = unreachable_retry_s
        self.max_bytes = max_bytes
        self.max_attempts = max_attempts
        self.parsed_entries = parsed_entries
        self.clock = clock
        self.fetches = 0  # robots.txt requests made (for tests and metrics)
        self._parsed: OrderedDict[str, RobotsRules] = OrderedDict()
        self._loading: dict[str, asyncio.Task[LoadedRules]] = {}

    @property
    def user_agent(self) -> str:
        return self.fetcher.settings.user_agent

    async def rules_for(self, url: str) -> RobotsRules:
        """The current rules for the origin of `url`, fetching robots.txt if needed.

        Raises InvalidURL for a URL the frontier would never hand out (no host, not http(s)).
        """
        return (await self.load(url)).rules

    async def load(self, url: str) -> LoadedRules:
        """rules_for, and whether robots.txt was requested for them (by this call or the
        shared fetch it waited on) or they came from the parsed cache or the store."""
        origin = origin_of(url)
        rules = self._parsed.get(origin)
        if rules is not None and not rules.expired(self.clock()):
            self._parsed.move_to_end(origin)
            return LoadedRules(rules, requested=False)
        task = self._loading.get(origin)
        if task is None:
            task = asyncio.create_task(self._load(origin), name=f"robots {origin}")
            self._loading[origin] = task
            task.add_done_callback(lambda done: self._forget(origin, done))
        # Shielded: one caller being cancelled must not cancel the others' shared fetch.
        return await asyncio.shield(task)

    def cached_rules(self, url: str) -> RobotsRules | None:
        """The parsed, unexpired rules for the origin of `url` if this process holds them.

        Never fetches: a crawler asks first, so a robots.txt request can count as the
        host's request in flight (and be followed by its politeness delay).
        """
        origin = origin_of(url)
        rules = self._parsed.get(origin)
        if rules is None or rules.expired(self.clock()):
            return None
        self._parsed.move_to_end(origin)  # in use: the last to be dropped
        return rules

    def _forget(self, origin: str, task: asyncio.Task[LoadedRules]) -> None:
        if self._loading.get(origin) is task:
            del self._loading[origin]

    async def can_fetch(self, url: str) -> bool:
        """Whether robots.txt lets this crawler fetch `url`."""
        return (await self.rules_for(url)).can_fetch(url)

    async def crawl_delay(self, url: str) -> float | None:
        """The Crawl-delay for this crawler on the origin of `url`, or None."""
        return (await self.rules_for(url)).crawl_delay()

    async def _load(self, origin: str) -> LoadedRules:
        now = self.clock()
        entry = await self.store.get(origin)
        requested = False
        if entry is None or entry.expires_at <= now:
            entry = await self._fetch(origin, now)
            await self.store.set(origin, entry)
            requested = True
        if len(entry.body) > _PARSE_IN_THREAD_BYTES:
            rules = await asyncio.to_thread(rules_from_entry, origin, entry, self.user_agent)
        else:
            rules = rules_from_entry(origin, entry, self.user_agent)
        self._parsed[origin] = rules
        self._parsed.move_to_end(origin)
        while len(self._parsed) > self.parsed_entries:
            self._parsed.popitem(last=False)
        return LoadedRules(rules, requested)

    async def _fetch(self, origin: str, now: float) -> StoredRobots:
        self.fetches += 1
        result = await self.fetcher.fetch(
            f"{origin}/robots.txt",
            max_body_bytes=self.max_bytes,
            max_redirects=ROBOTS_MAX_REDIRECTS,
            max_attempts=self.max_attempts,
        )
        return entry_from_fetch(result, now, ttl_s=self.ttl_s, unreachable_retry_s=self.unreachable_retry_s)
