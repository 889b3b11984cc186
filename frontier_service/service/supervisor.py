"""CrawlerSupervisor: N crawler processes on one Redis frontier and one data dir.

One asyncio process is bound by one core; the crawl's state is already shared and atomic
(domain claims are leased Lua scripts, frontier appends are line-atomic), so more cores
means more processes. The supervisor starts the embedded Redis if asked, queues the seeds,
replays crashed runs' journals once, then spawns the children (`spawn`: fresh interpreters)
with the total concurrency split between them. Each child is a full CrawlerService with its
own session, journals, segments and lease owner id, and prefers the domains of its shard
(see FrontierState): without that affinity a host bounced between processes and about every
other fetch opened a new connection, which cost more CPU than the second core gave. The
supervisor adds their metrics up (health endpoint, progress line, --max-pages), forwards
SIGTERM/SIGINT as SIGTERM (a second one aborts the drains), and when a child dies
unexpectedly it ends that child's leases (its domains come back at their checkpointed
offsets), recovers its journals (links it found, page records not yet in a segment) and
starts a replacement.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from redis.exceptions import RedisError

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.settings import StoreSettings
from frontier_service.frontier.frontier import AddResult, Frontier
from frontier_service.frontier.redis_conn import open_redis
from frontier_service.metrics import CrawlMetrics, combine_metrics
from frontier_service.recovery.frontier_recovery import FrontierRecovery
from frontier_service.recovery.redis_memory import memory_guard
from frontier_service.service.child import ChildSpec, Finished, Snapshot, Started, child_main, cpu_seconds
from frontier_service.service.crawler_parts import check_data_dir, frontier_config, recover_crashed_runs
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.health import HealthServer
from frontier_service.service.process import on_stop_signals
from frontier_service.service.progress_line import IdleLines, format_progress
from frontier_service.service.seeding import add_seeds
from frontier_service.service.service import RunReport
from frontier_service.service.stop_report import log_stop_report, stop_report

log = logging.getLogger(__name__)


class CrawlerProcessesFailed(ArchiveError):
    """Crawler processes kept dying; the supervisor gave up."""


def resolve_processes(value: str | int) -> int:
    """`auto` is the CPUs this process may run on; otherwise a count of at least 1."""
    if value == "auto":
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                   else os.cpu_count() or 1)
    try:
        count = int(value)
    except ValueError:
        raise ArchiveError(f"processes must be a number or 'auto', got {value!r}") from None
    if count < 1:
        raise ArchiveError(f"processes must be at least 1, got {count}")
    return count


def split_concurrency(total: int, processes: int) -> list[int]:
    """The total concurrent fetches shared out: [5, 5, 4] for 14 over 3."""
    return [total // processes + (i < total % processes) for i in range(processes)]


@dataclass
class _Child:
    serial: int  # unique per process started
    slot: int  # which share of the concurrency it runs
    process: BaseProcess
    conn: Connection
    session_id: str = ""
    owner: str = ""
    metrics: CrawlMetrics | None = None
    cpu_s: float = 0.0
    report: RunReport | None = None


class CrawlerSupervisor:
    """`await run()`; `request_stop()` drains every child. The API of CrawlerService."""

    def __init__(self, settings: CrawlerSettings, processes: int, *, seeds: tuple[str, ...] = (),
                 store_settings: StoreSettings | None = None, max_restarts: int | None = None,
                 restart_delay_s: float = 1.0) -> None:
        if settings.concurrency < processes:
            raise ArchiveError(f"concurrency {settings.concurrency} is less than one fetch "
                               f"per process ({processes} processes)")
        self.settings = settings
        self.processes = processes
        self.seeds = seeds
        self.store_settings = store_settings
        self.max_restarts = 2 * processes if max_restarts is None else max_restarts
        self.restart_delay_s = restart_delay_s
        self.metrics = CrawlMetrics()
        self.started = asyncio.Event()  # every first child runs its workers
        self.stopping = asyncio.Event()
        self.stop_reason = ""
        self.seed_result: AddResult | None = None
        self.health: HealthServer | None = None
        self.restarts = 0
        self.gave_up = False
        self._children: list[_Child] = []
        self._events: asyncio.Queue[tuple[_Child, Any]] = asyncio.Queue()
        self._live = 0
        self._child_settings: list[CrawlerSettings] = []

    @property
    def session_ids(self) -> list[str]:
        return [c.session_id for c in self._children if c.session_id]

    @property
    def child_reports(self) -> list[RunReport | None]:
        """Each child's own report (None for one that died), in the order they started."""
        return [c.report for c in self._children]

    def request_stop(self, reason: str = "stop requested") -> None:
        if not self.stopping.is_set():
            self.stop_reason = reason
            log.info("stopping (%s): draining %d crawler processes", reason, self._live)
            self.metrics.stopping = True
            self.stopping.set()
        self._signal_children()

    def abort_drain(self) -> None:
        """A second stop signal: the children cancel their in-flight fetches."""
        self._signal_children()

    def cpu_seconds(self) -> float:
        """CPU time of this process and its children (as they last reported it)."""
        return cpu_seconds() + sum(c.cpu_s for c in self._children)

    async def run(self) -> RunReport:
        began = time.monotonic()
        s = self.settings
        check_data_dir(s.data_dir, s.frontier_home)
        async with (open_redis(s.redis_url, s.data_dir) as (redis, url),
                    memory_guard(redis, url, s.crawl_name, writing=True)):
            frontier = await Frontier(redis, s.frontier_home, frontier_config(s)).open()
            try:
                await FrontierRecovery(frontier, s.frontier_home).on_start()
                if self.seeds:
                    self.seed_result = await add_seeds(frontier, s, self.seeds)
                await recover_crashed_runs(frontier, s)
                # The children count pages themselves; --max-pages is a total, watched here.
                shared = s.with_changes(redis_url=url, metrics_port=-1, recover_on_start=False)
                # Each child prefers its shard of the domains: a domain keeps going to one
                # process and its keep-alive connection (others take it if it falls behind).
                self._child_settings = [
                    shared.with_changes(concurrency=share, max_pages=0, shard=i,
                                        shards=self.processes)
                    for i, share in enumerate(split_concurrency(s.concurrency, self.processes))]
                if s.metrics_port >= 0:
                    self.health = HealthServer(self.metrics, port=s.metrics_port,
                                               sample_process=False)  # the children's sum
                    await self.health.start()
                await self._supervise(frontier, url)
                stop = await stop_report(frontier, self._run_reason())
            finally:
                for child in self._children:
                    if child.process.is_alive():  # only if supervising itself failed
                        child.process.kill()
                if self.health is not None:
                    await self.health.stop()
                frontier.close()
        if self.gave_up:
            raise CrawlerProcessesFailed(f"crawler processes kept crashing ({self.restarts} "
                                         "restarts); see the log above")
        reports = [c.report for c in self._children if c.report is not None]
        m = self.metrics
        log_stop_report(stop, m.urls_dropped)
        return RunReport(session_id=",".join(self.session_ids), pages=m.pages,
                         seconds=time.monotonic() - began,
                         segments=sum(r.segments for r in reports),
                         health_url=self.health.url if self.health else "", metrics=m,
                         failure=next((r.failure for r in reports if r.failure), ""), stop=stop,
                         processes=self.processes)

    def _run_reason(self) -> str:
        """Why the run stopped: the supervisor's own reason, or its children's most common."""
        if not self.stop_reason:
            reasons = [c.report.stop.run_reason or c.report.stop_reason for c in self._children
                       if c.report is not None and c.report.stop_reason]
            self.stop_reason = max(set(reasons), key=reasons.count) if reasons else "stopped"
        return self.stop_reason

    async def _supervise(self, frontier: Frontier, redis_url: str) -> None:
        if self.stopping.is_set():  # stopped while seeding or recovering
            return
        for slot in range(self.processes):
            self._spawn(slot)
        log.info("crawl %r: %d crawler processes, %d concurrent fetches in all, Redis %s, "
                 "health %s", self.settings.crawl_name, self.processes,
                 self.settings.concurrency, redis_url, self.health.url if self.health else "off")
        watch = asyncio.create_task(self._watch(frontier), name="supervisor-watch")
        try:
            while self._live:
                child, message = await self._events.get()
                if message is None:
                    self._live -= 1
                    await self._exited(child, frontier)
                elif isinstance(message, Snapshot):
                    child.metrics, child.cpu_s = message.metrics, message.cpu_s
                    self._combine()
                elif isinstance(message, Started):
                    child.session_id, child.owner = message.session_id, message.owner
                    if all(c.owner for c in self._children[:self.processes]):
                        self.started.set()
                elif isinstance(message, Finished):
                    child.report, child.cpu_s = message.report, message.cpu_s
                    child.metrics = message.report.metrics
                    self._combine()
                    if message.report.failure:  # a full disk stops every process
                        self.request_stop(message.report.failure)
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        self.started.set()  # nobody waits forever on a run that ended early
        log.info("all crawler processes: %s",
                 format_progress(self.metrics, self.metrics.pages / self.metrics.uptime_s()))

    def _spawn(self, slot: int) -> None:
        context = multiprocessing.get_context("spawn")
        receive, send = context.Pipe(duplex=False)
        spec = ChildSpec(slot, self._child_settings[slot], self.store_settings,
                         logging.getLogger().getEffectiveLevel(), os.getpid())
        process = context.Process(target=child_main, args=(spec, send), name=f"crawler-{slot}")
        process.start()
        send.close()  # the child's end: EOF on ours once the child is gone
        child = _Child(len(self._children), slot, process, receive)
        self._children.append(child)
        self._live += 1
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, args=(child, loop), daemon=True,
                         name=f"read-crawler-{slot}").start()

    def _read(self, child: _Child, loop: asyncio.AbstractEventLoop) -> None:
        """A thread per child: its messages, then None once it has exited."""
        try:
            while True:
                message = child.conn.recv()
                loop.call_soon_threadsafe(self._events.put_nowait, (child, message))
        except (EOFError, OSError):
            pass
        child.process.join()
        child.conn.close()
        loop.call_soon_threadsafe(self._events.put_nowait, (child, None))

    async def _exited(self, child: _Child, frontier: Frontier) -> None:
        code = child.process.exitcode
        # Its report comes after its drain: done, even if a stop signal sent to all
        # children (one stopped for a full disk) then cut its exit short.
        if child.report is not None:
            log.info("crawler-%d (pid %s) finished: %d pages (%s)", child.slot, child.process.pid,
                     child.report.pages, child.report.stop_reason)
            return
        log.error("crawler-%d (pid %s) died (exit code %s): ending its leases and recovering its "
                  "journals", child.slot, child.process.pid, code)
        try:
            if child.owner:
                ended = await frontier.state.expire_leases_of(child.owner)
                log.info("crawler-%d held %d leases; its domains are claimable again",
                         child.slot, ended)
            await recover_crashed_runs(frontier, self.settings)
        except (RedisError, OSError) as exc:  # its leases still expire on their own
            log.warning("recovering crawler-%d failed (%s); its leases expire in %g s",
                        child.slot, exc, self.settings.lease_seconds)
        if self.stopping.is_set():
            return
        if self.restarts >= self.max_restarts:
            self.gave_up = True
            self.request_stop("crawler processes keep crashing")
            return
        self.restarts += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), self.restart_delay_s)
        if not self.stopping.is_set():
            log.info("starting a new crawler-%d", child.slot)
            self._spawn(child.slot)

    def _combine(self) -> None:
        gauges = {name: getattr(self.metrics, name) for name in (
            "frontier_pending_bytes", "frontier_ready_domains", "frontier_due_domains",
            "frontier_leased_domains")}
        combined = combine_metrics([c.metrics for c in self._children if c.metrics is not None])
        combined.stopping = combined.stopping or self.stopping.is_set()
        combined.started_at = self.metrics.started_at
        for name, value in gauges.items():  # sampled by _watch, not by the children
            setattr(combined, name, value)
        # HealthServer holds self.metrics: update it in place.
        self.metrics.__dict__.update(combined.__dict__)

    async def _watch(self, frontier: Frontier) -> None:
        """--max-pages over all processes, and the combined progress line."""
        s, m = self.settings, self.metrics
        every = s.progress_seconds if s.progress_seconds > 0 else None
        last_line, last_pages = time.monotonic(), 0
        lines = IdleLines(m, now=last_line, exit_when_idle_s=s.exit_when_idle_s)
        while True:
            await asyncio.sleep(0.1)
            if s.max_pages and m.pages >= s.max_pages and not self.stopping.is_set():
                self.request_stop(f"max pages ({s.max_pages}) reached")
            now = time.monotonic()
            if every is not None and now - last_line >= every:
                try:
                    stats = await frontier.stats()
                except (RedisError, OSError) as exc:
                    log.warning("frontier stats unavailable: %s", exc)
                else:
                    m.frontier_pending_bytes, m.frontier_ready_domains = (
                        stats.pending_bytes, stats.ready_domains)
                    m.frontier_due_domains, m.frontier_leased_domains = (
                        stats.due_domains, stats.leased_domains)
                rate = (m.pages - last_pages) / (now - last_line)
                last_line, last_pages = now, m.pages
                line = lines.line(now, rate)
                if line is not None:
                    log.info("all %d processes: %s", self._live, line)

    def _signal_children(self) -> None:
        for child in self._children:
            if child.process.exitcode is None and child.process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.process.pid, signal.SIGTERM)


def run_supervisor(settings: CrawlerSettings, processes: int, *, seeds: tuple[str, ...] = (),
                   store_settings: StoreSettings | None = None) -> RunReport:
    """Run `processes` crawler processes until SIGTERM/SIGINT or a stop condition.

    The first signal drains every child; a second one makes them cancel in-flight fetches.
    """

    async def main() -> RunReport:
        supervisor = CrawlerSupervisor(settings, processes, seeds=seeds,
                                       store_settings=store_settings)
        on_stop_signals((signal.SIGTERM, signal.SIGINT), first=supervisor.request_stop,
                        second=supervisor.abort_drain, what="the drains")
        return await supervisor.run()

    return asyncio.run(main())
