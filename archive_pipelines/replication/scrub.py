"""Scrub: re-verify the copies a store is recorded to hold, a slice at a time.

Integrity checks at archival time only cover the source of each copy; bit rot and lost
objects at rest are found here. A scrub reads, decodes and rehashes each copy the catalog
calls present, and records what it finds (corrupted, missing) so the director re-replicates
from a good copy. Copies recorded as corrupted are re-checked too: one an operator has
removed becomes missing (and is copied again), one restored becomes present. Nothing is
ever deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from archive_pipelines.blobstore import CheckResult
from archive_pipelines.blobstore.prefixes import prefix_range
from archive_pipelines.catalog.copies import copies_to_scrub, update_copies
from archive_pipelines.catalog.models import utcnow
from archive_pipelines.catalog.sessions import Catalog
from archive_pipelines.replication.copier import map_parallel
from archive_pipelines.replication.stores import ReplicaSet

# (recorded status, check result) -> new status; absent pairs leave the row as it is.
_TRANSITIONS = {
    ("present", "corrupt"): "corrupted",
    ("present", "missing"): "missing",
    ("corrupted", "ok"): "present",
    ("corrupted", "missing"): "missing",
}


@dataclass
class ScrubReport:
    store: str
    checked: int = 0
    corrupted: int = 0  # present copies found corrupt
    missing: int = 0  # present (or corrupted) copies found gone
    restored: int = 0  # corrupted copies that check out again
    next_cursor: str | None = None  # sha256 to resume after; None: the range is done
    problems: list[str] = field(default_factory=list)  # first few, one line each


def scrub_store(catalog: Catalog, replica_set: ReplicaSet, store_name: str, *,
                prefix: str | None = None, cursor: str | None = None, limit: int = 1000,
                width: int = 4) -> ScrubReport:
    """Check up to `limit` recorded copies at one store, in sha256 order after `cursor`.

    `prefix` confines the scrub to one hash-prefix partition (`00`..`ff`). Call again with
    `next_cursor` until it is None. A store that cannot be read raises BlobStoreError.
    """
    replica = replica_set[store_name]
    store = replica.require()
    low, high = prefix_range(prefix)
    with catalog.read_session() as session:
        rows = copies_to_scrub(session, store_id=replica.store_id,
                               statuses=("present", "corrupted"), low=low, high=high,
                               after=cursor, limit=limit)
    results: list[CheckResult] = map_parallel(
        lambda row: store.check(row[1], expected_size=row[2]), rows, width=width)
    report = ScrubReport(store_name, checked=len(rows),
                         next_cursor=rows[-1][1] if len(rows) >= limit else None)
    moves: dict[tuple[str, str], list[int]] = {}
    for (blob_id, sha, _size, recorded), result in zip(rows, results, strict=True):
        new_status = _TRANSITIONS.get((recorded, result.status))
        if new_status is None:
            continue
        moves.setdefault((recorded, new_status), []).append(blob_id)
        if new_status == "corrupted":
            report.corrupted += 1
        elif new_status == "missing":
            report.missing += 1
        else:
            report.restored += 1
        if len(report.problems) < 20 and new_status != "present":
            report.problems.append(f"store {store_name!r}: blob {sha} is {new_status}"
                                   + (f": {result.detail}" if result.detail else ""))
    if moves:
        now = utcnow()
        with catalog.session() as session:
            for (recorded, new_status), blob_ids in moves.items():
                update_copies(session, store_id=replica.store_id, blob_ids=blob_ids,
                              status=new_status, mtime=now, only_if=recorded)
    return report
