"""Ingest files into the primary store: dedup by sha256, exact ref counts, views. Batched."""

from __future__ import annotations

import contextlib
import functools
import mimetypes
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from archive_pipelines.blobstore import PutResult
from archive_pipelines.catalog import Catalog, FileEntry
from archive_pipelines.counts import Counts, dedup_ratio
from archive_pipelines.settings.model import StorageSettings
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.file_workers import FileWorkers, PutRequest, put_one
from archive_pipelines.storage.linking import ensure_links
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.remote_puts import RemotePuts
from archive_pipelines.storage.snapshot_places import places_for
from archive_pipelines.views import SnapshotPlace, ViewSet, view_dir


class IngestItem(NamedTuple):
    """A file on disk to store at `relative_path` (its path inside the snapshot folder),
    written by `extractor`. (A tuple: made per file, and a frozen dataclass's __init__ cost
    three times as much.)"""

    snapshot_id: str
    extractor: str
    relative_path: str
    source: Path | str


@dataclass
class IngestReport(Counts):
    """What an ingest stored: files, blobs, bytes, links, and the files it could not store."""

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
        return dedup_ratio(self.bytes_in, self.bytes_saved)


def guess_mime(relative_path: str) -> str:
    """The MIME type by the name's extensions (everything from the first dot of its last
    part: `.tar.gz` counts as a whole), looked up once per extension."""
    name = relative_path.rpartition("/")[2]
    dot = name.find(".", 1)
    return _mime_for(name[dot:] if dot > 0 else "")


@functools.lru_cache(maxsize=4096)
def _mime_for(extensions: str) -> str:
    return mimetypes.guess_type(f"x{extensions}", strict=False)[0] or "application/octet-stream"


DEFAULT_BATCH_SIZE = StorageSettings.model_fields["ingest_batch_size"].default
DEFAULT_HARDLINK = StorageSettings.model_fields["ingest_hardlink"].default


def ingest_files(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                 items: Iterable[IngestItem], batch_size: int = DEFAULT_BATCH_SIZE,
                 hardlink: bool = DEFAULT_HARDLINK, replace: bool = True,
                 progress: Callable[[int], object] | None = None) -> IngestReport:
    """Store files and record them; one catalog transaction per batch of `batch_size`
    (the `storage.ingest_batch_size` setting's default unless the caller passes it).

    `hardlink` (the `storage.ingest_hardlink` setting's default) lets a raw primary on
    the source's filesystem hard-link the file instead of copying it (the shared inode is
    made read-only: editing the source in place would edit the archive). A primary that is
    not a local folder (S3) always copies: its puts are checksummed uploads on threads.

    Crash-safe by ordering: a batch's blob files are durable (one syncfs) before its catalog
    commit, its views after the commit; re-running the same ingest converges (same content
    at the same path is a no-op). Pipelined: while batch N is synced, committed and linked
    on a second thread, batch N+1's files are already being stored. From the second batch
    on, the file work runs in `work`'s worker processes (`FileWork.file_workers`).

    `replace=False` (adoption) never moves a recorded path to other bytes: such a file is
    reported as an error and the recorded (original) bytes stay referenced.
    """
    size = batch_size
    with contextlib.ExitStack() as stack:
        stack.enter_context(primary.store.deferred_sync())
        committer = stack.enter_context(ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="ingest-commit"))
        pipeline = _Pipeline(_Parts(catalog, primary, views, work), committer,
                             hardlink=hardlink, replace=replace, progress=progress)
        first = min(size, FIRST_BATCH)
        for index, batch in enumerate(_batches(items, first, size)):
            pipeline.take(index, batch, full=len(batch) == first)
        return pipeline.finish()


# A batch on the commit thread, and its file count. The commit returns the batch's report
# and, with worker processes, the wait for its view links, which the workers make while
# the next batch is committed.
_Pending = tuple[Future[tuple[IngestReport, Callable[[], Counter[str]] | None]], int]


class _Parts(NamedTuple):
    """What an ingest works on (passed on to its commit thread)."""

    catalog: Catalog
    primary: PrimaryStore
    views: ViewSet
    work: FileWork


@dataclass
class _Puts:
    """A batch whose files are being stored, and how."""

    batch: list[IngestItem]
    workers: FileWorkers | None
    results: Callable[[], list[tuple[str, PutResult] | str]]


