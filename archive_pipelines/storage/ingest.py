"""Ingest files into the primary store: dedup by sha256, exact ref counts, views. Batched."""

from __future__ import annotations

import contextlib
import mimetypes
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.blobstore import PutResult
from archive_pipelines.catalog.files import FileEntry, apply_files
from archive_pipelines.catalog.places import places_for
from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.file_workers import FileWorkers, PutRequest, put_one
from archive_pipelines.storage.linking import ensure_links
from archive_pipelines.views import SnapshotPlace, view_dir


@dataclass(frozen=True)
class IngestItem:
    """A file on disk to store as (snapshot, extractor, relative_path)."""

    snapshot_id: str
    extractor: str
    relative_path: str
    source: Path


@dataclass
class IngestReport:
    files: int = 0
    added: int = 0
    unchanged: int = 0
    replaced: int = 0
    new_blobs: int = 0
    deduplicated: int = 0
    bytes_in: int = 0
    bytes_stored: int = 0
    bytes_saved: int = 0
    links_created: int = 0
    links_fixed: int = 0
    link_conflicts: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def dedup_ratio(self) -> float:
        """Logical bytes / stored bytes (1.0 = no dedup)."""
        stored = self.bytes_in - self.bytes_saved
        return self.bytes_in / stored if stored > 0 else 1.0

    def merge(self, other: IngestReport) -> None:
        for name in ("files", "added", "unchanged", "replaced", "new_blobs", "deduplicated",
                     "bytes_in", "bytes_stored", "bytes_saved", "links_created", "links_fixed",
                     "link_conflicts"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors.extend(other.errors)


def guess_mime(relative_path: str) -> str:
    return mimetypes.guess_type(relative_path, strict=False)[0] or "application/octet-stream"


def ingest_files(storage: Storage, items: Iterable[IngestItem], *, batch_size: int | None = None,
                 allow_hardlink: bool | None = None,
                 progress: Callable[[int], object] | None = None) -> IngestReport:
    """Store files and record them; one catalog transaction per batch.

    `allow_hardlink` (default: the `storage.ingest_hardlink` setting) lets a raw primary on
    the source's filesystem hard-link the file instead of copying it (the shared inode is
    made read-only: editing the source in place would edit the archive).

    Crash-safe by ordering: a batch's blob files are durable (one syncfs) before its catalog
    commit, its views after the commit; re-running the same ingest converges (same content
    at the same path is a no-op). Pipelined: while batch N is synced, committed and linked
    on a second thread, batch N+1's files are already being stored. From the second batch
    on, the file work runs in the storage's worker processes (`Storage.file_workers`).
    """
    size = batch_size or storage.settings.storage.ingest_batch_size
    hardlink = (storage.settings.storage.ingest_hardlink if allow_hardlink is None
                else allow_hardlink)
    report = IngestReport()
    with contextlib.ExitStack() as stack:
        stack.enter_context(storage.primary.deferred_sync())
        committer = stack.enter_context(ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="ingest-commit"))
        workers: FileWorkers | None = None
        starting: FileWorkers | None = None
        pending: tuple[Future[IngestReport], int] | None = None
        first = min(size, FIRST_BATCH)
        for index, batch in enumerate(_batches(items, first, size)):
            if index == 0 and len(batch) == first and storage.ingest_processes > 1:
                # A large ingest: the workers start while this batch is stored on threads.
                starting = storage.file_workers()
            elif index == 1 and starting is not None:
                workers = starting
            try:
                stored, put_report = _put_batch(storage, workers, batch, hardlink)
            except BrokenProcessPool:
                if index != 1:
                    raise
                # The workers could not start (e.g. out of processes or memory): this
                # ingest uses threads, as small ones do.
                storage.workers_failed()
                workers = None
                stored, put_report = _put_batch(storage, workers, batch, hardlink)
            if pending is not None:
                _collect(pending, report, progress)  # one batch in flight: bounded memory
            pending = committer.submit(_commit_batch, storage, workers, stored,
                                       put_report), len(batch)
        if pending is not None:
            _collect(pending, report, progress)
    return report


def _collect(pending: tuple[Future[IngestReport], int], report: IngestReport,
             progress: Callable[[int], object] | None) -> None:
    future, count = pending
    report.merge(future.result())
    if progress:
        progress(count)


# The first batch is short: stored on threads, it decides whether to start worker processes
# (an ingest that fills it is a large one) and gives them time to start.
FIRST_BATCH = 256


def _batches(items: Iterable[IngestItem], first: int, size: int) -> Iterator[list[IngestItem]]:
    """`first` items, then `size` at a time."""
    batch: list[IngestItem] = []
    limit = first
    for item in items:
        batch.append(item)
        if len(batch) >= limit:
            yield batch
            batch, limit = [], size
    if batch:
        yield batch


Stored = tuple[IngestItem, str, PutResult]


