"""`verify` of an S3 primary's blobs: one listing of the bucket against the catalog.

The bucket lists its keys in order, and a blob's key (`sha256/ab/cd/<hash>`) sorts as its
hash: one ListObjectsV2 walk (a request per 1,000 objects) merged with the catalog's
referenced hashes, read in the same order, finds the blobs missing from the bucket and the
objects the catalog has no row for, instead of a HEAD per blob. A blob listed missing is
looked up once more (HEAD) before it is reported: an ingest may have stored it since the
listing passed its key. With the raw codec the listed size must be the blob's size (a
truncated object is corrupt even without --deep). `deep` reads and rehashes every referenced
blob, on `width` threads (parallel GETs).

`fix` repairs a missing or corrupt blob from the first replica holding a good copy (a
corrupt object is first set aside in `quarantine/`); one no replica could restore is
recorded `missing`/`corrupted` at the primary, for `replicate` to restore later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.catalog import BlobRow, Catalog, utcnow
from archive_pipelines.replication.copier import CopyItem, copy_object
from archive_pipelines.replication.quarantine import set_aside
from archive_pipelines.storage.bucket import bucket_of
from archive_pipelines.storage.primary import PrimaryStore

if TYPE_CHECKING:
    from archive_pipelines.blobstore.s3 import StoredObject

KEEP_UP_TO = 8 << 20  # a replica's checked bytes reused for the copy, up to this size
BATCH = 1000  # hashes per catalog read, and per round of parallel reads with `deep`


class ListingOutOfOrder(RuntimeError):
    """The store listed a key before the one it listed last."""


@dataclass
class BucketFindings:
    """What the walk found: `checked` referenced blobs, `listed` objects, and by sha256 the
    referenced blobs `missing` or `corrupt` (with why), and the objects `untracked` (no
    catalog row)."""

    checked: int = 0
    listed: int = 0
    missing: list[str] = field(default_factory=list)
    corrupt: list[tuple[str, str]] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)


def walk_bucket(catalog: Catalog, primary: PrimaryStore, *, deep: bool, width: int = 16,
                progress: Callable[[int], object] | None = None) -> BucketFindings:
    """Compare the bucket's listing with the catalog's referenced blobs (see the module)."""
    store = bucket_of(primary)
    found = BucketFindings()
    present: list[str] = []  # referenced and listed: judged a batch at a time
    listed_sizes: dict[str, int] = {}
    unknown: list[str] = []  # listed, not referenced: untracked unless the catalog has a row

    def judge_present() -> None:
        if not present:
            return
        rows = _rows(catalog, present)
        found.checked += len(present)
        if deep:
            with ThreadPoolExecutor(max_workers=width) as pool:
                results = pool.map(lambda sha: store.check(sha, expected_size=rows[sha].size),
                                   present)
                for result in results:
                    if result.status == "missing":
                        found.missing.append(result.sha256)  # deleted since it was listed
                    elif result.status != "ok":
                        found.corrupt.append((result.sha256, result.detail or result.status))
        elif store.codec == "raw":
            for sha in present:
                if listed_sizes[sha] != rows[sha].size:
                    found.corrupt.append((sha, f"size mismatch: the object holds "
                                               f"{listed_sizes[sha]} bytes, expected "
                                               f"{rows[sha].size}"))
        if progress is not None:
            progress(len(present))
        present.clear()
        listed_sizes.clear()

    def judge_unknown() -> None:
        if not unknown:
            return
        with catalog.reading() as tx:
            known = tx.blobs.known_hashes(unknown)
        found.untracked.extend(sha for sha in unknown if sha not in known)
        unknown.clear()

    def judge_unlisted() -> None:
        """Referenced, not listed: looked up once more (HEADs on `width` threads); one
        stored since the listing passed its key is judged as a listed one."""
        if not unlisted:
            return
        with ThreadPoolExecutor(max_workers=width) as pool:
            there = list(pool.map(store.exists, unlisted))
        found.missing.extend(sha for sha, now in zip(unlisted, there, strict=True) if not now)
        late = [sha for sha, now in zip(unlisted, there, strict=True) if now]
        found.checked += len(unlisted) - len(late)
        unlisted.clear()
        if late:
            rows = _rows(catalog, late)
            present.extend(late)
            listed_sizes.update((sha, rows[sha].size) for sha in late)  # not listed: trusted
            judge_present()

    unlisted: list[str] = []
    for sha, size, referenced in _merge(store.iter_objects(), _referenced(catalog)):
        if size is None:
            unlisted.append(sha)
            if len(unlisted) >= BATCH:
                judge_unlisted()
            continue
        found.listed += 1
        if referenced:
            present.append(sha)
            listed_sizes[sha] = size
            if len(present) >= BATCH:
                judge_present()
        else:
            unknown.append(sha)
            if len(unknown) >= BATCH:
                judge_unknown()
    judge_present()
    judge_unlisted()
    judge_unknown()
    return found


def restore_blob(catalog: Catalog, primary: PrimaryStore, replicas: Sequence[BlobStore], *,
                 sha: str, corrupt: bool) -> str | None:
    """Put a good copy of a missing or corrupt blob at the primary, from the first replica
    whose copy checks out (a corrupt object is set aside in quarantine/ only then); the
    replica's name, or None when none could (the copy is then recorded `missing` or
    `corrupted`, for `replicate` to restore once a replica has it)."""
    store = primary.store
    with catalog.reading() as tx:
        row = tx.blobs.blobs_by_sha256([sha])[sha]
    for replica in replicas:
        good = replica.check(sha, expected_size=row.size, keep_up_to=KEEP_UP_TO)
        if not good.ok:
            continue
        if corrupt:
            set_aside(store, sha)
        if copy_object(replica, store, CopyItem(sha, row.size, data=good.data)).ok:
            _record(catalog, primary, row, status="present")
            return replica.name
    _record(catalog, primary, row, status="corrupted" if corrupt else "missing")
    return None


def _record(catalog: Catalog, primary: PrimaryStore, row: BlobRow, *, status: str) -> None:
    with catalog.transaction() as tx:
        tx.copies.set_copy_status(blob_id=row.id, store_id=primary.store_id, status=status,
                                  mtime=utcnow())


def _rows(catalog: Catalog, hashes: Sequence[str]) -> dict[str, BlobRow]:
    with catalog.reading() as tx:
        return tx.blobs.blobs_by_sha256(hashes)


def _referenced(catalog: Catalog) -> Iterator[str]:
    """Every referenced blob's hash, in order, a page at a time."""
    last = ""
    while True:
        with catalog.reading() as tx:
            page = tx.blobs.referenced_hashes(low="", high=None, after=last, limit=BATCH)
        if not page:
            return
        yield from page
        last = page[-1]


def _merge(listed: Iterator[StoredObject], referenced: Iterator[str]
           ) -> Iterator[tuple[str, int | None, bool]]:
    """(sha256, listed size or None when not listed, referenced?) for every hash either
    stream holds, in hash order; ListingOutOfOrder if the listing is not sorted."""
    def listing() -> Iterator[tuple[str, int]]:
        previous = ""
        for stored in listed:
            if stored.name <= previous:
                raise ListingOutOfOrder(
                    f"the bucket listed {stored.key} after a later key: its listing is not "
                    "in key order, which verify relies on")
            previous = stored.name
            yield stored.name, stored.size

    objects, wanted = listing(), referenced
    obj, ref = next(objects, None), next(wanted, None)
    while obj is not None or ref is not None:
        if ref is None or (obj is not None and obj[0] < ref):
            assert obj is not None
            yield obj[0], obj[1], False
            obj = next(objects, None)
        elif obj is None or ref < obj[0]:
            yield ref, None, True
            ref = next(wanted, None)
        else:
            yield ref, obj[1], True
            obj, ref = next(objects, None), next(wanted, None)
