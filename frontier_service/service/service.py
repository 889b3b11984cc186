"""CrawlerService: arq's lifecycle for the crawler.

startup (open_parts) -> a TaskGroup of N workers plus the claimer, the link and visit
flushers, the segment closer, the progress line and the limits watch -> on SIGTERM (or a
limit): stop claiming, hand back unstarted domains, let in-flight fetches finish (up to
`drain_timeout_s`, then cancel them and hand their URLs back), flush discovered links
and visited records, release every lease, close the segment (shielded) -> shutdown.

A full data disk stops the crawl the same way, as a failure (`RunReport.failure`): a URL
whose body or record could not be written stays queued; no more links go to the frontier
(its seen filter would take URLs its files have no room for) and no more segments are
written. Links stay in their journal, page records in theirs (the next run queues and
segments them, as after a crash), and every domain is released at its last durable read
offset, so the rerun fetches again exactly what was not recorded.

A blob store that fails (an S3 primary unreachable or refusing, after its client's own
retries) stops the crawl too, as a failure (`STORE_FAILURE`): the page whose body it could
not take has no record and stays queued, the records of the pages archived before (whose
bodies the store acknowledged) are written as usual, and the rerun archives the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import RedisError

from archive_pipelines.archive_error import disk_full_message, is_disk_full
from archive_pipelines.blobstore import BlobStoreError
from archive_pipelines.settings import StoreSettings
from frontier_service.archiving.page_journal import IndexJournal, journal_dir
from frontier_service.archiving.segment_closer import DagsterReporter, SegmentCloser
from frontier_service.counts import Counts
from frontier_service.frontier.checkpoint import checkpoint_dir
from frontier_service.frontier.compaction import compact_periodically
from frontier_service.frontier.frontier import AddResult
from frontier_service.frontier.script_guard import FrontierLost
from frontier_service.machines.inbox import InboxConsumer
from frontier_service.machines.machine_loop import MACHINE_CLAIM_POLL_S, MachineLoop
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.claim_settings import ClaimSettings
from frontier_service.pages.claimer import DomainClaimer
from frontier_service.pages.flush_loop import flush_until
from frontier_service.pages.held_host import Claimed, Outcome
from frontier_service.pages.host_dispatcher import HostDispatcher
from frontier_service.pages.link_buffer import LinkBuffer
from frontier_service.pages.link_journal import link_journal_dir
from frontier_service.pages.processor import PageProcessor, Politeness
from frontier_service.pages.visit_buffer import VisitBuffer
from frontier_service.recovery.disk_frontier import file_fingerprints
from frontier_service.recovery.frontier_recovery import FrontierRecovery
from frontier_service.recovery.redis_memory import RedisCannotHoldCrawl
from frontier_service.scope.drops import UrlDrops
from frontier_service.service.browser_wiring import browser_pages
from frontier_service.service.crawler_parts import CrawlerParts, open_parts
from frontier_service.service.crawler_settings import CrawlerSettings, scope_for
from frontier_service.service.health import HealthServer
from frontier_service.service.progress_line import ProgressReporter, format_progress
from frontier_service.service.seeding import add_seeds
from frontier_service.service.stop_report import (
    NOTHING_LEFT_TO_FETCH,
    StopReport,
    log_stop_report,
    stop_report,
)

log = logging.getLogger(__name__)


@dataclass
class RunReport(Counts):
    """What a crawl run did (one process or several) and why it stopped."""

    session_id: str = ""
    pages: int = 0
    seconds: float = 0.0
    segments: int = 0
    health_url: str = ""
    metrics: CrawlMetrics = field(default_factory=CrawlMetrics)
    failure: str = ""  # why the crawl could not go on (a full disk, Redis); empty: as asked
    # The run's reason and the hosts that stopped with URLs left queued, by reason.
    stop: StopReport = field(default_factory=lambda: StopReport(""))
    processes: int = 1  # crawler processes that ran it

    @property
    def stop_reason(self) -> str:
        """Why the run stopped, with what the stopped hosts left (StopReport.summary)."""
        return self.stop.summary

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0

    def as_metadata(self) -> dict[str, Any]:
        """The run's summary as `frontier-service run` prints it."""
        m = self.metrics
        return {"session_id": self.session_id, "pages": self.pages,
                "seconds": round(self.seconds, 1),
                "pages_per_second": round(self.pages_per_second, 1),
                "segments": self.segments, **self.stop.as_metadata(),
                "body_bytes": m.body_bytes, "new_blobs": m.new_blobs,
                "conditional_requests": m.conditional_requests, "unchanged": m.unchanged,
                "urls_dropped": dict(sorted(m.urls_dropped.items())),
                "redis_rebuilds": m.redis_rebuilds, "frontier_repairs": m.frontier_repairs,
                "processes": self.processes, "failed": bool(self.failure)}


