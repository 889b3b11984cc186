"""The progress line every few seconds, from the process's metrics and a frontier snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from frontier_service.frontier.frontier import Frontier
from frontier_service.service.metrics import CrawlMetrics

log = logging.getLogger("frontier_service.progress")


def format_progress(metrics: CrawlMetrics, pages_per_s: float) -> str:
    m = metrics
    return (f"{pages_per_s:7.1f} pages/s | pages {m.pages:,} ok {m.pages_ok:,} | "
            f"frontier {m.frontier_pending_bytes / 1e6:,.1f} MB pending, "
            f"{m.frontier_ready_domains:,} ready ({m.frontier_due_domains:,} due), "
            f"{m.frontier_leased_domains:,} leased | in flight {m.in_flight}, "
            f"queued {m.queued_domains}, releasing {m.releases_pending} "
            f"(checkpoint {m.checkpoint_ms} ms, claim {m.claim_round_ms} ms) | "
            f"errors {m.fetch_errors:,} disallowed {m.robots_disallowed:,} "
            f"retired hosts {m.hosts_retired:,} | new URLs {m.urls_added:,}")


class ProgressReporter:
    """Samples the frontier (one MULTI) and logs a line every `every_s` seconds."""

    def __init__(self, frontier: Frontier, metrics: CrawlMetrics, every_s: float = 5.0,
                 before: Callable[[], None] | None = None) -> None:
        self.frontier = frontier
        self.before = before  # refreshes process gauges before a sample
        self.metrics = metrics
        self.every_s = every_s
        self._last = (time.monotonic(), 0)

    async def sample(self) -> None:
        if self.before is not None:
            self.before()
        stats = await self.frontier.stats()
        m = self.metrics
        m.frontier_pending_bytes = stats.pending_bytes
        m.frontier_ready_domains = stats.ready_domains
        m.frontier_due_domains = stats.due_domains
        m.frontier_leased_domains = stats.leased_domains

    def rate(self) -> float:
        """Pages per second since the previous call."""
        now, pages = time.monotonic(), self.metrics.pages
        then, before = self._last
        self._last = (now, pages)
        return (pages - before) / max(now - then, 1e-9)

    async def run(self, finished: asyncio.Event) -> None:
        if self.every_s <= 0:  # no progress line (and no busy loop of samples)
            await finished.wait()
            return
        while not finished.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), self.every_s)
            if finished.is_set():
                return
            try:
                await self.sample()
            except Exception as exc:  # Redis hiccup: the line can wait
                log.warning("frontier stats unavailable: %s", exc)
            log.info("%s", format_progress(self.metrics, self.rate()))
