"""DomainClaimer: leases due domains in batches and feeds their URLs to the workers.

One task talks to Redis for all workers: each round trip releases the domains this process
is done with (their next fetch time and read offset) and leases as many due domains as it
has room for (up to `batch`). Before a read offset moves, `checkpoint` makes the handled
URLs' results durable (index journal, visited records, discovered links), so a crash can
repeat a fetch but never lose one.

A leased domain is a HeldHost (held_host.py): up to `per_host` of its URLs in flight
(1 until robots.txt is known, and with a Crawl-delay), request starts its delay apart, the
next URL read from the file here. It goes back to Redis once it has no complete URL left,
or when its next request is more than `hold_s` away (other processes may take it by then);
until then its lease is renewed every `renew_every_s` with the durable watermark.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from redis.exceptions import RedisError

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.script_guard import FrontierLost
from frontier_service.frontier.state import Release, Reschedule
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.held_host import Claimed, HeldHost, Outcome
from frontier_service.pages.visit_buffer import VisitBuffer

log = logging.getLogger(__name__)


class OffsetSink(Protocol):
    """Where durable read offsets go besides Redis (the on-disk checkpoint)."""

    def advance(self, domain: str, offset: int, pages: int = 0) -> None: ...

    def exclude(self, domain: str, reason: str) -> None: ...


class DomainClaimer:
    """Leases for `capacity` domains at most; workers call `finished` with each URL's outcome."""

    def __init__(self, frontier: Frontier, owner: str, metrics: CrawlMetrics, visits: VisitBuffer,
                 *, capacity: int, batch: int = 64, poll_s: float = 0.01,
                 page_budget: int = 0, per_host: int = 1, hold_s: float = 0.25,
                 renew_every_s: float = 1.0, clock: Callable[[], float] = time.time,
                 checkpoint: Callable[[], Awaitable[None]] | None = None,
                 offsets: OffsetSink | None = None,
                 known_offset: Callable[[str], int] | None = None) -> None:
        self.frontier = frontier
        self.owner = owner
        self.metrics = metrics
        self.visits = visits
        self.capacity = capacity
        self.batch = batch
        self.poll_s = poll_s
        self.page_budget = page_budget
        self.per_host = per_host
        self.hold_s = hold_s
        self.renew_every_s = min(renew_every_s, frontier.config.lease_seconds / 4)
        self.clock = clock
        self.checkpoint = checkpoint  # makes the results of handled URLs durable first
        self.offsets = offsets
        self.known_offset = known_offset  # the checkpoints' offset of a domain
        self.queue: asyncio.Queue[Claimed | None] = asyncio.Queue()
        self.held: dict[str, HeldHost] = {}
        self.idle_rounds = 0  # consecutive claims that found nothing due
        self.closing = False  # no new URLs go out
        self._releases: list[tuple[Reschedule, int]] = []  # (release, pages): not durable yet
        self._durable: list[Reschedule] = []  # checkpointed: sent with the next claim round
        self._exclusions: list[tuple[str, str]] = []
        self._renewed_at = 0.0
        self._renew_ok_at = clock()
        self._wake = asyncio.Event()

    @property
    def outstanding(self) -> int:
        """Domains leased by this process and not released yet."""
        return len(self.held)

    # -- the workers' side -------------------------------------------------------------

    def starting(self, item: Claimed) -> None:
        """A worker took the URL from the queue (its request goes out now)."""
        host = item.host
        assert host is not None, "a Claimed from this claimer carries its host"
        host.begun(item, self.clock())
        if len(host.in_flight) < host.limit:
            self._pump(host)

    def finished(self, item: Claimed, outcome: Outcome) -> None:
        """One URL is done (outcome.offset past it) or handed back (at its start)."""
        host = item.host
        assert host is not None, "a Claimed from this claimer carries its host"
        host.answered(item, outcome, self.clock(), self.per_host)
        if outcome.offset >= item.end_offset:
            host.handled(item.start_offset, item.end_offset)
        else:
            host.hand_back(item)
        if outcome.retired:
            host.stopped = True
            if self.offsets is not None:
                self.offsets.exclude(host.domain, outcome.retired)
        self._pump(host)

    def _pump(self, host: HeldHost) -> None:
        """Start what the host allows now; release it or wake up when its next start is due."""
        if host.timer is not None:
            host.timer.cancel()
            host.timer = None
        if host.lost:
            if host.idle:
                self._forget(host)
            return
        now = self.clock()
        # One URL at a time goes to the queue: the next waits until a worker has begun it
        # (its request is out) and the host's delay has passed since.
        while not self.closing and not host.stopped and len(host.in_flight) < host.limit \
                and not host.queued and now >= host.next_start_at:
            if self._budget_spent(host):
                break
            item = self._next_item(host)
            if item is None:
                break
            host.dispatched(item, now)
            self.queue.put_nowait(item)
        more = host.returned or not host.drained
        if host.in_flight:
            if len(host.in_flight) < host.limit and more and not host.queued and not self.closing:
                self._wake_at(host, host.next_start_at - now)
            return
        wait = host.next_start_at - now
        if self.closing or host.stopped or not more or wait > self.hold_s:
            self._release(host, max(host.next_start_at, now))
        else:
            self._wake_at(host, wait)

    def _next_item(self, host: HeldHost) -> Claimed | None:
        if host.returned:
            return host.returned.pop(0)
        files = self.frontier.files
        while True:
            # One line, read inline: a page-cache pread takes microseconds, while a thread
            # hop costs a full trip through a busy event loop.
            records, end = files.read_from(host.domain, host.next_read, 1)
            start, host.next_read = host.next_read, end
            if records:
                host.drained = False
                return Claimed(host.domain, records[0], start, end, host)
            if end > start:  # only torn or corrupt lines: step over them
                host.skipped(start, end)
                continue
            host.drained = True
            return None

    def _budget_spent(self, host: HeldHost) -> bool:
        if not self.page_budget:
            return False
        fetched = self.visits.known_pages(host.domain, host.stored_pages) + len(host.in_flight)
        if fetched < self.page_budget:
            return False
        host.stopped = True
        self.metrics.budget_exhausted += 1
        log.info("%s: page budget (%d pages) reached: no more of its URLs are fetched; the "
                 "rest stay queued", host.domain, self.page_budget)
        self._exclusions.append((host.domain, "page budget reached"))
        return True

    def _wake_at(self, host: HeldHost, delay: float) -> None:
        loop = asyncio.get_running_loop()
        host.timer = loop.call_later(max(delay, 0.0), self._pump, host)

    def _release(self, host: HeldHost, next_fetch_at: float) -> None:
        """Give the domain back at its watermark (sent after the next checkpoint)."""
        self._forget(host)
        watermark, pages = host.mark()
        self._releases.append((Reschedule(host.domain, next_fetch_at, watermark), pages))
        self._wake.set()

    def _forget(self, host: HeldHost) -> None:
        if host.timer is not None:
            host.timer.cancel()
            host.timer = None
        if self.held.get(host.domain) is host:
            del self.held[host.domain]

    def drop_leases(self) -> None:
        """Redis lost every lease (it is being rebuilt): dispatch nothing more of the held
        hosts; what is in flight finishes, its results recorded, its offsets not sent."""
        for host in list(self.held.values()):
            host.lost = True
            self._pump(host)

    # -- checkpoints and lease renewals ------------------------------------------------

    async def run_checkpoints(self, finished: asyncio.Event, every_s: float = 0.05) -> None:
        """Every `every_s`: make handled URLs' results durable, then queue the releases;
        renew the held hosts' leases (with their durable watermarks) every renew_every_s.

        Separate from the claim rounds, so a slow checkpoint (a big add_urls) delays only
        the releases (whose next fetch is a politeness delay away anyway), never claims.
        """
        failing = ""  # the error the checkpoints keep failing with, said once
        while not finished.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), every_s)
            try:
                moved = await self._checkpoint()
            except OSError as exc:  # a full disk: one line, not a traceback every round
                if str(exc) != failing:
                    log.warning("checkpoint failed (%s); retrying", exc)
                failing = str(exc)
                continue
            except Exception:
                log.exception("checkpoint failed; retrying")
                continue
            failing = ""
            if self.clock() - self._renewed_at >= self.renew_every_s:
                self._renewed_at = self.clock()
                moved = [host for host in self.held.values() if not host.lost]
            try:
                await self._renew(moved)
                self._renew_ok_at = self.clock()
            except FrontierLost:
                pass  # the claim loop rebuilds Redis; the rebuilt one holds no leases
            except (RedisError, OSError) as exc:
                log.warning("renewing leases failed (%s); retrying", exc)
                # Held hosts go on fetching while Redis is away, but not past their leases:
                # another process may take those domains once they run out.
                if self.clock() - self._renew_ok_at > self.frontier.config.lease_seconds / 2:
                    self.drop_leases()

    async def _checkpoint(self) -> list[HeldHost]:
        """Make handled URLs durable; returns the held hosts whose durable watermark moved."""
        marks = [(host, host.watermark) for host in self.held.values()
                 if host.watermark != host.durable]
        if not self._releases and not marks:
            return []
        batch, self._releases = self._releases, []
        pages = {host.domain: host.mark()[1] for host, _ in marks}
        began = time.monotonic()
        try:
            if self.checkpoint is not None:
                await self.checkpoint()
        except BaseException:
            self._releases = batch + self._releases
            for host, _ in marks:
                host.pages += pages[host.domain]
            raise
        for host, watermark in marks:
            host.durable = watermark
        if self.offsets is not None:
            for release, count in batch:
                self.offsets.advance(release.domain, release.new_read_offset, count)
            for host, watermark in marks:
                self.offsets.advance(host.domain, watermark, pages[host.domain])
        self._durable += [release for release, _ in batch]
        self.metrics.checkpoint_ms = int((time.monotonic() - began) * 1000)
        self._wake.set()
        return [host for host, _ in marks]

    async def _renew(self, hosts: list[HeldHost]) -> None:
        """Extend the leases of held hosts and raise their read offsets to the durable
        watermark (a crashed process's successor then repeats only what was not durable)."""
        hosts = [host for host in hosts if not host.lost]
        if not hosts:
            return
        renewed = await self.frontier.state.renew_many(
            self.owner, [(host.domain, max(host.durable, 0)) for host in hosts],
            self.clock(), self.frontier.config.lease_seconds)
        for host, ok in zip(hosts, renewed, strict=True):
            if not ok and self.held.get(host.domain) is host:  # (a released one is gone)
                self.metrics.leases_lost += 1
                host.lost = True
                log.warning("lease on %s was taken over; its URLs in flight may be fetched "
                            "again by the new owner", host.domain)
                self._pump(host)

    # -- claim rounds -----------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        """Claim until `stopping`; then hand back what no worker started, and flush releases."""
        while not stopping.is_set():
            want = min(self.batch, self.capacity - self.outstanding)
            if want <= 0 and not self._durable and not self._exclusions:
                await self._sleep(stopping, 1.0)
                continue
            claimed = await self._round(max(want, 0))
            self.idle_rounds = 0 if claimed or self.held else self.idle_rounds + 1
            if claimed < want:  # not woken by releases: they ride along with the next round
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), self.poll_s)
        await self.shutdown()

    async def shutdown(self) -> None:
        """Hand back queued (unstarted) URLs; release every host with nothing in flight."""
        self.closing = True
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if item is not None and item.host is not None:
                item.host.hand_back(item, unstarted=True)
        for host in list(self.held.values()):
            self._pump(host)  # closing: an idle host is released, a busy one when done
        await self.flush_releases()

    async def flush_releases(self, *, keep_offsets: bool = False) -> None:
        """Release idle held hosts; checkpoint and send every release now (shutdown).

        `keep_offsets` (no checkpoint can be written: the disk is full): release them at the
        read offsets Redis holds, the last durable ones; the URLs handled since, whose
        results are not durable, stay queued. Their domains are claimable at once, not only
        once their leases expire."""
        self.closing = True
        for host in list(self.held.values()):
            if host.idle:
                self._pump(host)
        await self._send_exclusions()
        if keep_offsets:  # a release never lowers Redis's read offset: 0 leaves it as it is
            undurable, self._releases = self._releases, []
            self._durable += [Reschedule(release.domain, release.next_fetch_at, 0)
                              for release, _pages in undurable]
        else:
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

    async def _send_exclusions(self) -> None:
        # Before the releases: a release of an excluded domain retires it.
        while self._exclusions:
            domain, reason = self._exclusions[0]
            await self.frontier.state.exclude(domain, reason)
            self._exclusions.pop(0)
            if self.offsets is not None:
                self.offsets.exclude(domain, reason)

    async def _claim(self, want: int) -> int:
        await self._send_exclusions()
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
        self.metrics.claims += len(domains)
        await self._dispatch(domains)
        return len(domains)

    def _start_offset(self, domain: str, stored: int) -> int:
        """Redis's read offset, unless a checkpoint knows the domain got further: then Redis
        lost it (an evicted key recreated by an append, a Redis restored from an older copy)
        and the URLs in between were fetched already."""
        known = self.known_offset(domain) if self.known_offset is not None else 0
        if known <= stored:
            return stored
        self.metrics.frontier_repairs += 1
        log.warning("Redis's read offset of %s (%d) is behind its checkpoint (%d): Redis lost "
                    "it; resuming at the checkpoint", domain, stored, known)
        return known

    async def _dispatch(self, domains: list[str]) -> None:
        keys = self.frontier.state.keys
        async with self.frontier.redis.pipeline(transaction=False) as pipe:
            for domain in domains:
                pipe.hmget(keys.domain(domain), ["read_offset", "pages_fetched"])
            rows = await pipe.execute()
        now = self.clock()
        for domain, row in zip(domains, rows, strict=True):
            stale = self.held.pop(domain, None)
            if stale is not None:  # a lost lease of ours, claimed again: forget the old one
                stale.lost = True
            host = HeldHost(domain, self._start_offset(domain, int(row[0] or 0)),
                            stored_pages=int(row[1] or 0), next_start_at=now)
            self.held[domain] = host
            self._pump(host)