STORE_FAILURE = "the blob store failed"


def store_is_failing(exc: BlobStoreError) -> bool:
    """Whether a put failed for the store itself (unreachable, refusing), not for one blob."""
    from archive_pipelines.blobstore.s3_errors import S3StoreError  # boto: S3 deployments only

    return isinstance(exc, S3StoreError) or type(exc) is BlobStoreError


class CrawlerService:
    """One crawler process. `await run()`; `request_stop()` (e.g. from SIGTERM) drains it."""

    def __init__(self, settings: CrawlerSettings, *, seeds: tuple[str, ...] = (),
                 store_settings: StoreSettings | None = None) -> None:
        self.settings = settings
        self.seeds = seeds
        self.store_settings = store_settings
        self.metrics = CrawlMetrics()
        self.stopping = asyncio.Event()
        self.finished = asyncio.Event()
        self.stop_reason = ""
        self._machines: MachineLoop | None = None  # several machines: this one's part
        self.failure = ""  # set by a fault that stops the crawl (`disk_full`)
        self.store_failure = ""  # the blob store failed: the crawl stops, its records are kept
        self.seed_result: AddResult | None = None
        self.health: HealthServer | None = None
        self.started = asyncio.Event()  # set once the workers run
        self._journal: IndexJournal | None = None
        self._links: LinkBuffer | None = None
        self.session_id = ""  # known once started
        self.owner = ""  # this process's lease owner id, known once started

    def request_stop(self, reason: str = "stop requested") -> None:
        if not self.stopping.is_set():
            self.stop_reason = reason
            log.info("stopping (%s): no new claims, draining in-flight fetches", reason)
            self.metrics.stopping = True
            self.stopping.set()

    def disk_full(self, exc: BaseException) -> None:
        """A write to the data disk failed for want of space: every later one would too, so
        the crawl stops (drains) as a failure; what was not written stays to be done."""
        if self.failure:
            return
        self.failure = disk_full_message(exc)
        log.error("%s; stopping the crawl: the URLs not recorded stay queued for the next run",
                  self.failure)
        self.request_stop(self.failure)
        if self._links is not None:
            self._links.hold()

    def blob_store_failed(self, exc: BaseException) -> None:
        """The blob store failed (every later put would most likely fail too): the crawl
        stops; the URLs whose bodies it did not take stay queued for the next run."""
        if self.store_failure or self.failure:
            return
        self.store_failure = f"{STORE_FAILURE}: {exc}"
        log.error("%s; stopping the crawl: the URLs not archived stay queued for the next run",
                  self.store_failure)
        self.request_stop(self.store_failure)

    def _on_write_error(self, exc: BaseException) -> None:
        if is_disk_full(exc):
            self.disk_full(exc)

    async def run(self) -> RunReport:
        began = time.monotonic()
        # Frontier file appends and reads, robots parsing: more than the default ~6 threads.
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(32, thread_name_prefix="crawler-io"))
        async with open_parts(self.settings, self.store_settings, self.metrics) as parts:
            if self.seeds:
                self.seed_result = await add_seeds(parts.frontier, self.settings, self.seeds)
            if self.settings.metrics_port >= 0:
                self.health = HealthServer(self.metrics, port=self.settings.metrics_port)
                await self.health.start()
            try:
                self._machines = parts.machines
                closer = await self._crawl(parts)
                if parts.machines is not None:
                    await self._leave_machines(parts.machines)
                stop = await stop_report(parts.frontier, self.stop_reason)
            finally:
                if self.health is not None:
                    await self.health.stop()
        log_stop_report(stop, self.metrics.urls_dropped)
        return RunReport(session_id=parts.session_id, pages=self.metrics.pages,
                         seconds=time.monotonic() - began, segments=len(closer.summaries),
                         health_url=self.health.url if self.health else "",
                         metrics=self.metrics, failure=self.failure or self.store_failure,
                         stop=stop)

    async def _crawl(self, parts: CrawlerParts) -> SegmentCloser:
        s, m = self.settings, self.metrics
        visits = VisitBuffer(parts.frontier, flush_records=s.visit_flush_records,
                             flush_s=s.visit_flush_s)
        scope = scope_for(s)
        links = self._links = LinkBuffer(parts.frontier, scope, m, flush_urls=s.link_flush_urls,
                                         flush_s=s.link_flush_s, max_pending=s.link_max_pending,
                                         journal=parts.link_journal,
                                         drops=UrlDrops(m, persist=visits.count))
        journal = self._journal = parts.index_writer.journal
        self.session_id, self.owner = parts.session_id, parts.owner

        async def checkpoint() -> None:  # results of handled URLs: durable before release
            try:
                journal.sync()
                links.journal_pending()
            except OSError as exc:  # not durable: the releases wait (a full disk: for good)
                self._on_write_error(exc)
                raise
            try:  # visited records and page counts: kept and retried while Redis is away
                await visits.flush()
            except (RedisError, OSError) as exc:
                log.debug("visited records wait for Redis: %s", exc)

        # Claimed domains wait in a queue up to claim_batch deep: a slow claim round (Redis
        # busy with a big add) must not leave the workers idle.
        poll_s = s.claim_poll_s if parts.machines is None else max(s.claim_poll_s,
                                                                    MACHINE_CLAIM_POLL_S)
        claim = ClaimSettings(capacity=s.concurrency + min(s.claim_batch, s.concurrency),
                              batch=s.claim_batch, poll_s=poll_s,
                              page_budget=s.domain_page_budget, per_host=s.per_host_concurrency)
        hosts = HostDispatcher(parts.frontier.files, m, visits, settings=claim,
                               offsets=parts.offsets)
        claimer = DomainClaimer(parts.frontier, parts.owner, hosts, metrics=m, settings=claim,
                                checkpoint=checkpoint, offsets=parts.offsets,
                                known_offset=parts.recovery.known_offset)
        processor = PageProcessor(
            frontier=parts.frontier, fetcher=parts.fetcher, robots=parts.robots,
            archiver=parts.archiver, links=links, visits=visits, metrics=m,
            politeness=Politeness(s.min_delay_s, s.max_crawl_delay_s, s.response_time_factor),
            max_depth=s.max_depth, fetch_assets=s.fetch_assets,
            max_assets_per_page=s.max_assets_per_page,
            failure_backoff_s=s.host_failure_backoff_s, validators=parts.validators,
            browser=browser_pages(parts, links=links, visits=visits, metrics=m))
        reporter = DagsterReporter(s.dagster_home) if s.dagster_home else None
        closer = SegmentCloser(parts.archiver, parts.store, m, reporter=reporter,
                               idle_s=s.segment_idle_seconds, segments=parts.segments)
        progress = ProgressReporter(parts.frontier, m, s.progress_seconds, before=claimer.gauges,
                                    exit_when_idle_s=s.exit_when_idle_s)
        log.info("crawl %r session %s: %d workers, Redis %s, health %s", s.crawl_name,
                 parts.session_id, s.concurrency, parts.redis_url,
                 self.health.url if self.health else "off")
        try:
            async with asyncio.TaskGroup() as tg:
                claim_task = tg.create_task(self._claim_loop(claimer, parts.recovery),
                                            name="claimer")
                workers = [tg.create_task(self._worker(hosts, processor), name=f"worker-{i}")
                           for i in range(s.concurrency)]
                tg.create_task(claimer.run_checkpoints(self.finished), name="checkpoints")
                tg.create_task(flush_until(self.finished, lambda: asyncio.to_thread(
                    parts.offsets.write), full=asyncio.Event(), every_s=s.checkpoint_seconds, log=log,
                    failure="writing the offset checkpoint failed; retrying",
                    on_error=self._on_write_error), name="offset-checkpoint")
                if s.compact_bytes:
                    tg.create_task(compact_periodically(
                        parts.frontier.files, checkpoint_dir(s.frontier_home, s.crawl_name),
                        threshold=s.compact_bytes, every_s=s.compact_seconds,
                        finished=self.finished, part=s.shard, parts=s.shards), name="compaction")
                tg.create_task(self._audit_loop(parts.recovery), name="audit")
                tg.create_task(parts.recovery.watch(self.stopping, self.redis_failure),
                               name="redis-watch")
                tg.create_task(links.run(self.finished, on_error=self._on_write_error),
                               name="links")
                tg.create_task(visits.run(self.finished), name="visits")
                tg.create_task(self._close_segments(closer), name="segments")
                tg.create_task(progress.run(self.finished), name="progress")
                tg.create_task(self._watch_limits(claimer, links, progress,
                                                  recovery=parts.recovery),
                               name="limits")
                if parts.machines is not None:
                    tg.create_task(parts.machines.run(self.finished), name="machine")
                    inbox = InboxConsumer(parts.frontier, consumer=parts.owner,
                                          on_disk=file_fingerprints)
                    tg.create_task(inbox.run(self.finished), name="inbox")
                tg.create_task(self._drain(claim_task, workers, claimer, links=links,
                                           visits=visits, closer=closer), name="drain")
                self.started.set()
        finally:
            if reporter is not None:
                reporter.close()
        log.info("%s", format_progress(m, m.pages / m.uptime_s()))
        return closer

    async def _claim_loop(self, claimer: DomainClaimer, recovery: FrontierRecovery) -> None:
        """The claimer, restarted after Redis trouble (the crawl waits, it does not die);
        a Redis that lost the crawl's state is rebuilt from disk first."""
        while not self.stopping.is_set():
            try:
                await claimer.run(self.stopping)
            except FrontierLost:
                claimer.hosts.drop_leases()  # the rebuilt Redis holds none of them
                try:
                    await recovery.rebuild_lost()
                except RedisCannotHoldCrawl as exc:
                    self.redis_failure(str(exc))
                except (RedisError, OSError) as exc:
                    log.warning("rebuilding Redis failed (%s); retrying in 1 s", exc)
                    await asyncio.sleep(1.0)
            except (RedisError, OSError) as exc:
                self._on_write_error(exc)  # (its last checkpoint, on a full disk)
                if self.stopping.is_set():  # the drain's final flush tries again
                    log.warning("handing back domains failed (%s)", exc)
                    return
                log.warning("claiming failed (%s); retrying in 1 s", exc)
                await asyncio.sleep(1.0)

    async def _worker(self, hosts: HostDispatcher, processor: PageProcessor) -> None:
        while True:
            # Discovered links waiting for the frontier are capped: a worker waits for room
            # before it takes a URL (whose page would add more), holding no host meanwhile.
            await processor.links.room()
            item = await hosts.queue.get()
            if item is None:
                return
            begun_at = hosts.starting(item)
            try:
                outcome = await processor.process(item, begun_at=begun_at)
            except asyncio.CancelledError:  # drain timed out: the URL goes back unfetched
                hosts.finished(item, Outcome(time.time(), item.start_offset, solo=True))
                raise
            except Exception as exc:
                outcome = self._failed(item, exc)
            hosts.finished(item, outcome)

    def _failed(self, item: Claimed, exc: Exception) -> Outcome:
        """What a URL whose processing raised `exc` comes to: back in the queue, unless the
        fault was the URL's own."""
        if is_disk_full(exc):  # its body or record could not be written: nothing of it was
            self.disk_full(exc)
            return Outcome(time.time(), item.start_offset, solo=True)
        if isinstance(exc, BlobStoreError) and store_is_failing(exc):  # no record was written
            self.metrics.store_errors += 1
            self.blob_store_failed(exc)
            return Outcome(time.time(), item.start_offset, solo=True)
        if isinstance(exc, (RedisError, OSError)):  # our trouble, not the URL's: try it again later
            log.warning("processing %s failed (%s); it stays queued", item.record.url, exc)
            return Outcome(time.time() + self.settings.min_delay_s, item.start_offset,
                           solo=True, delay_s=self.settings.min_delay_s)
        log.exception("processing %s failed; skipping it", item.record.url)
        return Outcome(time.time() + self.settings.min_delay_s, item.end_offset,
                       solo=True, delay_s=self.settings.min_delay_s)

    async def _close_segments(self, closer: SegmentCloser) -> None:
        """The segment closer; a segment the full disk refused stops the crawl, and no
        later one is written (its records wait in their journal for the next run)."""
        try:
            await closer.run(self.finished)
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            self.disk_full(exc)

    async def _drain(self, claim_task: asyncio.Task[None], workers: list[asyncio.Task[None]],
                     claimer: DomainClaimer, *, links: LinkBuffer, visits: VisitBuffer,
                     closer: SegmentCloser) -> None:
        await self.stopping.wait()
        links.stop_holding_back()  # every worker must reach the queue's end
        await claim_task  # it hands back queued domains as it ends
        for _ in workers:
            claimer.hosts.queue.put_nowait(None)
        _, late = await asyncio.wait(workers, timeout=self.settings.drain_timeout_s)
        if late:
            log.warning("drain timeout: cancelling %d fetches, their URLs stay queued", len(late))
            for task in late:
                task.cancel()
            await asyncio.wait(late)
        await asyncio.shield(self._final_flush(claimer, links, visits, closer=closer))
        self.finished.set()

    async def _final_flush(self, claimer: DomainClaimer, links: LinkBuffer, visits: VisitBuffer,
                           *, closer: SegmentCloser) -> None:
        for step, flush in (("links", links.flush), ("visited records", visits.flush),
                            ("leases", claimer.flush_releases)):
            try:
                await flush()
            except Exception as exc:
                self._on_write_error(exc)
                if isinstance(exc, RedisError) and not self.failure:  # Redis's trouble
                    log.warning("final flush of %s failed: %s", step, exc)
                elif not self.failure:
                    log.exception("final flush of %s failed", step)
        if not self.failure:
            try:
                await closer.close_segment()
            except Exception as exc:
                if not is_disk_full(exc):
                    raise
                self.disk_full(exc)
        if self.failure:
            await self._leave_to_next_run(claimer, links)
            return
        if self._journal is not None:
            self._journal.close()  # every record is in a segment now
        if links.journal is not None:
            if links.pending:  # Redis is away: the next run queues them from the journal
                log.warning("%d discovered URLs could not be queued; the next run queues "
                            "them from %s", links.pending, links.journal.directory)
                links.journal_pending()
                links.journal.abandon()
            else:
                links.journal.close()  # every link is in the frontier now

    async def _leave_to_next_run(self, claimer: DomainClaimer, links: LinkBuffer) -> None:
        """After a full disk: release every domain at its last durable read offset (unless
        the final checkpoint made them durable further on), and leave the journals of page
        records and links to the next run, which segments and queues them as after a crash."""
        try:
            await claimer.flush_releases(keep_offsets=True)
        except Exception as exc:
            log.warning("final flush of leases failed (%s); they expire in %g s",
                        exc, self.settings.lease_seconds)
        for journal in (self._journal, links.journal):
            if journal is not None:
                with contextlib.suppress(OSError):  # (a new generation it could not open)
                    journal.abandon()
        log.warning("the next run writes this run's last page records from %s and queues "
                    "the links it found from %s", journal_dir(self.settings.data_dir),
                    link_journal_dir(self.settings.frontier_home))

    async def _audit_loop(self, recovery: FrontierRecovery) -> None:
        """Every audit_seconds: repair what Redis lost of the crawl (evicted keys, a Redis
        restored from an older copy) against the files."""
        every = self.settings.audit_seconds
        while every and not self.finished.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.finished.wait(), every)
                return
            try:
                await recovery.audit()
            except (RedisError, OSError) as exc:
                log.warning("auditing Redis against the files failed: %s", exc)

    def redis_failure(self, reason: str) -> None:
        """Redis cannot hold the crawl (evictions, out of memory, repeated losses): it stops
        as a failure, as on a full disk; links wait in their journal, the files hold the rest."""
        if not self.failure:
            self.failure = reason
            self.request_stop(reason)
            if self._links is not None:
                self._links.hold()

    async def _watch_limits(self, claimer: DomainClaimer, links: LinkBuffer,
                            progress: ProgressReporter, *, recovery: FrontierRecovery) -> None:
        s, began = self.settings, time.monotonic()
        idle_since: float | None = None
        while not self.stopping.is_set():
            try:
                await asyncio.wait_for(self.stopping.wait(), 0.25)
                return
            except TimeoutError:
                pass
            now = time.monotonic()
            if s.max_pages and self.metrics.pages >= s.max_pages:
                self.request_stop(f"max pages ({s.max_pages}) reached")
            elif s.max_seconds and now - began >= s.max_seconds:
                self.request_stop(f"max seconds ({s.max_seconds:g}) reached")
            elif s.exit_when_idle_s:
                idle = await self._idle(claimer, links, progress)
                idle_since = (idle_since or now) if idle else None
                if idle_since is not None and now - idle_since >= s.exit_when_idle_s:
                    # Never "exhausted" while a file holds URLs Redis lost track of.
                    if await self._truly_exhausted(recovery):
                        self.request_stop(NOTHING_LEFT_TO_FETCH)
                    else:
                        idle_since = None

    async def _truly_exhausted(self, recovery: FrontierRecovery) -> bool:
        try:
            exhausted = await recovery.truly_exhausted()
        except (RedisError, OSError) as exc:
            log.warning("checking the frontier files before ending failed: %s", exc)
            return False
        return exhausted

    async def _leave_machines(self, machines: MachineLoop) -> None:
        """Other machines go on: give them this one's slots and unfetched URLs."""
        try:
            await machines.stop()
        except (RedisError, OSError) as exc:
            log.warning("handing this machine's slots to the others failed (%s): they take "
                        "them once its lease ends, and its URLs wait here for its next run", exc)

    async def _idle(self, claimer: DomainClaimer, links: LinkBuffer,
                    progress: ProgressReporter) -> bool:
        """Nothing leased, queued, buffered, or waiting in the ready queue (any process) or,
        with several machines, in an inbox."""
        if claimer.hosts.outstanding or links.pending or claimer.idle_rounds == 0:
            return False
        machines = self._machines
        try:
            if machines is not None and await machines.machine.inbox_lengths():
                return False
        except (RedisError, OSError):
            return False
        try:
            await progress.sample()
        except (RedisError, OSError):
            return False
        m = self.metrics
        return m.frontier_ready_domains == 0 and m.frontier_leased_domains == 0
