"""Archiver: bodies into the blob store, page-fetch records into segments, counts per segment."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from archive_pipelines.blobstore import BlobStore, PutResult
from frontier_service.archiving.browser_record import (
    BrowserView,
    PageLoad,
    RecordedRequest,
    browser_page_record,
)
from frontier_service.archiving.page_index import PageIndexWriter, SegmentFile
from frontier_service.archiving.page_record import StoredFetch, page_record
from frontier_service.archiving.stored_bodies import StoredBodies
from frontier_service.archiving.validators import Validators
from frontier_service.fetch.result import FetchResult
from frontier_service.frontier.frontier_record import ResourceType

T = TypeVar("T")


@dataclass(frozen=True)
class ArchivedPage:
    """What archiving one page (and its assets) did."""

    page_url: str
    final_url: str
    status: int | None
    depth: int
    body_sha256: str | None  # None when no body arrived
    bytes: int  # body bytes of the page and its assets
    new_blobs: int  # bodies the store did not hold before (the rest were deduplicated)
    error: str | None


@dataclass(frozen=True)
class SegmentSummary:
    """One closed segment: what Dagster hears about as a `crawl_segments` materialization."""

    session_id: str
    pages: int
    bytes: int  # body bytes archived (pages and assets), before deduplication
    stored_bytes: int  # bytes the blob store actually added
    new_blobs: int
    errors: int  # pages whose fetch failed (no response, redirect loop ...)
    started: float  # epoch seconds
    ended: float
    pages_per_second: float
    segment_path: Path | None  # None for an empty segment (nothing written)
    partition_date: str  # YYYY-MM-DD (UTC), the segment directory's date


@dataclass
class _Counts:
    started: float
    pages: int = 0
    bytes: int = 0
    stored_bytes: int = 0
    new_blobs: int = 0
    errors: int = 0


class Archiver:
    """Archives fetched pages for one crawl session.

    Args:
        blob_store: where bodies go, deduplicated by SHA-256.
        index_writer: the session's page-fetch index.
        segment_pages / segment_seconds: `should_close` says yes after this many pages,
            or this long since the segment opened (if it holds any page).
        executor: for blocking blob-store I/O; the default thread pool if None.
        clock: wall-clock epoch seconds.
    """

    def __init__(
        self,
        blob_store: BlobStore,
        index_writer: PageIndexWriter,
        *,
        segment_pages: int = 1000,
        segment_seconds: float = 300.0,
        executor: Executor | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.blob_store = blob_store
        self.index_writer = index_writer
        self.segment_pages = segment_pages
        self.segment_seconds = segment_seconds
        self.clock = clock
        self._executor = executor
        self._stored = StoredBodies()  # an object store's acknowledged bodies (repeats: free)
        self._counts = _Counts(started=clock())
        self._closing = asyncio.Lock()

    @property
    def session_id(self) -> str:
        return self.index_writer.session_id

    @property
    def pending_pages(self) -> int:
        """Pages archived into the current (open) segment."""
        return self._counts.pages

    async def archive(
        self,
        fetch_result: FetchResult,
        page_url: str,
        depth: int,
        *,
        assets: Sequence[FetchResult] = (),
        resource_type: ResourceType = ResourceType.DOCUMENT,
        title: str | None = None,
        revisit_of: Validators | None = None,
    ) -> ArchivedPage:
        """Store the page's body (and its assets' bodies) and buffer its page-fetch record;
        `resource_type`: what the page's own fetch was for (an asset queued by its page
        is fetched, and archived, on its own); `title`: the page's HTML title, if read;
        `revisit_of`: for a 304 (unchanged), the earlier capture whose body it stands for
        (nothing is stored: the record refers to that body)."""
        fetches = [fetch_result, *assets]
        puts = await asyncio.gather(*(self._put(None if revisit_of and n == 0 else result.body)
                                      for n, result in enumerate(fetches)))
        stored: list[StoredFetch] = list(zip(fetches, puts, strict=True))
        record = page_record(
            session_id=self.session_id,
            page_url=page_url,
            depth=depth,
            page=stored[0],
            assets=stored[1:],
            resource_type=resource_type,
            title=title,
            revisit_of=revisit_of,
        )
        # No await from here on: the record and its counts land in the same segment.
        self.index_writer.add(record)
        archived = self._count(puts, fetch_result, puts[0], page_url=page_url, depth=depth)
        if revisit_of is not None:  # nothing stored: the page stands for the earlier body
            archived = dataclasses.replace(archived, body_sha256=revisit_of.sha256)
        return archived

    async def archive_browser(
        self,
        document: FetchResult,
        page_url: str,
        depth: int,
        *,
        load: PageLoad,
        document_request: RecordedRequest | None,
        requests: Sequence[RecordedRequest],
        mode: str,
        signals: Sequence[str] = (),
        title: str | None = None,
    ) -> ArchivedPage:
        """Store the bodies of a browser page load (its document, every answered request,
        the screenshot and the DOM) and buffer its record (browser_record.py); `requests`:
        the load's requests besides its document, in the order they began."""
        bodies = [document.body, *(r.result.body if r.refused is None else None for r in requests),
                  load.screenshot, None if load.dom is None else load.dom.encode("utf-8")]
        puts = await asyncio.gather(*(self._put(body) for body in bodies))
        document_put, request_puts = puts[0], puts[1:-2]
        view = BrowserView(mode=mode, signals=tuple(signals), load=load, screenshot=puts[-2],
                           dom=puts[-1])
        record = browser_page_record(
            session_id=self.session_id, page_url=page_url, depth=depth,
            document=(document if document_request is None else document_request.result,
                      document_put),
            document_request=document_request,
            requests=list(zip(requests, request_puts, strict=True)), view=view, title=title)
        # No await from here on: the record and its counts land in the same segment.
        self.index_writer.add(record)
        return self._count(puts, document, document_put, page_url=page_url, depth=depth)

    def _count(self, puts: Sequence[PutResult | None], document: FetchResult,
               document_put: PutResult | None, *, page_url: str, depth: int) -> ArchivedPage:
        done = [put for put in puts if put is not None]
        counts = self._counts
        counts.pages += 1
        counts.bytes += sum(put.size for put in done)
        counts.stored_bytes += sum(put.stored_bytes for put in done)
        counts.new_blobs += sum(put.created for put in done)
        counts.errors += document.error is not None
        return ArchivedPage(
            page_url=page_url, final_url=document.final_url, status=document.status,
            depth=depth, body_sha256=None if document_put is None else document_put.sha256,
            bytes=sum(put.size for put in done), new_blobs=sum(put.created for put in done),
            error=document.error)

    def should_close(self, now: float | None = None) -> bool:
        """Whether the current segment is full (pages) or old enough (seconds) to close."""
        counts = self._counts
        if counts.pages == 0:
            return False
        age = (self.clock() if now is None else now) - counts.started
        return counts.pages >= self.segment_pages or age >= self.segment_seconds

    async def close_segment(self, now: float | None = None) -> SegmentSummary:
        """Write the buffered records as one segment file and start a new segment.

        The write is shielded: a cancelled caller (shutdown) still gets its records on disk.
        """
        async with self._closing:
            ended = self.clock() if now is None else now
            counts, self._counts = self._counts, _Counts(started=ended)
            lines = self.index_writer.detach()
            write = self._blocking(self.index_writer.write_segment, lines, ended)
            segment: SegmentFile | None = await asyncio.shield(write)
        duration = max(ended - counts.started, 1e-3)
        date = segment.date if segment else time.strftime("%Y-%m-%d", time.gmtime(ended))
        return SegmentSummary(
            session_id=self.session_id,
            pages=counts.pages,
            bytes=counts.bytes,
            stored_bytes=counts.stored_bytes,
            new_blobs=counts.new_blobs,
            errors=counts.errors,
            started=counts.started,
            ended=ended,
            pages_per_second=counts.pages / duration,
            segment_path=segment.path if segment else None,
            partition_date=date,
        )

    async def has_body(self, sha256: str) -> bool:
        """Whether the store holds this body (an unchanged capture may refer to it)."""
        return await self._blocking(self.blob_store.exists, sha256)

    async def read_body(self, sha256: str, *, max_size: int) -> bytes:
        """A stored body (an unchanged page's, to find its links again); BlobStoreError
        or OSError if it cannot be read."""
        return await self._blocking(_read_blob, self.blob_store, sha256, max_size)

    async def _put(self, body: bytes | None) -> PutResult | None:
        if body is None:
            return None
        return await self._blocking(_put_deduplicated, self.blob_store, body, self._stored)

    def _blocking(self, func: Callable[..., T], *args: object) -> asyncio.Future[T]:
        """Run blocking file I/O off the event loop."""
        return asyncio.get_running_loop().run_in_executor(self._executor, func, *args)


def _put_deduplicated(store: BlobStore, body: bytes, stored: StoredBodies) -> PutResult:
    """Store a body unless an identical one is already there. A local store is asked first
    (a stat, and a present body skips writing a temp copy); a remote store deduplicates by
    itself (the crawler's S3 store with one conditional PUT per body, crawler_parts.py), so
    asking it first would cost a second request per new body, and a body it acknowledged
    in this process (`stored`) costs none. A put that fails raises: the page's record is
    never written, so no record points at a body the store lacks."""
    sha256 = hashlib.sha256(body).hexdigest()
    if store.local_path(sha256) is not None:
        if store.exists(sha256):
            return PutResult(sha256, len(body), stored_bytes=0, created=False)
        return store.put_bytes(body)
    if sha256 in stored:
        return PutResult(sha256, len(body), stored_bytes=0, created=False)
    put = store.put_bytes(body)
    stored.add(put.sha256)
    return put


def _read_blob(store: BlobStore, sha256: str, max_size: int) -> bytes:
    with store.open(sha256, max_size=max_size) as handle:
        return handle.read()
