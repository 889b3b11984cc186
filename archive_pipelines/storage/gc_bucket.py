"""gc on an S3 primary: unreferenced blobs go to a trash folder in the bucket first, and
are deleted from there by a later run, once they have waited there for the grace period.

Why a trash, as locally (`storage.gc`): a blob gc removes may be referenced again meanwhile
by an ingest on any machine sharing the catalog and the bucket. Such an ingest finds the
object present (HEAD, or its conditional PUT refused), uploads nothing, and records the
reference in its transaction. gc therefore, for each blob:

1. claims it in a transaction (ref_count 0, row locked, primary copy marked `missing`): an
   ingest committing after this sees `missing` and uploads the blob again (`revived`);
2. moves the object to `<prefix>/gc-trash/<sha256>` (`S3BlobStore.set_aside`: a server-side
   copy, then the blob's key is deleted);
3. reads the ref count again: referenced meanwhile (an ingest committed between 1 and 2,
   saw the object still there and uploaded nothing) -> the object is put back and the copy
   marked `present` again; else it stays in the trash.

Whoever commits last sees the other's work: an ingest after step 3 finds the copy `missing`
and uploads the blob itself; one before step 3 is seen by it. Unlike a local rename, the
bytes are not unlinked in step 3: they stay in the trash for the grace period, and each run
first walks the trash (`_walk_trash`): an object whose blob is referenced or recorded present
again (a writer that records a blob without uploading it, or a run killed between steps 1
and 3) is put back; one unreferenced that has waited the grace is deleted, and only then are
its bytes freed. So a blob's bytes leave the bucket after twice the grace at the earliest.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from archive_pipelines.captures.pending import pending_body_hashes
from archive_pipelines.captures.segment_source import segment_source
from archive_pipelines.catalog import Catalog, utcnow
from archive_pipelines.datadir import DataDir
from archive_pipelines.storage.bucket import bucket_of
from archive_pipelines.storage.gc_report import GcItem, GcReport, Kind, Tally
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.unreferenced import unreferenced_blobs
from archive_pipelines.storage.untracked import untracked_objects

if TYPE_CHECKING:
    from archive_pipelines.blobstore.s3 import S3BlobStore, StoredObject

TRASH_FOLDER = "gc-trash"
WIDTH = 8  # blobs moved to the trash at once
TRASH_PAGE = 1000  # trash objects judged per catalog read (and deleted per request)
_NAME = re.compile(r"[0-9a-f]{64}")


def collect_from_bucket(catalog: Catalog, primary: PrimaryStore, report: GcReport, *,
                        layout: DataDir, grace_hours: float, batch: int,
                        on_item: Callable[[GcItem], object] | None) -> None:
    """The blob passes of gc on an S3 primary, into `report`: the trash first (put back,
    deleted after the grace), then unreferenced blobs, then (`report.untracked_checked`)
    untracked objects. `report.dry_run` walks the same decisions and changes nothing."""
    store = bucket_of(primary)
    report.deferred = True
    horizon = utcnow() - timedelta(hours=grace_hours)
    _walk_trash(catalog, primary, store, report=report, horizon=horizon, on_item=on_item)

    def one(blob: _Blob) -> int | str | None:
        if report.dry_run:
            return blob.size if store.exists(blob.sha) else None
        return _set_aside_one(catalog, primary, store, blob_id=blob.id, sha=blob.sha,
                              size=blob.size)

    def take(tally: Tally, kind: Kind, blobs: list[_Blob]) -> None:
        """Each blob on its own (`_set_aside_one`), `WIDTH` at a time: most of a blob's
        time is the bucket's round trips."""
        with ThreadPoolExecutor(max_workers=WIDTH) as pool:
            for blob, outcome in zip(blobs, pool.map(one, blobs), strict=True):
                if outcome is None:
                    report.already_gone += 1
                elif outcome == "revived":
                    report.revived += 1
                elif isinstance(outcome, int):
                    tally.count += 1
                    tally.bytes += outcome
                    if on_item is not None:
                        on_item(GcItem(kind, blob.sha, outcome))

    # Bodies named by segments still waiting in the bucket (crawled on any machine) are kept.
    segments = segment_source(primary.store, layout.root)
    for rows in unreferenced_blobs(catalog, primary, horizon, batch=batch):
        report.candidates += len(rows)
        crawl_bodies = pending_body_hashes(catalog, layout.root, source=segments)
        with catalog.reading() as tx:
            sizes = {sha: row.size for sha, row in
                     tx.blobs.blobs_by_sha256([sha for _id, sha in rows]).items()}
        report.kept_for_crawl += sum(sha in crawl_bodies for _id, sha in rows)
        take(report.blobs, "blob", [_Blob(blob_id, sha, sizes.get(sha, 0))
                                    for blob_id, sha in rows if sha not in crawl_bodies])
    if not report.untracked_checked:
        return
    crawl_bodies = pending_body_hashes(catalog, layout.root, source=segments)
    chosen: list[_Blob] = []
    for seen, stored in enumerate(untracked_objects(catalog, primary), start=1):
        if seen % batch == 0:
            crawl_bodies = pending_body_hashes(catalog, layout.root, source=segments)
            take(report.untracked, "untracked", chosen)
            chosen = []
        if stored.last_modified >= horizon:
            continue  # an upload whose ingest may not have committed yet
        if stored.name in crawl_bodies:
            report.kept_for_crawl += 1
            continue
        if report.dry_run:
            chosen.append(_Blob(0, stored.name, stored.size))
            continue
        with catalog.transaction() as tx:  # a row, so an ingest now can revive it
            tracked = tx.blobs.track_blob(sha256=stored.name, size=stored.size,
                                          since=stored.last_modified,
                                          store_id=primary.store_id)
        if tracked is not None:  # else an ingest recorded it meanwhile: not garbage
            chosen.append(_Blob(tracked, stored.name, stored.size))
    take(report.untracked, "untracked", chosen)


