"""Scrub: re-verify the copies a store is recorded to hold, a slice at a time.

Integrity checks at archival time only cover the source of each copy; bit rot and lost
objects at rest are found here. A scrub reads, decodes and rehashes each copy the catalog
calls present, and records what it finds so the director copies the blob there again:

- an object that is gone: the copy becomes missing;
- a corrupt object in a local store, when another store holds a present copy to repair it
  from: the object is set aside into the store's `quarantine/` (kept, never deleted) and the
  copy becomes missing; otherwise (S3, a read-only store, no good copy elsewhere) the copy
  becomes corrupted and the object stays where it is.

Copies recorded as corrupted are re-checked too: one an operator has removed becomes
missing (and is copied again), one restored becomes present. `scrub_runs` walks whole
stores, or samples of them, with this page function.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from archive_pipelines.blobstore import CheckResult
from archive_pipelines.blobstore.hash_prefixes import prefix_range
from archive_pipelines.catalog import Catalog, utcnow
from archive_pipelines.counts import Counts
from archive_pipelines.replication.copier import map_parallel
from archive_pipelines.replication.quarantine import can_set_aside, set_aside
from archive_pipelines.replication.report import one_line
from archive_pipelines.replication.stores import ReplicaSet, ReplicaStore

MAX_PROBLEM_LINES = 20
SCRUBBED = ("present", "corrupted")  # the copy statuses a scrub reads


@dataclass
class ScrubReport(Counts):
    """What a scrub of one store read and found."""

    store: str
    checked: int = 0
    ok: int = 0
    corrupted: int = 0  # copies found corrupt (newly, or still)
    missing: int = 0  # copies recorded present (or corrupted) whose object is gone
    restored: int = 0  # copies recorded corrupted that check out again
    set_aside: int = 0  # of the corrupt ones, objects moved to quarantine/ (now missing)
    bytes_checked: int = 0  # raw bytes of the copies read
    seconds: float = 0.0
    next_cursor: str | None = None  # sha256 to resume after; None: the range is done
    problems: list[str] = field(default_factory=list)  # first few, one line each
    error: str | None = None  # the store could not be read: the scrub stopped there

    @property
    def bad(self) -> int:
        """Copies found missing or corrupt."""
        return self.corrupted + self.missing

    @property
    def objects_per_second(self) -> float:
        return self.checked / self.seconds if self.seconds > 0 else 0.0

    @property
    def megabytes_per_second(self) -> float:
        return self.bytes_checked / 1e6 / self.seconds if self.seconds > 0 else 0.0

    @property
    def mebibytes_per_second(self) -> float:
        """For people (binary units, as every size shown); `megabytes_per_second` for JSON."""
        return self.bytes_checked / 2**20 / self.seconds if self.seconds > 0 else 0.0

    def add(self, other: ScrubReport) -> None:
        """Add the counts of another page of the same store (problem lines bounded)."""
        self.add_counts(other)
        self.problems.extend(other.problems[:max(0, MAX_PROBLEM_LINES - len(self.problems))])

    def summary(self) -> dict[str, object]:
        """Plain values for run metadata, logs and `--json`."""
        return {"store": self.store, "checked": self.checked, "ok": self.ok,
                "missing": self.missing, "corrupted": self.corrupted,
                "restored": self.restored, "set_aside": self.set_aside,
                "bytes_checked": self.bytes_checked, "seconds": round(self.seconds, 3),
                "objects_per_second": round(self.objects_per_second, 1),
                "megabytes_per_second": round(self.megabytes_per_second, 2),
                "problems": list(self.problems), "error": self.error}


def scrub_store(catalog: Catalog, replica_set: ReplicaSet, store_name: str, *,
                prefix: str | None = None, cursor: str | None = None, limit: int = 1000,
                width: int = 4) -> ScrubReport:
    """Check up to `limit` recorded copies at one store, in sha256 order after `cursor`.

    `prefix` confines the scrub to one hash-prefix partition (`00`..`ff`). Call again with
    `next_cursor` until it is None. A store that cannot be read raises BlobStoreError.
    """
    low, high = prefix_range(prefix)
    return scrub_range(catalog, replica_set, store_name, low=low, high=high, cursor=cursor,
                       limit=limit, width=width)


def scrub_range(catalog: Catalog, replica_set: ReplicaSet, store_name: str, *, low: str,
                high: str | None, cursor: str | None = None, limit: int = 1000,
                width: int = 4) -> ScrubReport:
    """`scrub_store` over the sha256 range [low, high) (high None: to the end)."""
    replica = replica_set[store_name]
    store = replica.require()
    with catalog.reading() as tx:
        rows = tx.copies.copies_to_scrub(store_id=replica.store_id, statuses=SCRUBBED,
                               low=low, high=high, after=cursor, limit=limit)
    results: list[CheckResult] = map_parallel(
        lambda row: store.check(row[1], expected_size=row[2]), rows, width=width)
    report = ScrubReport(store_name, checked=len(rows),
                         bytes_checked=sum(size for _id, _sha, size, _status in rows),
                         next_cursor=rows[-1][1] if len(rows) >= limit else None)
    corrupt = [row[0] for row, result in zip(rows, results, strict=True)
               if result.status == "corrupt"]
    repairable = _repairable(catalog, replica_set, replica, blob_ids=corrupt) if corrupt else set()
    moves: dict[tuple[str, str], list[int]] = {}
    for (blob_id, sha, _size, recorded), result in zip(rows, results, strict=True):
        new_status = _judge(replica, report, blob_id, sha=sha, recorded=recorded, result=result,
                            repairable=repairable)
        if new_status is not None and new_status != recorded:
            moves.setdefault((recorded, new_status), []).append(blob_id)
    if moves:
        now = utcnow()
        with catalog.transaction() as tx:
            for (recorded, new_status), blob_ids in moves.items():
                tx.copies.update_copies(store_id=replica.store_id, blob_ids=blob_ids,
                              status=new_status, mtime=now, only_if=recorded)
    return report


def _judge(replica: ReplicaStore, report: ScrubReport, blob_id: int, *, sha: str, recorded: str,
           result: CheckResult, repairable: set[int]) -> str | None:
    """Count one checked copy; the status it should have now (None: leave the row)."""
    if result.status == "ok":
        report.ok += 1
        if recorded == "corrupted":
            report.restored += 1
            return "present"
        return None
    detail = f" ({result.detail})" if result.detail else ""
    if result.status == "missing":
        report.missing += 1
        _note(report, f"blob {sha} is missing{detail}")
        return "missing"
    report.corrupted += 1
    if blob_id in repairable:
        store = replica.require()
        try:
            where = set_aside(store, sha)
        except OSError as exc:
            _note(report, f"blob {sha} is corrupt{detail}; cannot set it aside: {one_line(exc)}")
            return "corrupted"
        report.set_aside += 1
        moved = f"set aside to {where}" if where else "gone meanwhile"
        _note(report, f"blob {sha} is corrupt{detail}; {moved}, to be copied again")
        return "missing"
    _note(report, f"blob {sha} is corrupt{detail}; left in place (no other good copy known, "
                  "or the store cannot set objects aside)")
    return "corrupted"


def _note(report: ScrubReport, line: str) -> None:
    if len(report.problems) < MAX_PROBLEM_LINES:
        report.problems.append(f"store {report.store!r}: {line}")


def _repairable(catalog: Catalog, replica_set: ReplicaSet, replica: ReplicaStore,
                *, blob_ids: list[int]) -> set[int]:
    """Of these blobs, those whose corrupt object here can be set aside: the store can, and
    another readable store holds a present copy to copy the blob again from."""
    if not (replica.writable and can_set_aside(replica.require())):
        return set()
    sources = {r.store_id for r in replica_set if r.readable and r.store_id != replica.store_id}
    with catalog.reading() as tx:
        copies = tx.copies.copies_of(blob_ids)
    return {blob_id for blob_id, states in copies.items()
            if any(sid in sources and state.status == "present" for sid, state in states.items())}
