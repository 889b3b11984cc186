"""The records of a stored WARC read for import, in the calling process or in parallel.

`read_items` reads records from an offset on (each read, checked and its body decoded by
`import_record.read_record`; a broken stretch reported and stepped over) until the first one
that starts at or after `end`.

In parallel (`SpanReader`), the file is cut into spans at record starts, and each span is read
by a worker process that also stores the bodies and their aliases (synced before it
answers); the calling
process takes the spans' items in file order, as it would have read them itself. A cut is
found by looking for a record start after a nominal offset (`next_record_start`), which can be
a false one (a WARC inside a record's payload looks the same). So each worker says where its
reading stopped (the first record start at or after its span's end, as reading the records
one after the other found it): the next span must have begun exactly there. One that did not
is thrown away and read again in the calling process, from the last record the span before
read (its items before that offset dropped): warcio reads a broken stretch differently when a
reading begins at it than when it comes upon it after a record, and a reading alone comes upon
it. Bodies a thrown-away span stored that the reading again meets count as written by this
import (they were); the others (read from a false start) are referenced by nothing: `gc`
collects them, as after a crash.

Workers start with `spawn`, open the primary store from the settings, read the file at the
path they are given (the stored blob's own file), and exit when the process that started them
is gone (a killed import leaves no worker behind). An import onto an object store reads in
the calling process instead (its puts wait on the network: threads serve them better).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from archive_pipelines.blobstore import BlobStore, LocalBlobStore, open_store
from archive_pipelines.settings import Settings
from archive_pipelines.storage.file_workers import die_with_parent, main_module_hidden
from archive_pipelines.views.aliases import AliasIndex
from archive_pipelines.warc.collector import fewer_collections
from archive_pipelines.warc.import_record import Body, ReadRecord, RecordRefused, read_record
from archive_pipelines.warc.warc_files import (
    READ_ERRORS,
    BrokenSpan,
    FoundRecord,
    Layout,
    iter_records,
    next_record_start,
)

SPAN_BYTES = 32 * 1024 * 1024  # a span's nominal size: small enough to keep the workers busy
MIN_PARALLEL_BYTES = 64 * 1024 * 1024  # smaller files are read in the calling process
_AHEAD = 4  # spans handed to the workers ahead of the one being taken, per worker

Item = BrokenSpan | tuple[int, ReadRecord | RecordRefused]


@dataclass
class StoredBody:
    """A body a worker stored: whether it wrote it (the store lacked it) and its size."""

    sha256: str
    size: int
    created: bool

    def __reduce__(self) -> tuple[type[StoredBody], tuple[object, ...]]:
        # Pickled as its fields: see `import_record.Body.__reduce__`.
        return StoredBody, (self.sha256, self.size, self.created)


def read_items(path: Path, layout: Layout, *, start: int, spool: Path,
               pages: dict[str, str | None], end: int | None = None,
               stopped: list[int] | None = None) -> Generator[Item, None, None]:
    """Each record from `start` on, read for import (or refused), and each broken stretch,
    until the first item at or after `end`; its offset is appended to `stopped` (nothing
    when the file ends first)."""
    records = iter_records(path, layout, start=start, http_requests=False)
    try:
        item = next(records, None)
        while item is not None:
            if end is not None and item.offset >= end:
                if stopped is not None:
                    stopped.append(item.offset)
                return
            if isinstance(item, BrokenSpan):
                yield item
                item = next(records, None)
                continue
            assert isinstance(item, FoundRecord)
            kind = item.record.rec_type
            try:
                if item.header_problem is not None and kind in ("response", "resource", "revisit"):
                    raise RecordRefused(f"{kind} record: {item.header_problem}")
                read: ReadRecord | RecordRefused = read_record(item.record, spool_dir=spool,
                                                               pages=pages)
            except RecordRefused as exc:
                read = exc
            except READ_ERRORS as exc:
                item = records.throw(exc)  # the reader reports the stretch and resyncs
                continue
            yield item.offset, read
            item = next(records, None)
    finally:
        records.close()


@dataclass(frozen=True)
class SpanTask:
    """Read the records of the stored WARC `sha256` (its bytes in the local file `path`) from
    `start` (exactly there, or from the first record start at or after it) until the first
    at or after `end`."""

    settings: Settings
    sha256: str
    path: Path
    layout: Layout
    start: int
    exact: bool
    end: int
    spool: Path
    pages: dict[str, str | None] = field(default_factory=dict)


@dataclass
class SpanResult:
    """A span's items, its bodies stored (`StoredBody` in place of each body), where its
    reading began (None: no record start at or after its start) and stopped (None: at the
    end of the file), and where a reading must begin to come upon `stopped` as this one did
    (`resume`: the last record read when the reading went on from it to `stopped`)."""

    began: int | None
    stopped: int | None
    items: list[tuple[Item, StoredBody | None]]
    resume: int | None = None


def _offset(item: Item) -> int:
    return item.offset if isinstance(item, BrokenSpan) else item[0]


def read_span(task: SpanTask, store: BlobStore | None = None) -> SpanResult:
    """A span read and its bodies stored (in a worker process, or in the calling one with
    its `store`)."""
    if store is None:
        store = open_store(task.settings.primary_store, task.settings.data_dir)
    path = task.path
    began = task.start if task.exact else next_record_start(path, task.layout,
                                                            at_or_after=task.start)
    if began is None:
        return SpanResult(None, None, [])
    stopped: list[int] = []
    items: list[tuple[Item, StoredBody | None]] = []
    aliases = AliasIndex(store.root) if isinstance(store, LocalBlobStore) else None
    with store.deferred_sync(), fewer_collections():
        for item in read_items(path, task.layout, start=began, spool=task.spool,
                               pages=task.pages, end=task.end, stopped=stopped):
            items.append((item, _stored(store, aliases, item)))
        store.sync_pending()
    last = items[-1][0] if items else None
    # After a broken stretch the reading began afresh (at `stopped` itself): so would another.
    resume = _offset(last) if last is not None and not isinstance(last, BrokenSpan) else None
    end = stopped[0] if stopped else None
    return SpanResult(began, end, items, resume=end if resume is None else resume)


def put_body(store: BlobStore, body: Body) -> bool:
    """A read body (in memory or spooled) into the store, checked against its sha256; whether
    this wrote it. The spool file is removed either way."""
    try:
        if body.data is not None:
            return store.put_verified_bytes(body.sha256, body.data).created
        assert body.path is not None
        with open(body.path, "rb") as handle:
            return store.put_verified(body.sha256, handle, size=body.size).created
    finally:
        body.close()


def _stored(store: BlobStore, aliases: AliasIndex | None, item: Item) -> StoredBody | None:
    """The item's body in the store, with its alias (every blob of a local store has one)."""
    if isinstance(item, BrokenSpan) or isinstance(item[1], RecordRefused):
        return None
    read = item[1]
    body = read.body
    if body is None:
        return None
    if aliases is None:  # an object store's put looks first itself (one request, not two)
        created = put_body(store, body)
    else:
        created = not store.exists(body.sha256) and put_body(store, body)
    body.close()
    blob_path = store.local_path(body.sha256)
    if aliases is not None and blob_path is not None:
        aliases.ensure(body.sha256, blob_path)
    read.body = Body(body.sha256, body.size, truncated=body.truncated)  # no bytes to send back
    return StoredBody(body.sha256, body.size, created)