class _Pipeline:
    """One ingest's moving parts: the batch being stored (`putting`), the one being
    committed (`pending`), the link waits (`linking`), and which workers store files."""

    def __init__(self, parts: _Parts, committer: ThreadPoolExecutor, *, hardlink: bool,
                 replace: bool, progress: Callable[[int], object] | None) -> None:
        self.parts, self.committer = parts, committer
        self.hardlink, self.replace, self.progress = hardlink, replace, progress
        self.report = IngestReport()
        # Workers a previous ingest started (and used) serve from the first batch on.
        self.workers: FileWorkers | None = parts.work.started_file_workers()
        self.starting: FileWorkers | None = None
        self.proven = False  # a batch of this ingest has been stored by the workers
        self.putting: _Puts | None = None
        self.pending: _Pending | None = None
        self.linking: list[Callable[[], Counter[str]]] = []  # batches whose links are made
        self.remote = None if parts.primary.is_local else RemotePuts(
            parts.primary.store, known=lambda sha: bool(parts.catalog.blobs.known_hashes([sha])))

    def take(self, index: int, batch: list[IngestItem], *, full: bool) -> None:
        """Start storing `batch`, then hand the batch before it to the commit thread."""
        if self.workers is None and index == 0 and full and self.parts.work.ingest_processes > 1:
            # A large ingest: the workers start while this batch is stored on threads.
            self.starting = self.parts.work.file_workers()
        elif index == 1 and self.starting is not None:
            self.workers = self.starting
        # The puts run in the workers while this thread takes in the next batch (the
        # caller's items may be generated, e.g. by walking folders).
        puts = self._start_puts(self.workers, batch)
        if self.putting is not None:
            before = self.putting
            try:
                self._commit_after_puts(before)
            except BaseException:
                _settle(puts)  # no put of this ingest goes on behind its failure
                raise
            if before.workers is not None and not self.proven:  # they failed: threads now
                self.workers = None
                puts = self._start_puts(None, batch)
        self.putting = puts

    def finish(self) -> IngestReport:
        """Commit the last batch, collect every commit and wait for every link."""
        if self.putting is not None:
            self._commit_after_puts(self.putting)
        if self.pending is not None:
            self._collect(self.pending)
        for links in self.linking:
            _count_links(self.report, links())
        return self.report

    def _start_puts(self, workers: FileWorkers | None, items: list[IngestItem]) -> _Puts:
        """Start storing a batch's files in worker processes, or store them now on the io
        threads (no fsyncs: the commit step syncs once)."""
        requests = [PutRequest(item.extractor, item.relative_path, os.fspath(item.source))
                    for item in items]
        hardlink = self.hardlink
        if workers is not None:
            try:
                return _Puts(items, workers, workers.submit_puts(requests, allow_hardlink=hardlink))
            except BrokenProcessPool as exc:
                broken = exc

                def fail() -> list[tuple[str, PutResult] | str]:
                    raise broken
                return _Puts(items, workers, fail)
        primary = self.parts.primary.store
        if self.remote is not None:
            # Uploads (copies: nothing to hard-link to), waiting on the network: many in
            # flight while this thread takes in the next batch. The batch is committed only
            # once every put has been acknowledged; a failure of the store itself (e.g.
            # unreachable) is raised then, and ends the ingest before that commit.
            return _Puts(items, None, self.parts.work.submit_remote(self.remote.put, requests))
        outcomes = self.parts.work.map_io(lambda r: put_one(primary, r, allow_hardlink=hardlink), requests)
        return _Puts(items, None, lambda: outcomes)

    def _commit_after_puts(self, puts: _Puts) -> None:
        """Wait for a batch's puts, then hand it to the commit thread (after the previous
        batch's commit: one in flight keeps memory bounded)."""
        try:
            outcomes = puts.results()
            self.proven = self.proven or puts.workers is not None
        except BrokenProcessPool:
            if self.proven or puts.workers is None:
                raise
            # The workers could not start (e.g. out of processes or memory): this ingest
            # uses threads, as small ones do.
            self.parts.work.workers_failed()
            puts = self._start_puts(None, puts.batch)
            outcomes = puts.results()
        stored, put_report = _stored(puts.batch, outcomes)
        if self.pending is not None:
            self._collect(self.pending)
        self.pending = (self.committer.submit(_commit_batch, self.parts, puts.workers, stored,
                                              report=put_report, replace=self.replace),
                        len(puts.batch))

    def _collect(self, pending: _Pending) -> None:
        future, count = pending
        done, links = future.result()
        self.report.add(done)
        if links is not None:
            self.linking.append(links)
        if self.progress:
            self.progress(count)


def _settle(puts: _Puts) -> None:
    """Wait for a batch's puts, whatever their outcome (they are not committed)."""
    with contextlib.suppress(Exception):
        puts.results()


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


def _stored(items: list[IngestItem], outcomes: list[tuple[str, PutResult] | str]
            ) -> tuple[list[Stored], IngestReport]:
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