def _put_batch(storage: Storage, workers: FileWorkers | None, items: list[IngestItem],
               allow_hardlink: bool) -> tuple[list[Stored], IngestReport]:
    """Store a batch's files, in worker processes or on the io threads (no fsyncs: the
    commit step syncs once)."""
    requests = [PutRequest(item.extractor, item.relative_path, item.source) for item in items]
    if workers is not None:
        outcomes = workers.submit_puts(requests, allow_hardlink)()
    else:
        primary = storage.primary
        outcomes = storage.map_io(lambda r: put_one(primary, r, allow_hardlink), requests)
    report = IngestReport()
    stored: list[Stored] = []
    for item, outcome in zip(items, outcomes, strict=True):
        if isinstance(outcome, str):
            report.errors.append(outcome)
            continue
        rel, put = outcome
        stored.append((item, rel, put))
        report.bytes_in += put.size
        report.bytes_stored += put.stored_bytes
    return stored, report


def _commit_batch(storage: Storage, workers: FileWorkers | None, stored: list[Stored],
                  report: IngestReport) -> IngestReport:
    """Make the batch's blobs durable, record them in one transaction, then link the views."""
    if not stored:
        return report
    primary = storage.primary
    if any(put.created for _item, _rel, put in stored):
        primary.sync()
    else:  # a file this batch found may be an earlier batch's unsynced write
        primary.sync_pending()
    entries = [FileEntry(item.snapshot_id, item.extractor, rel, put.sha256, put.size,
                         guess_mime(rel)) for item, rel, put in stored]
    store_id = storage.primary_store_id
    with storage.session() as session:
        applied = apply_files(session, entries, primary_store_id=store_id)
        places = places_for(session, {e.snapshot_id for e in entries})
    report.files = applied.files
    report.added, report.unchanged, report.replaced = (applied.added, applied.unchanged,
                                                       applied.replaced)
    report.new_blobs, report.deduplicated = applied.new_blobs, applied.deduplicated
    report.bytes_saved = applied.bytes_saved
    for item, _rel, put in stored:
        # A blob gc had removed is referenced again: make sure its file is back.
        if put.sha256 in applied.revived and not primary.exists(put.sha256):
            primary.put_file(item.source)
            primary.sync_pending()
    fresh = applied.new_blob_hashes | applied.revived | {
        put.sha256 for _item, _rel, put in stored if put.created}
    _link_batch(storage, workers, entries, places, fresh, report)
    return report


def _link_batch(storage: Storage, workers: FileWorkers | None, entries: list[FileEntry],
                places: dict[str, SnapshotPlace], fresh: set[str], report: IngestReport) -> None:
    """Aliases for blobs new to the store or catalog (older ones have theirs), file links in
    the file view (always: the other views' folder links point into it), then each
    snapshot's folder links in the other views."""
    home = storage.file_view
    if home is None or not storage.views:
        return
    dirs = {sid: view_dir(home, place) for sid, place in places.items()}
    links = [(f"{dirs[e.snapshot_id]}/{e.extractor}/{e.relative_path}", e.sha256)
             for e in entries if e.snapshot_id in dirs]
    folders = [link for place in places.values() for link in storage.folder_links(place)]
    if workers is not None:
        outcomes = workers.ensure_links(links, sorted(fresh), folders)
    else:
        outcomes = ensure_links(storage, links, fresh, folders)
    report.links_created += outcomes["created"]
    report.links_fixed += outcomes["fixed"]
    report.link_conflicts += outcomes["conflict"]


def walk_directory(snapshot_id: str, extractor: str, directory: Path,
                   errors: list[str] | None = None) -> Iterator[IngestItem]:
    """Regular files under `directory` (sorted, no symlink following) as ingest items.

    Symlinks, sockets, FIFOs and devices are skipped and reported, never followed.
    """
    root = Path(directory)
    prefix_len = len(str(root).rstrip("/")) + 1
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            if errors is not None:
                errors.append(f"{folder}: cannot list: {exc.strerror or exc}")
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                    continue
                if not entry.is_file(follow_symlinks=False):
                    if errors is not None:
                        errors.append(f"{entry.path}: skipped (symlink or special file)")
                    continue
            except OSError as exc:
                if errors is not None:
                    errors.append(f"{entry.path}: {exc.strerror or exc}")
                continue
            yield IngestItem(snapshot_id, extractor, entry.path[prefix_len:], Path(entry.path))


def ingest_directory(storage: Storage, snapshot_id: str, extractor: str, directory: Path,
                     **kwargs: object) -> IngestReport:
    """Ingest every regular file under `directory` as `extractor` output of the snapshot."""
    errors: list[str] = []
    report = ingest_files(storage, walk_directory(snapshot_id, extractor, directory, errors),
                          **kwargs)  # type: ignore[arg-type]
    report.errors[:0] = errors
    return report


def ingest_file(storage: Storage, snapshot_id: str, extractor: str, relative_path: str,
                source: Path) -> IngestReport:
    return ingest_files(storage, [IngestItem(snapshot_id, extractor, relative_path, source)])