class SpanReader:
    """The items of a stored WARC from `start` on, read by `processes` worker processes in
    spans (see the module docstring), in file order."""

    def __init__(self, *, settings: Settings, store: BlobStore, sha256: str, path: Path,
                 layout: Layout, size: int, spool: Path, pages: dict[str, str | None],
                 processes: int) -> None:
        self._settings = settings
        self._store = store
        self._sha256 = sha256
        self._path = path
        self._layout = layout
        self._size = size
        self._spool = spool
        self._pages = pages
        self._processes = processes
        self.rereads = 0  # spans read again because their cut was a false record start

    def items(self, start: int) -> Iterator[tuple[Item, StoredBody | None]]:
        span = max(SPAN_BYTES, 1)
        bounds = list(range(start, self._size, span)) or [start]
        tasks = [SpanTask(self._settings, self._sha256, self._path, self._layout, begin,
                          exact=number == 0, end=min(begin + span, self._size), spool=self._spool,
                          pages=self._pages) for number, begin in enumerate(bounds)]
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self._processes, mp_context=context,
                                 initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
            pending: deque[tuple[SpanTask, Future[SpanResult]]] = deque()
            queued = iter(tasks)
            expected: int | None = start
            resume = start
            while True:
                while len(pending) < self._processes * _AHEAD:
                    task = next(queued, None)
                    if task is None:
                        break
                    with main_module_hidden():
                        pending.append((task, pool.submit(read_span, task)))
                if not pending:
                    return
                task, future = pending.popleft()
                result = future.result()
                if expected is None:  # the file ended in an earlier span
                    continue
                if result.began != expected:  # a false cut (or a stretch between spans)
                    self.rereads += 1
                    result = _read_again(result, replace(task, start=resume, exact=True),
                                         store=self._store, skip_before=expected)
                yield from result.items
                expected = result.stopped
                if result.resume is not None:  # (None: the file ended in this span)
                    resume = result.resume


def _read_again(thrown: SpanResult, task: SpanTask, *, store: BlobStore,
                skip_before: int) -> SpanResult:
    """`task` read in the calling process in place of the span `thrown` away, its items
    before `skip_before` dropped (the span before had them). A body the thrown-away read
    wrote is found in the store now, but this import still added it: it is reported as
    written (`new_bodies` counts it, as a reading alone would)."""
    written = {stored.sha256 for _item, stored in thrown.items
               if stored is not None and stored.created}
    result = read_span(task, store)
    result.items = [(item, replace(stored, created=True)
                     if stored is not None and stored.sha256 in written else stored)
                    for item, stored in result.items if _offset(item) >= skip_before]
    return result
