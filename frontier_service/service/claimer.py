"""DomainClaimer: leases due domains in batches and hands their next URL to the workers.

One task talks to Redis for all workers: each round trip releases the domains workers
finished (with their next fetch time and read offset) and leases as many due domains as
there are idle workers (up to `batch`). Before a read offset moves, `checkpoint` makes
the released URLs' results durable (index journal, visited records, discovered links),
so a crash can repeat a fetch but never lose one. Then one pipelined read gets the claimed
domains' offsets and page counts, and their next URL is read from the files.
A domain is leased while its one URL is in flight, so no host sees two requests at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.records import FrontierRecord
from frontier_service.frontier.state import Release, Reschedule
from frontier_service.service.ledger import FetchLedger
from frontier_service.service.metrics import CrawlMetrics

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A leased domain and the URL to fetch; release at end_offset once it is handled."""

    domain: str
    record: FrontierRecord
    start_offset: int
    end_offset: int


class DomainClaimer:
    """Batch claims for `capacity` workers; workers call `release` when done with a domain."""

    def __init__(self, frontier: Frontier, owner: str, metrics: CrawlMetrics, ledger: FetchLedger,
                 *, capacity: int, batch: int = 64, poll_s: float = 0.01,
                 page_budget: int = 0, clock: Callable[[], float] = time.time,
                 checkpoint: Callable[[], Awaitable[None]] | None = None) -> None:
        self.frontier = frontier
        self.owner = owner
        self.metrics = metrics
        self.ledger = ledger
        self.capacity = capacity
        self.batch = batch
        self.poll_s = poll_s
        self.page_budget = page_budget
        self.clock = clock
        self.checkpoint = checkpoint  # makes the results of released URLs durable first
        self.queue: asyncio.Queue[Claimed | None] = asyncio.Queue()
        self.outstanding = 0  # leased by us and not yet released
        self.idle_rounds = 0  # consecutive claims that found nothing due
        self._releases: list[Reschedule] = []  # from workers, results not yet durable
        self._durable: list[Reschedule] = []  # checkpointed: sent with the next claim round
        self._wake = asyncio.Event()

    def release(self, domain: str, next_fetch_at: float, new_offset: int) -> None:
        """Give a domain back (sent with the next round trip)."""
        self._releases.append(Reschedule(domain, next_fetch_at, new_offset))
        self.outstanding -= 1
        self._wake.set()

    async def run_checkpoints(self, finished: asyncio.Event, every_s: float = 0.05) -> None:
        """Every `every_s`: make the released domains' results durable, then queue the releases.

        Separate from the claim rounds, so a slow checkpoint (a big add_urls) delays only
        the releases (whose next fetch is a politeness delay away anyway), never claims.
        """
        while not finished.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), every_s)
            try:
                await self._checkpoint()
            except Exception:
                log.exception("checkpoint failed; retrying")

    async def _checkpoint(self) -> None:
        if not self._releases:
            return
        batch, self._releases = self._releases, []
        began = time.monotonic()
        try:
            if self.checkpoint is not None:
                await self.checkpoint()
        except BaseException:
            self._releases = batch + self._releases
            raise
        self._durable += batch
        self.metrics.checkpoint_ms = int((time.monotonic() - began) * 1000)
        self._wake.set()

    async def run(self, stopping: asyncio.Event) -> None:
        """Claim until `stopping`; then hand back what no worker started, and flush releases."""
        while not stopping.is_set():
            want = min(self.batch, self.capacity - self.outstanding)
            if want <= 0 and not self._durable:
                await self._sleep(stopping, 1.0)
                continue
            claimed = await self._round(max(want, 0))
            self.idle_rounds = 0 if claimed else self.idle_rounds + 1
            if claimed < want:  # not woken by releases: they ride along with the next round
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), self.poll_s)
        await self.shutdown()

    async def shutdown(self) -> None:
        """Release queued (unstarted) domains unchanged, then every pending release."""
        now = self.clock()
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if item is not None:
                self.release(item.domain, now, item.start_offset)
        await self.flush_releases()

    async def flush_releases(self) -> None:
        """Checkpoint and send every release now (shutdown)."""
        await self._checkpoint()
        while self._durable:
            releases, self._durable = self._durable, []
            try:
                codes = await self.frontier.done_many(self.owner, releases)
            except BaseException:
                self._durable = releases + self._durable
                raise
            self.metrics.leases_lost += sum(code is Release.LEASE_LOST for code in codes)

    async def _sleep(self, stopping: asyncio.Event, seconds: float) -> None:
        self._wake.clear()
        waiters = [asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(stopping.wait())]
        try:
            await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def gauges(self) -> None:
        self.metrics.queued_domains = self.queue.qsize()
        self.metrics.releases_pending = len(self._releases) + len(self._durable)

    async def _round(self, want: int) -> int:
        began = time.monotonic()
        try:
            return await self._claim(want)
        finally:
            self.metrics.claim_round_ms = int((time.monotonic() - began) * 1000)

    async def _claim(self, want: int) -> int:
        releases, self._durable = self._durable, []
        try:
            codes, domains = await self.frontier.release_and_claim(
                self.owner, releases, want, now=self.clock())
        except BaseException:
            self._durable = releases + self._durable
            raise
        self.metrics.claim_calls += 1
        self.metrics.leases_lost += sum(code is Release.LEASE_LOST for code in codes)
        if not domains:
            return 0
        self.outstanding += len(domains)
        self.metrics.claims += len(domains)
        await self._dispatch(domains)
        return len(domains)

    async def _dispatch(self, domains: list[str]) -> None:
        keys = self.frontier.state.keys
        async with self.frontier.redis.pipeline(transaction=False) as pipe:
            for domain in domains:
                pipe.hmget(keys.domain(domain), ["read_offset", "pages_fetched"])
            rows = await pipe.execute()
        offsets = [int(row[0] or 0) for row in rows]
        over_budget = [
            d for d, row in zip(domains, rows, strict=True)
            if self.page_budget and self.ledger.known_pages(d, int(row[1] or 0)) >= self.page_budget
        ]
        # A line from each file, read inline: page-cache preads take microseconds, while a
        # thread hop costs a full trip through a busy event loop.
        files = self.frontier.files
        reads = [files.read_from(d, o, 1) for d, o in zip(domains, offsets, strict=True)]
        now = self.clock()
        for domain in over_budget:
            self.metrics.budget_exhausted += 1
            await self.frontier.state.exclude(domain, "page budget reached")
        for domain, start, (records, end) in zip(domains, offsets, reads, strict=True):
            if domain in over_budget:
                self.release(domain, now, start)
            elif not records:  # only a torn or unfinished line: step over it, try later
                self.release(domain, now + 1.0, end)
            else:
                self.queue.put_nowait(Claimed(domain, records[0], start, end))
