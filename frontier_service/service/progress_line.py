"""The progress line every few seconds, from the process's metrics and a frontier snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.seen_capacity import SeenCapacityWatch
from frontier_service.metrics import CrawlMetrics
from frontier_service.service.process_gauges import sample_process

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
            f"retired hosts {m.hosts_retired:,} | new URLs {m.urls_added:,} | "
            f"fds {m.open_fds:,}, RSS {m.rss_bytes / 1e6:,.0f} MB"
            + (f" | browser {m.browser_pages:,} pages, {m.browser_failures:,} failed, "
               f"{m.browser_restarts:,} restarts" if m.browser_pages else ""))


IDLE_LINE_EVERY_S = 60.0  # while idle, a line a minute says so (not "0.0 pages/s" each time)


def format_idle(metrics: CrawlMetrics, *, idle_s: float, next_due_s: float | None = None,
                exit_when_idle_s: float = 0.0) -> str:
    """What an idle crawl waits for, in one line."""
    m = metrics
    waits: list[str] = []
    if m.frontier_due_domains:
        waits.append(f"{m.frontier_due_domains:,} domains due")
    elif m.frontier_ready_domains:
        due = f", the next due in {next_due_s:,.0f} s" if next_due_s is not None else ""
        waits.append(f"{m.frontier_ready_domains:,} domains waiting on politeness delays or "
                     f"back-off{due}")
    if m.frontier_leased_domains:
        waits.append(f"{m.frontier_leased_domains:,} domains leased (by this or other processes)")
    if not waits:
        waits.append("nothing queued")
        if m.frontier_pending_bytes:
            waits.append(f"{_size(m.frontier_pending_bytes)} of URLs left only on stopped "
                         "hosts (page budget, unreachable, refused)")
        waits.append(f"exits after {exit_when_idle_s:g} s idle" if exit_when_idle_s
                     else "waiting for new URLs (frontier-service seed)")
    return (f"idle for {_duration(idle_s)} (no page archived): {'; '.join(waits)} | "
            f"pages {m.pages:,} ok {m.pages_ok:,} | segments closed {m.segments_closed:,}")


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:,} bytes"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs} s"


class IdleLines:
    """Decides between a progress line and, while nothing is archived, an idle line a minute."""

    def __init__(self, metrics: CrawlMetrics, *, now: float, exit_when_idle_s: float = 0.0) -> None:
        self.metrics = metrics
        self.exit_when_idle_s = exit_when_idle_s
        self._pages = metrics.pages
        self._active_at = now
        self._idle_looks = 0
        self._idle_logged_at: float | None = None

    def next_line(self, now: float) -> str:
        """Which line is due now: "progress" (busy, and the first look after it went idle),
        "idle" (then a minute apart), or "" (none)."""
        m = self.metrics
        if m.pages != self._pages or m.in_flight:
            self._pages, self._active_at = m.pages, now
            self._idle_looks, self._idle_logged_at = 0, None
            return "progress"
        self._idle_looks += 1
        if self._idle_looks == 1:
            return "progress"
        if self._idle_logged_at is not None and now - self._idle_logged_at < IDLE_LINE_EVERY_S:
            return ""
        self._idle_logged_at = now
        return "idle"

    def idle_line(self, now: float, next_due_s: float | None = None) -> str:
        return format_idle(self.metrics, idle_s=now - self._active_at, next_due_s=next_due_s,
                           exit_when_idle_s=self.exit_when_idle_s)

    def line(self, now: float, rate: float) -> str | None:
        """The line to log now, or None (idle, and said so less than a minute ago)."""
        kind = self.next_line(now)
        if kind == "progress":
            return format_progress(self.metrics, rate)
        return self.idle_line(now) if kind == "idle" else None


class ProgressReporter:
    """Samples the frontier (one MULTI) and logs a line every `every_s` seconds (a line a
    minute while the crawl is idle)."""

    def __init__(self, frontier: Frontier, metrics: CrawlMetrics, every_s: float = 5.0,
                 *, before: Callable[[], None] | None = None,
                 exit_when_idle_s: float = 0.0) -> None:
        self.frontier = frontier
        self.before = before  # refreshes process gauges before a sample
        self.metrics = metrics
        self.every_s = every_s
        self._last = (time.monotonic(), 0)
        self.lines = IdleLines(metrics, now=time.monotonic(), exit_when_idle_s=exit_when_idle_s)
        self._seen_watch: SeenCapacityWatch | None = None

    async def sample(self) -> None:
        sample_process(self.metrics)
        if self.before is not None:
            self.before()
        stats = await self.frontier.stats()
        m = self.metrics
        m.frontier_pending_bytes = stats.pending_bytes
        m.frontier_ready_domains = stats.ready_domains
        m.frontier_due_domains = stats.due_domains
        m.frontier_leased_domains = stats.leased_domains
        self._watch_seen_filter(stats.counters.get("urls_added", 0))

    def _watch_seen_filter(self, added: int) -> None:
        """The crawl-wide URLs added against the seen filter's capacity: a warning as it fills
        (past it, new URLs are dropped as seen; seen_capacity.py)."""
        if self._seen_watch is None:  # the filter as opened (its layout adopted from Redis)
            self._seen_watch = self.frontier.seen.capacity_watch()
        m = self.metrics
        m.seen_filter_urls, m.seen_filter_capacity = added, self._seen_watch.capacity
        warning = self._seen_watch.check(added)
        if warning:
            log.warning("%s", warning)

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
            now, rate = time.monotonic(), self.rate()
            kind = self.lines.next_line(now)
            if kind == "progress":
                log.info("%s", format_progress(self.metrics, rate))
            elif kind == "idle":
                log.info("%s", self.lines.idle_line(now, await self._next_due_s()))

    async def _next_due_s(self) -> float | None:
        """Seconds until the earliest domain in the ready queue is due, if any waits."""
        m = self.metrics
        if not m.frontier_ready_domains or m.frontier_due_domains:
            return None
        try:
            first = await self.frontier.redis.zrange(self.frontier.state.keys.ready, 0, 0,
                                                     withscores=True)
        except Exception:  # the line goes without it
            return None
        return max(0.0, float(first[0][1]) - time.time()) if first else None
