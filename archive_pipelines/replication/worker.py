"""The archiver worker: bring one batch of blobs up to the retention policy.

1. Re-check each object's need against the catalog (another run may have copied it).
2. Pick random (source, destination) pairs with distinct destinations; group by pair.
3. Check every object's integrity at its source (read, decode, rehash). Missing or corrupt
   objects get that status at the source and leave the batch. Small objects keep the bytes
   that were checked, and those are what gets copied (no second read, nothing changed in
   between); larger ones are streamed again and rehashed on the way.
4. Mark the copies ongoing, copy them (atomic per object), mark them present.

Small objects at local stores are checked and copied on the calling thread: a few syscalls
each, cheaper there than the GIL hand-offs of the copier threads, which take the rest
(large blobs, S3) meanwhile.

A store that fails as a whole (unreachable, refused, full) is taken out of the run at its
first failure; the copies it was due are counted as skipped, not tried one by one.

Statuses are written in short transactions, never held open while bytes move; each is
repeated after a lost catalog connection (they are idempotent). Replication never deletes
anything at any store.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from archive_pipelines.blobstore import BlobStoreError, CheckResult
from archive_pipelines.catalog import BlobRow, Catalog, CopyState, retry_on_connection_loss, utcnow
from archive_pipelines.replication.copier import (
    CopyItem,
    CopyOutcome,
    copy_objects,
    map_parallel,
)
from archive_pipelines.replication.faults import store_fault
from archive_pipelines.replication.policy import STORES_OUT, Pair, group_by_pair, plan_object
from archive_pipelines.replication.report import BatchReport, ReplicationFailed, one_line
from archive_pipelines.replication.stores import ReplicaSet


@dataclass(frozen=True)
class Unchecked:
    """A source check that did not happen: the store failed (or was already out)."""

    reason: str
    skipped: bool = False  # the store was already out: not tried
    store_failed: bool = False  # the store itself failed (it is out now, reported once)


SourceCheck = CheckResult | Unchecked
# Blobs up to this size keep their verified bytes from the source check to the copy (at most
# batch_size of them in memory): the copy writes what was checked and reads nothing again.
KEEP_VERIFIED_BYTES = 64 << 10


@dataclass
class _Progress:
    """Per blob: copies planned and copies made, to count the blobs left short."""

    wanted: dict[str, int]
    unplaceable: set[str]
    made: Counter[str]

    def short(self) -> int:
        return len(self.unplaceable | {sha for sha, n in self.wanted.items()
                                       if self.made[sha] < n})


def archive_batch(catalog: Catalog, replica_set: ReplicaSet, sha256s: Sequence[str], *,
                  retention: int, max_age: timedelta, width: int,
                  rng: random.Random | None = None,
                  raise_on_failure: bool = True) -> BatchReport:
    """Copy the blobs in `sha256s` until each has `retention` copies (or try to).

    Raises ReplicationFailed (carrying the report) when an object that checked valid at its
    source could not be copied, unless `raise_on_failure` is False; either way every copy
    that succeeded is recorded. Corrupt or missing sources are reported, not failures; so
    are stores out for the run (`report.store_problems`, `report.skipped_copies`).
    """
    report = BatchReport(requested=len(sha256s))
    groups, progress = _plan(catalog, replica_set, list(dict.fromkeys(sha256s)),
                             retention=retention, max_age=max_age,
                             rng=rng or random.Random(), report=report)
    if groups:
        with ThreadPoolExecutor(max_workers=max(1, width),
                                thread_name_prefix="archiver") as pool:
            checks = _check_sources(replica_set, groups, width, pool=pool)
            valid = _record_source_problems(catalog, replica_set, groups, checks=checks, report=report)
            valid = _drop_blocked(replica_set, valid, report)
            ongoing_at = utcnow()
            if valid:
                retry_on_connection_loss(
                    lambda: _mark_ongoing(catalog, replica_set, valid, ongoing_at=ongoing_at),
                    what="marking copies ongoing")
            for pair, blobs in valid.items():
                verified = {b.sha256: checks[(pair[0], b.sha256)] for b in blobs}
                _copy_group(catalog, replica_set, pair, blobs=blobs, verified=verified, ongoing_at=ongoing_at,
                            width=width, pool=pool, report=report, progress=progress)
    report.short = progress.short()
    report.store_problems.update(replica_set.problems)
    if raise_on_failure and not report.ok:
        raise ReplicationFailed(report)
    return report


def _plan(catalog: Catalog, replica_set: ReplicaSet, hashes: list[str], *, retention: int,
          max_age: timedelta, rng: random.Random, report: BatchReport
          ) -> tuple[dict[Pair, list[BlobRow]], _Progress]:
    now = utcnow()

    def look_up() -> tuple[dict[str, BlobRow], dict[int, dict[int, CopyState]]]:
        with catalog.reading() as tx:
            found = tx.blobs.blobs_by_sha256(hashes)
            return found, tx.copies.copies_of([b.id for b in found.values()])

    blobs, copies = retry_on_connection_loss(look_up, what="looking up a batch's copies")
    names = replica_set.names
    readable = {r.name for r in replica_set if r.readable}
    writable = {r.name for r in replica_set if r.writable}
    out = replica_set.out
    plans: list[tuple[BlobRow, list[Pair]]] = []
    progress = _Progress({}, set(), Counter())
    for sha in hashes:
        blob = blobs.get(sha)
        if blob is None or blob.ref_count == 0:
            report.skipped += 1  # unknown, or garbage: garbage is not replicated
            continue
        states = {names[sid]: state for sid, state in copies[blob.id].items() if sid in names}
        plan = plan_object(states, retention=retention, now=now, max_age=max_age,
                           readable=readable, writable=writable, rng=rng, out=out)
        if plan.needed == 0:
            report.skipped += 1
            continue
        report.planned += 1
        if plan.problem:
            report.unplaceable += 1
            report.short_reasons[plan.reason or plan.problem] += 1
            progress.unplaceable.add(sha)
            for store in plan.skipped:
                report.skipped_copies[store] += 1
            if plan.reason != STORES_OUT:  # those are reported once per store, not per blob
                report.note(f"blob {sha}: {plan.problem}")
        if plan.pairs:
            plans.append((blob, plan.pairs))
            progress.wanted[sha] = len(plan.pairs)
    return group_by_pair(plans), progress


def _check_sources(replica_set: ReplicaSet, groups: dict[Pair, list[BlobRow]], width: int,
                   *, pool: ThreadPoolExecutor) -> dict[tuple[str, str], SourceCheck]:
    """Read, decode and rehash each (source, blob) once, in parallel."""
    wanted = {(source, blob.sha256): blob.size
              for (source, _dest), blobs in groups.items() for blob in blobs}

    def check(key: tuple[str, str]) -> SourceCheck:
        source, sha = key
        replica = replica_set[source]
        if not replica.readable:
            return Unchecked(replica.error or f"store {source!r} is not available",
                             skipped=True)
        try:
            return replica.require().check(sha, expected_size=wanted[key],
                                           keep_up_to=KEEP_VERIFIED_BYTES)
        except (BlobStoreError, OSError) as exc:
            fault = store_fault(exc)
            if fault is not None:
                replica_set.skip(fault)
            return Unchecked(one_line(exc), store_failed=fault is not None)

    def cheap(key: tuple[str, str]) -> bool:  # a small local read: on this thread
        return wanted[key] <= KEEP_VERIFIED_BYTES and replica_set[key[0]].local

    keys = list(wanted)
    return dict(zip(keys, map_parallel(check, keys, width=width, pool=pool, inline=cheap),
                    strict=True))


def _record_source_problems(catalog: Catalog, replica_set: ReplicaSet,
                            groups: dict[Pair, list[BlobRow]],
                            *, checks: dict[tuple[str, str], SourceCheck],
                            report: BatchReport) -> dict[Pair, list[BlobRow]]:
    """Mark missing/corrupt source copies; return each group without its bad objects."""
    found: dict[tuple[str, str], list[int]] = {}  # (source, status) -> blob ids
    ids = {blob.sha256: blob.id for blobs in groups.values() for blob in blobs}
    for (source, sha), result in checks.items():
        if isinstance(result, Unchecked):
            continue
        if result.status != "ok":
            status = "missing" if result.status == "missing" else "corrupted"
            found.setdefault((source, status), []).append(ids[sha])
            counter = report.missing_found if status == "missing" else report.corrupted_found
            counter[source] += 1
            detail = f": {result.detail}" if result.detail else ""
            report.note(f"store {source!r}: blob {sha} is {status} at the source{detail}; "
                        "not copied from there")
    if found:
        retry_on_connection_loss(lambda: _mark_sources(catalog, replica_set, found),
                                 what="recording bad source copies")
    valid: dict[Pair, list[BlobRow]] = {}
    for (source, destination), blobs in groups.items():
        keep = []
        for blob in blobs:
            result = checks[(source, blob.sha256)]
            if isinstance(result, Unchecked):
                if result.skipped:
                    report.skipped_copies[destination] += 1
                    continue
                report.failures += 1
                report.failed_copies[destination] += 1
                if not result.store_failed:  # a store's failure is reported once, for it
                    report.note(f"blob {blob.sha256}: cannot check at {source!r}: "
                                f"{result.reason}")
            elif result.ok:
                keep.append(blob)
        if keep:
            valid[(source, destination)] = keep
    return valid


def _drop_blocked(replica_set: ReplicaSet, groups: dict[Pair, list[BlobRow]],
                  report: BatchReport) -> dict[Pair, list[BlobRow]]:
    """Groups whose source or destination went out during the checks are skipped whole."""
    kept = {}
    for (source, destination), blobs in groups.items():
        if replica_set.guard(source, destination).blocked() is None:
            kept[(source, destination)] = blobs
        else:
            report.skipped_copies[destination] += len(blobs)
    return kept


def _mark_ongoing(catalog: Catalog, replica_set: ReplicaSet,
                  groups: dict[Pair, list[BlobRow]], *, ongoing_at: datetime) -> None:
    with catalog.transaction() as tx:
        for (_source, destination), blobs in groups.items():
            tx.copies.upsert_copies(store_id=replica_set[destination].store_id,
                          blob_ids=[b.id for b in blobs], status="ongoing",
                          mtime=ongoing_at, keep_present=True)


def _mark_sources(catalog: Catalog, replica_set: ReplicaSet,
                  found: dict[tuple[str, str], list[int]]) -> None:
    now = utcnow()
    with catalog.transaction() as tx:
        for (source, status), blob_ids in found.items():
            tx.copies.update_copies(store_id=replica_set[source].store_id,
                          blob_ids=blob_ids, status=status, mtime=now, only_if="present")


def _copy_group(catalog: Catalog, replica_set: ReplicaSet, pair: Pair, *, blobs: list[BlobRow],
                verified: dict[str, SourceCheck], ongoing_at: datetime, width: int,
                pool: ThreadPoolExecutor, report: BatchReport, progress: _Progress) -> None:
    source_name, destination_name = pair
    source, destination = replica_set[source_name], replica_set[destination_name]
    items = [CopyItem(b.sha256, b.size, _verified_bytes(verified[b.sha256])) for b in blobs]
    guard = replica_set.guard(source_name, destination_name)
    reason = guard.blocked()  # an earlier group may have taken either store out
    if reason is not None:
        outcomes = [CopyOutcome(i.sha256, i.size, error=reason, skipped=True) for i in items]
    else:
        with destination.batched_writes():
            outcomes = copy_objects(source.require(), destination.require(), items,
                                    width=width, pool=pool, guard=guard)
    done = [o for o in outcomes if o.ok]
    if done:
        try:
            destination.sync()  # durable before the catalog says "present"
        except OSError as exc:
            report.failures += len(done)
            report.failed_copies[destination_name] += len(done)
            report.note(f"store {destination_name!r}: cannot sync: {one_line(exc)}")
            done = []
    retry_on_connection_loss(
        lambda: _record_copies(catalog, destination.store_id, blobs, outcomes=outcomes, done=done,
                               ongoing_at=ongoing_at),
        what=f"recording copies at {destination_name!r}")
    for outcome in done:
        progress.made[outcome.sha256] += 1
        report.copies[destination_name] += 1
        if outcome.created:
            report.created[destination_name] += 1
            report.bytes_copied[destination_name] += outcome.size
            report.stored_bytes[destination_name] += outcome.stored_bytes
    for outcome in outcomes:
        if outcome.skipped:
            report.skipped_copies[destination_name] += 1
        elif not outcome.ok:
            report.failures += 1
            report.failed_copies[destination_name] += 1
            if outcome.fault is None:  # a store's fault is reported once, for the store
                report.note(f"copy {source_name} -> {destination_name}: {outcome.error}")


def _verified_bytes(check: SourceCheck) -> bytes | None:
    return check.data if isinstance(check, CheckResult) else None


def _record_copies(catalog: Catalog, store_id: int, blobs: list[BlobRow],
                   *, outcomes: list[CopyOutcome], done: list[CopyOutcome],
                   ongoing_at: datetime) -> None:
    ids = {b.sha256: b.id for b in blobs}
    done_hashes = {o.sha256 for o in done}
    corrupt = [ids[o.sha256] for o in outcomes if o.destination_corrupt]
    failed = [ids[o.sha256] for o in outcomes
              if o.sha256 not in done_hashes and not o.destination_corrupt]
    now = utcnow()  # one mtime for the whole group of copies
    with catalog.transaction() as tx:
        if done:
            tx.copies.upsert_copies(store_id=store_id, blob_ids=[ids[h] for h in done_hashes],
                          status="present", mtime=now)
        if corrupt:
            tx.copies.upsert_copies(store_id=store_id, blob_ids=corrupt, status="corrupted",
                          mtime=now, keep_present=True)
        if failed:
            # Ours, and still ours (no other worker has touched them since): say so now
            # rather than leave "ongoing" to age out.
            tx.copies.update_copies(store_id=store_id, blob_ids=failed, status="missing",
                          mtime=now, only_if="ongoing", only_if_mtime=ongoing_at)
