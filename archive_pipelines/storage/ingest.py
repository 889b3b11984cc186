"""Ingest files into the primary store: dedup by sha256, exact ref counts, views. Batched."""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.blobstore import BlobStoreError, PutResult
from archive_pipelines.catalog.files import FileEntry, apply_files
from archive_pipelines.catalog.places import places_for
from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.linking import ensure_links
from archive_pipelines.views import (
    SnapshotPlace,
    UnsafePathError,
    validate_extractor,
    validate_relative_path,
    view_dir,
)


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
                 allow_hardlink: bool = False,
                 progress: Callable[[int], None] | None = None) -> IngestReport:
    """Store files and record them; one catalog transaction per batch.

    Crash-safe by ordering: blob files are durable before the catalog commit, views after
    it; re-running the same ingest converges (same content at same path is a no-op).
    """
    size = batch_size or storage.settings.storage.ingest_batch_size
    report = IngestReport()
    batch: list[IngestItem] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            report.merge(_ingest_batch(storage, batch, allow_hardlink))
            if progress:
                progress(len(batch))
            batch = []
    if batch:
        report.merge(_ingest_batch(storage, batch, allow_hardlink))
        if progress:
            progress(len(batch))
    return report


def _put_one(storage: Storage, item: IngestItem, allow_hardlink: bool
             ) -> tuple[IngestItem, str, PutResult] | str:
    """Validate and store one file; an error line instead of raising."""
    try:
        rel = validate_relative_path(item.relative_path)
        validate_extractor(item.extractor)
        return item, rel, storage.primary.put_file(item.source, allow_hardlink=allow_hardlink)
    except (UnsafePathError, BlobStoreError) as exc:
        return f"{item.source}: {exc}"
    except OSError as exc:  # unreadable, vanished, special file
        return f"{item.source}: {exc.strerror or exc}"


def _ingest_batch(storage: Storage, items: list[IngestItem], allow_hardlink: bool) -> IngestReport:
    report = IngestReport()
    stored: list[tuple[IngestItem, str, PutResult]] = []
    primary = storage.primary
    # One syncfs per batch instead of fsyncs per file; blobs are durable before the commit.
    with primary.deferred_sync():
        for outcome in storage.map_io(lambda i: _put_one(storage, i, allow_hardlink), items):
            if isinstance(outcome, str):
                report.errors.append(outcome)
                continue
            stored.append(outcome)
            report.bytes_in += outcome[2].size
            report.bytes_stored += outcome[2].stored_bytes
    if not stored:
        return report
    if any(put.created for _item, _rel, put in stored):
        primary.sync()
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
    fresh = applied.new_blob_hashes | applied.revived | {
        put.sha256 for _item, _rel, put in stored if put.created}
    _link_batch(storage, entries, places, fresh, report)
    return report


def _link_batch(storage: Storage, entries: list[FileEntry], places: dict[str, SnapshotPlace],
                fresh: set[str], report: IngestReport) -> None:
    """Aliases for blobs new to the store or catalog (older ones have theirs), then links."""
    dirs = {sid: [view_dir(view, place) for view in storage.views]
            for sid, place in places.items()}
    links = [(f"{folder}/{e.extractor}/{e.relative_path}", e.sha256)
             for e in entries if e.snapshot_id in dirs for folder in dirs[e.snapshot_id]]
    outcomes = ensure_links(storage, links, fresh)
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
