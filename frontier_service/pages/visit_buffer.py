"""VisitBuffer: visited records and per-domain fetch counts, written to Redis in batches.

Per page the crawler learns: the URL was visited (status, time, body hash), the domain
fetched one more page (its budget) and its last response time. Writing that per page
would be a round trip per page; here it is one pipeline per `flush_records` pages.
The process also keeps its own page count per domain, so budgets hold between flushes:
for the `known_domains` it counted last (a domain it fetches stays among them; one it left
has its count in Redis, which the next claim reads).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.visited import VisitedRecord
from frontier_service.pages.flush_loop import flush_until

log = logging.getLogger(__name__)

# Visited "status" values that are not HTTP statuses.
STATUS_NO_RESPONSE = 0
STATUS_ROBOTS_DISALLOWED = 1


class VisitBuffer:
    """Buffers what was fetched; `flush` writes it (visited store, domain hashes, counters)."""

    def __init__(self, frontier: Frontier, *, flush_records: int = 1_000,
                 flush_s: float = 0.5, known_domains: int = 100_000) -> None:
        self.frontier = frontier
        self.flush_records = flush_records
        self.flush_s = flush_s
        self.known_domains = known_domains
        # Pages this process knows each domain fetched, least recently counted first.
        self.page_counts: dict[str, int] = {}
        self._visits: list[VisitedRecord] = []
        self._pages: Counter[str] = Counter()
        self._errors: Counter[str] = Counter()
        self._response_ms: dict[str, float] = {}
        self._crawl: Counter[str] = Counter()
        self._full = asyncio.Event()
        self._lock = asyncio.Lock()

    def record(self, record: VisitedRecord, domain: str, *, ok: bool | None,
               response_ms: float | None = None) -> None:
        """One URL done: ok=True/False counts a page fetch or a failed one; None counts nothing."""
        self._visits.append(record)
        if ok is not None:
            (self._pages if ok else self._errors)[domain] += 1
            self._crawl["pages_fetched" if ok else "fetch_errors"] += 1
            self._set_count(domain, self.page_counts.pop(domain, 0) + 1)
        if response_ms is not None:
            self._response_ms[domain] = response_ms
        if len(self._visits) >= self.flush_records:
            self._full.set()

    def count(self, name: str, amount: int = 1) -> None:
        """Add to one of the crawl's counters (`{crawl}:counters`)."""
        self._crawl[name] += amount

    def known_pages(self, domain: str, stored: int) -> int:
        """Pages fetched for a domain: the larger of Redis's count and ours."""
        mine = self.page_counts.get(domain, 0)
        if stored > mine:
            self.page_counts.pop(domain, None)
            self._set_count(domain, stored)
            return stored
        return mine

    def _set_count(self, domain: str, pages: int) -> None:
        """Count `domain` as the most recent, forgetting the least recent past known_domains."""
        self.page_counts[domain] = pages
        if len(self.page_counts) > self.known_domains:
            del self.page_counts[next(iter(self.page_counts))]

    async def flush(self) -> None:
        async with self._lock:
            visits, self._visits = self._visits, []
            pages, self._pages = self._pages, Counter()
            errors, self._errors = self._errors, Counter()
            response_ms, self._response_ms = self._response_ms, {}
            crawl, self._crawl = self._crawl, Counter()
            self._full.clear()
            if not (visits or pages or errors or response_ms or crawl):
                return
            keys = self.frontier.state.keys
            try:
                if visits:
                    await self.frontier.mark_visited(visits)
                async with self.frontier.redis.pipeline(transaction=False) as pipe:
                    for domain, n in pages.items():
                        pipe.hincrby(keys.domain(domain), "pages_fetched", n)
                    for domain, n in errors.items():
                        pipe.hincrby(keys.domain(domain), "fetch_errors", n)
                    for domain, ms in response_ms.items():
                        pipe.hset(keys.domain(domain), "last_response_ms", repr(round(ms, 1)))
                    for name, n in crawl.items():
                        pipe.hincrby(keys.counters, name, n)
                    await pipe.execute()
            except BaseException:
                self._visits = visits + self._visits  # retried by the next flush
                self._pages.update(pages)
                self._errors.update(errors)
                self._crawl.update(crawl)
                raise

    async def run(self, finished: asyncio.Event) -> None:
        """Flush every flush_s, or when flush_records are waiting, until `finished`."""
        await flush_until(finished, self.flush, full=self._full, every_s=self.flush_s, log=log,
                          failure="writing visited records failed; retrying")
