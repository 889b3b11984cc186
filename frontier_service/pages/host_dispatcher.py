"""HostDispatcher: the domains this process holds, and their URLs fed to the workers.

A leased domain is a HeldHost (held_host.py): up to `per_host` of its URLs in flight
(1 until robots.txt is known, and with a Crawl-delay), request starts its delay apart, the
next URL read from its frontier file here. It is released once it has no complete URL
left, or when its next request is more than `hold_s` away (other processes may take it by
then), or, once held `share_after_s`, when other crawls wait for its host (their turn).
Nothing here talks to Redis: releases and page-budget exclusions wait in `releases` and
`exclusions` until the DomainClaimer (claimer.py) sends them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.frontier.state import Reschedule
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.claim_settings import ClaimSettings
from frontier_service.pages.held_host import Claimed, HeldHost, Outcome
from frontier_service.pages.visit_buffer import VisitBuffer

log = logging.getLogger(__name__)


class OffsetSink(Protocol):
    """Where durable read offsets go besides Redis (the on-disk checkpoint)."""

    def advance(self, domain: str, offset: int, pages: int = 0) -> None: ...

    def exclude(self, domain: str, reason: str) -> None: ...


class HostDispatcher:
    """The held hosts; workers take their URLs from `queue` and report through `starting`
    and `finished`."""

    def __init__(self, files: FrontierFiles, metrics: CrawlMetrics, visits: VisitBuffer, *,
                 settings: ClaimSettings, clock: Callable[[], float] = time.time,
                 offsets: OffsetSink | None = None) -> None:
        self.files = files
        self.metrics = metrics
        self.visits = visits  # the pages this process knows each domain fetched (budgets)
        self.settings = settings
        self.clock = clock
        self.offsets = offsets
        self.queue: asyncio.Queue[Claimed | None] = asyncio.Queue()
        self.held: dict[str, HeldHost] = {}
        self.closing = False  # no new URLs go out
        self.releases: list[tuple[Reschedule, int]] = []  # (release, pages): not durable yet
        self.exclusions: list[tuple[str, str]] = []  # (domain, reason): not sent to Redis yet
        self.wake = asyncio.Event()  # set when the claimer has something to send

    @property
    def outstanding(self) -> int:
        """Domains leased by this process and not released yet."""
        return len(self.held)

    def hold(self, domain: str, read_offset: int, *, stored_pages: int, now: float) -> None:
        """A freshly leased domain: feed its URLs from `read_offset` on."""
        stale = self.held.pop(domain, None)
        if stale is not None:  # a lost lease of ours, claimed again: forget the old one
            stale.lost = True
        host = HeldHost(domain, read_offset, stored_pages=stored_pages, next_start_at=now,
                        held_since=now)
        self.held[domain] = host
        self.pump(host)

    # -- the workers' side -------------------------------------------------------------

    def starting(self, item: Claimed) -> float:
        """A worker took the URL from the queue (its request goes out now): the time its
        start is counted from, for the page record to carry (the host's delay runs from
        it, so records show the spacing the crawler kept, whatever the scheduler adds)."""
        host = item.host
        assert host is not None, "a Claimed from this dispatcher carries its host"
        now = self.clock()
        host.begun(item, now)
        if len(host.in_flight) < host.limit:
            self.pump(host)
        return now

    def finished(self, item: Claimed, outcome: Outcome) -> None:
        """One URL is done (outcome.offset past it) or handed back (at its start)."""
        host = item.host
        assert host is not None, "a Claimed from this dispatcher carries its host"
        host.answered(item, outcome, self.clock(), per_host=self.settings.per_host)
        if outcome.offset >= item.end_offset:
            host.handled(item.start_offset, item.end_offset)
        else:
            host.hand_back(item)
        if outcome.retired:
            host.stopped = True
            if self.offsets is not None:
                self.offsets.exclude(host.domain, outcome.retired)
        self.pump(host)

    # -- feeding and releasing held hosts ----------------------------------------------

    def pump(self, host: HeldHost) -> None:
        """Start what the host allows now; release it or wake up when its next start is due."""
        if host.timer is not None:
            host.timer.cancel()
            host.timer = None
        if host.lost:
            if host.idle:
                self._forget(host)
            return
        now = self.clock()
        turn_over = host.wanted and now - host.held_since >= self.settings.share_after_s
        # One URL at a time goes to the queue: the next waits until a worker has begun it
        # (its request is out) and the host's delay has passed since.
        while not self.closing and not host.stopped and not turn_over \
                and len(host.in_flight) < host.limit and not host.queued \
                and now >= host.next_start_at:
            if self._budget_spent(host):
                break
            item = self._next_item(host)
            if item is None:
                break
            host.dispatched(item, now)
            self.queue.put_nowait(item)
        more = host.returned or not host.drained
        if host.in_flight:
            if len(host.in_flight) < host.limit and more and not host.queued \
                    and not self.closing and not turn_over:
                self._wake_at(host, host.next_start_at - now)
            return
        wait = host.next_start_at - now
        if self.closing or host.stopped or turn_over or not more or wait > self.settings.hold_s:
            self._release(host, max(host.next_start_at, now))
        else:
            self._wake_at(host, wait)

    def _next_item(self, host: HeldHost) -> Claimed | None:
        if host.returned:
            return host.returned.pop(0)
        while True:
            # One line, read inline: a page-cache pread takes microseconds, while a thread
            # hop costs a full trip through a busy event loop.
            records, end = self.files.read_from(host.domain, host.next_read, 1)
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
        budget = self.settings.page_budget
        if not budget:
            return False
        fetched = self.visits.known_pages(host.domain, host.stored_pages) + len(host.in_flight)
        if fetched < budget:
            return False
        host.stopped = True
        self.metrics.budget_exhausted += 1
        log.info("%s: page budget (%d pages) reached: no more of its URLs are fetched; the "
                 "rest stay queued", host.domain, budget)
        self.exclusions.append((host.domain, "page budget reached"))
        return True

    def _wake_at(self, host: HeldHost, delay: float) -> None:
        loop = asyncio.get_running_loop()
        host.timer = loop.call_later(max(delay, 0.0), self.pump, host)

    def _release(self, host: HeldHost, next_fetch_at: float) -> None:
        """Give the domain back at its watermark (sent after the next checkpoint)."""
        self._forget(host)
        watermark, pages = host.mark()
        self.releases.append((Reschedule(host.domain, next_fetch_at, watermark), pages))
        self.wake.set()

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
            self.pump(host)

    def close(self) -> None:
        """Hand back queued (unstarted) URLs; release every host with nothing in flight
        (a busy one once it is done)."""
        self.closing = True
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if item is not None and item.host is not None:
                item.host.hand_back(item, unstarted=True)
        for host in list(self.held.values()):
            self.pump(host)

    def release_idle(self) -> None:
        """Dispatch nothing more; release the held hosts with nothing in flight."""
        self.closing = True
        for host in list(self.held.values()):
            if host.idle:
                self.pump(host)