def _commit_batch(parts: _Parts, workers: FileWorkers | None, stored: list[Stored],
                  *, report: IngestReport, replace: bool = True
                  ) -> tuple[IngestReport, Callable[[], Counter[str]] | None]:
    """Make the batch's blobs durable, record them in one transaction, then link the views
    (in worker processes: started, and the wait for them returned)."""
    if not stored:
        return report, None
    primary = parts.primary.store
    if any(put.created for _item, _rel, put in stored):
        primary.sync()
    else:  # a file this batch found may be an earlier batch's unsynced write
        primary.sync_pending()
    entries = [FileEntry(item.snapshot_id, item.extractor, rel, put.sha256, put.size,
                         guess_mime(rel)) for item, rel, put in stored]
    store_id = parts.primary.store_id
    with parts.catalog.transaction() as tx:
        applied = tx.files.apply_files(entries, primary_store_id=store_id, replace=replace)
        places = places_for(tx, {e.snapshot_id for e in entries})
    if applied.conflicts:
        # Only the refused entries: the same path given earlier in the batch may be recorded.
        refused = dict.fromkeys(applied.conflicts)
        sources = {(item.snapshot_id, rel, put.sha256): item.source for item, rel, put in stored}
        report.errors.extend(
            f"{sources[key]}: the catalog holds other bytes for this path (stored earlier); "
            "those stay referenced, this file is left in place" for key in refused)
        entries = [e for e in entries
                   if (e.snapshot_id, e.relative_path, e.sha256) not in refused]
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
    return report, _link_batch(parts, workers, entries, places=places, fresh=fresh, report=report)


def _link_batch(parts: _Parts, workers: FileWorkers | None, entries: list[FileEntry],
                *, places: dict[str, SnapshotPlace], fresh: set[str], report: IngestReport
                ) -> Callable[[], Counter[str]] | None:
    """Aliases for blobs new to the store or catalog (older ones have theirs), file links in
    the file view (always: the other views' folder links point into it), then each
    snapshot's folder links in the other views. In worker processes this returns once the
    aliases exist, with the wait for the links; on threads it counts them into `report`."""
    home = parts.views.file_view
    if home is None or not parts.views.enabled:
        return None
    dirs = {sid: view_dir(home, place) for sid, place in places.items()}
    links = [(f"{dirs[e.snapshot_id]}/{e.relative_path}", e.sha256)
             for e in entries if e.snapshot_id in dirs]
    folders = [link for place in places.values() for link in parts.views.folder_links(place)]
    if workers is not None:
        return workers.start_links(links, sorted(fresh), folders)
    _count_links(report,
                 ensure_links(parts.primary, parts.views, parts.work, links=links, aliases=fresh,
                              folder_links=folders))
    return None


def _count_links(report: IngestReport, outcomes: Counter[str]) -> None:
    report.links_created += outcomes["created"]
    report.links_fixed += outcomes["fixed"]
    report.link_conflicts += outcomes["conflict"]


def walk_directory(snapshot_id: str, extractor: str, directory: Path,
                   *, errors: list[str] | None = None,
                   special: list[str] | None = None) -> Iterator[IngestItem]:
    """Regular files under `directory` (sorted, no symlink following) as ingest items of
    `extractor`, at `<extractor>/<path under directory>` in the snapshot.

    Symlinks, sockets, FIFOs and devices are skipped and reported (in `special` when given,
    else in `errors`), never followed.
    """
    if special is None:
        special = errors
    root = Path(directory)
    prefix_len = len(str(root).rstrip("/")) + 1
    folder_name = f"{extractor}/"
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
                    if special is not None:
                        special.append(f"{entry.path}: skipped (symlink or special file)")
                    continue
            except OSError as exc:
                if errors is not None:
                    errors.append(f"{entry.path}: {exc.strerror or exc}")
                continue
            yield IngestItem(snapshot_id, extractor, folder_name + entry.path[prefix_len:],
                             Path(entry.path))


def ingest_directory(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                     snapshot_id: str, extractor: str, directory: Path,
                     **kwargs: object) -> IngestReport:
    """Ingest every regular file under `directory` as `extractor` output of the snapshot
    (`kwargs`: those of `ingest_files`)."""
    errors: list[str] = []
    report = ingest_files(catalog, primary, views, work=work,
                          items=walk_directory(snapshot_id, extractor, directory, errors=errors),
                          **kwargs)  # type: ignore[arg-type]
    report.errors[:0] = errors
    return report


def ingest_file(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                snapshot_id: str, extractor: str, relative_path: str, source: Path,
                hardlink: bool = DEFAULT_HARDLINK) -> IngestReport:
    """Ingest one file as `<extractor>/<relative_path>` of the snapshot."""
    return ingest_files(catalog, primary, views, work=work,
                        items=[IngestItem(snapshot_id, extractor, f"{extractor}/{relative_path}",
                                    source)], hardlink=hardlink)