@dataclass(frozen=True)
class _Blob:
    id: int
    sha: str
    size: int


def _set_aside_one(catalog: Catalog, primary: PrimaryStore, store: S3BlobStore, *,
                   blob_id: int, sha: str, size: int
                   ) -> int | Literal["revived", "skipped"] | None:
    """Steps 1-3 of the module's protocol for one blob: its size when it went to the trash,
    "revived" when it was referenced again meanwhile (its object is back), "skipped" when
    it could not be claimed, None when its object was already gone."""
    store_id = primary.store_id
    with catalog.transaction() as tx:
        claimed = tx.blobs.claim_unreferenced(blob_id=blob_id, store_id=store_id)
    if not claimed:
        return "skipped"
    try:
        aside = store.set_aside(sha, "", folder=TRASH_FOLDER)
    except Exception:
        # Not moved (or copied without its key deleted): the object is at its key, so
        # record it present again, or a later run would never look at it (best effort: the
        # endpoint may be down, and the copy then stays `missing`, which is safe).
        with contextlib.suppress(Exception):
            if store.exists(sha):
                _mark_present(catalog, primary, blob_id)
        raise
    with catalog.transaction() as tx:
        if tx.blobs.ref_count(blob_id):
            # Put back before the copy is recorded present: if this fails, the copy stays
            # `missing` and the next run's trash walk puts it back.
            if aside is not None:
                store.put_back(aside, sha)
            tx.copies.set_copy_status(blob_id=blob_id, store_id=store_id, status="present",
                                      mtime=utcnow())
            return "revived"
    return None if aside is None else size


def _walk_trash(catalog: Catalog, primary: PrimaryStore, store: S3BlobStore, *,
                report: GcReport, horizon: datetime,
                on_item: Callable[[GcItem], object] | None) -> None:
    """Objects in the trash: put back those whose blob is referenced or recorded present,
    delete those unreferenced that went there before `horizon` (a DeleteObjects request per
    1,000), leave the others. The catalog is read a listing page at a time."""
    page: list[StoredObject] = []

    def walk_page() -> None:
        wanted = _wanted(catalog, primary, [stored.name for stored in page])
        doomed: list[str] = []
        for stored in page:
            if stored.name in wanted:
                if not report.dry_run:
                    _put_back(catalog, primary, store, key=stored.key, sha=stored.name,
                              blob_id=wanted[stored.name])
                report.trash_restored += 1
            elif stored.last_modified < horizon:
                doomed.append(stored.key)
                report.trash.count += 1
                report.trash.bytes += stored.size
                if on_item is not None:
                    on_item(GcItem("trash", stored.name, stored.size))
            else:
                report.trash_waiting += 1
        if doomed and not report.dry_run:
            store.delete_aside(doomed)
        page.clear()

    for stored in store.list_aside(TRASH_FOLDER):
        if _NAME.fullmatch(stored.name):  # else not ours
            page.append(stored)
        if len(page) >= TRASH_PAGE:
            walk_page()
    walk_page()


def _wanted(catalog: Catalog, primary: PrimaryStore, hashes: list[str]) -> dict[str, int]:
    """{sha256: blob id} of those blobs the catalog wants at their key: referenced, or their
    copy recorded present."""
    if not hashes:
        return {}
    with catalog.reading() as tx:
        rows = tx.blobs.blobs_by_sha256(hashes)
        copies = tx.copies.copies_of([row.id for row in rows.values()])
    wanted = {}
    for sha, row in rows.items():
        copy = copies[row.id].get(primary.store_id)
        if row.ref_count > 0 or (copy is not None and copy.status == "present"):
            wanted[sha] = row.id
    return wanted


def _put_back(catalog: Catalog, primary: PrimaryStore, store: S3BlobStore, *, key: str,
              sha: str, blob_id: int) -> None:
    store.put_back(key, sha)
    _mark_present(catalog, primary, blob_id)


def _mark_present(catalog: Catalog, primary: PrimaryStore, blob_id: int) -> None:
    with catalog.transaction() as tx:
        tx.copies.set_copy_status(blob_id=blob_id, store_id=primary.store_id,
                                  status="present", mtime=utcnow())
