"""SegmentCloser: close the page-index segment every N pages or T seconds, or once the crawl
has been idle a while (idle_close.py); tell Dagster once each.

Before a segment file is written the blob store is synced (one syncfs; nothing to do on S3,
where a put is durable once acknowledged), so every body a record points to is durable when
the record becomes visible. With an S3 primary the closed segment, and any an earlier close
could not upload, then go to the bucket (captures/segment_spool.py); a failed upload leaves
the file for the next close. Reporting goes through
`frontier_service.archiving.events` (imported only when a Dagster home is configured:
importing Dagster costs seconds and memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.captures.segment_source import SegmentSource
from archive_pipelines.captures.segment_spool import upload_spooled_segments
from frontier_service.archiving.archiver import Archiver, SegmentSummary
from frontier_service.archiving.idle_close import CloseKind, IdleClose
from frontier_service.metrics import CrawlMetrics

log = logging.getLogger(__name__)


class DagsterReporter:
    """Reports segments to the instance in `dagster_home` (blocking calls: use a thread)."""

    def __init__(self, dagster_home: Path) -> None:
        self.dagster_home = dagster_home
        self._instance: Any = None

    def report(self, summary: SegmentSummary) -> bool:
        from frontier_service.archiving.events import open_instance, report_segment

        if self._instance is None:
            self._instance = open_instance(self.dagster_home)
        return report_segment(self._instance, summary) is not None

    def close(self) -> None:
        if self._instance is not None:
            self._instance.dispose()
            self._instance = None


class SegmentCloser:
    """Closes the open segment when full, old, or the crawl has gone idle (idle_close.py)."""

    def __init__(self, archiver: Archiver, store: BlobStore, metrics: CrawlMetrics,
                 *, reporter: DagsterReporter | None = None, check_s: float = 0.5,
                 idle_s: float = 0.0, segments: SegmentSource | None = None) -> None:
        self.archiver = archiver
        self.store = store
        self.segments = segments  # where closed segments go (a bucket: uploaded); None: stay
        self.metrics = metrics
        self.reporter = reporter
        self.check_s = check_s
        self.idle = IdleClose(idle_s, archiver.segment_seconds, now=time.monotonic())
        self.summaries: list[SegmentSummary] = []

    async def close_segment(self) -> SegmentSummary:
        """Sync bodies, write the segment, report it; shielded so shutdown cannot cut it."""
        return await asyncio.shield(self._close())

    async def _close(self) -> SegmentSummary:
        if self.archiver.pending_pages:
            await asyncio.to_thread(self.store.sync)
        summary = await self.archiver.close_segment()
        if summary.pages == 0 and summary.segment_path is None:
            return summary
        await self._upload()
        self.metrics.segments_closed += 1
        self.summaries.append(summary)
        log.info("segment closed: %d pages, %d bytes, %d new blobs, %d errors, %.1f pages/s -> %s",
                 summary.pages, summary.bytes, summary.new_blobs, summary.errors,
                 summary.pages_per_second, summary.segment_path)
        if self.reporter is not None and summary.pages:
            try:
                if await asyncio.to_thread(self.reporter.report, summary):
                    self.metrics.segments_reported += 1
            except Exception:  # Dagster down must not stop the crawl; the file is on disk
                self.metrics.report_errors += 1
                log.exception("reporting segment %s to Dagster failed", summary.segment_path)
        return summary

    async def _upload(self) -> None:
        """Send the data dir's closed segments to the bucket (an S3 primary only)."""
        if self.segments is None or self.segments.is_local:
            return
        done = await asyncio.to_thread(upload_spooled_segments, self.segments,
                                       self.segments.data_dir)
        self.metrics.segments_uploaded += len(done.uploaded)
        self.metrics.segments_spooled = done.left
        if done.error:
            self.metrics.segment_upload_errors += 1

    async def run(self, finished: asyncio.Event) -> None:
        pages = self.metrics.pages
        while not finished.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), self.check_s)
            if finished.is_set():
                return
            now = time.monotonic()
            if self.metrics.pages != pages:
                pages = self.metrics.pages
                self.idle.saw_pages(now)
            kind = self._close_kind(now)
            if kind is not None:
                if kind is CloseKind.IDLE:
                    log.info("no page archived for %.0f s: closing the open segment so its "
                             "%d pages can be ingested", self.idle.idle_for(now),
                             self.archiver.pending_pages)
                    self.metrics.segments_closed_idle += 1
                self.idle.closed(kind)
                await self.close_segment()

    def _close_kind(self, now: float) -> CloseKind | None:
        archiver = self.archiver
        if archiver.pending_pages == 0:
            return None
        if archiver.pending_pages >= archiver.segment_pages:
            return CloseKind.SIZE
        if archiver.should_close():
            return CloseKind.AGE
        return CloseKind.IDLE if self.idle.due(now) else None
