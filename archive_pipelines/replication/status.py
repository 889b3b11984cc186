"""Replication status: copies per store and blobs short of the policy (CLI, asset check)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from archive_pipelines.catalog import COPY_STATUSES, Catalog, utcnow
from archive_pipelines.replication.stores import ReplicaSet


@dataclass(frozen=True)
class ReplicationStatus:
    """Copies per configured store, and how many referenced blobs fall short."""

    retention: int
    copies_per_store: dict[str, dict[str, int]]  # {store: {status: copies}}
    under_replicated: int  # referenced blobs with fewer than `retention` present copies
    in_progress: int  # of those, how many are covered by fresh ongoing copies
    blobs: int  # referenced blobs (garbage is not replicated)
    store_errors: list[str] = field(default_factory=list)

    @property
    def meets_policy(self) -> bool:
        return self.under_replicated == 0

    def present(self, store: str) -> int:
        return self.copies_per_store.get(store, {}).get("present", 0)


def replication_status(catalog: Catalog, replica_set: ReplicaSet, retention: int, *,
                       max_age: timedelta | None = None) -> ReplicationStatus:
    """Where copies stand. Full scans of `blob_copy`: for status pages, not hot loops.

    `under_replicated` counts present copies only (what is safe now); with `max_age`,
    `in_progress` tells how many of those have enough fresh ongoing copies on the way.
    """
    ids = replica_set.store_ids
    with catalog.reading() as tx:
        counts = tx.copies.status_counts()
        blobs = tx.copies.count_referenced_blobs()
        short = tx.copies.count_under_replicated(store_ids=ids, retention=retention)
        in_progress = 0
        if max_age is not None and short:
            still_short = tx.copies.count_under_replicated(store_ids=ids, retention=retention,
                                                 fresh_since=utcnow() - max_age)
            in_progress = short - still_short
    per_store = {replica.name: {status: counts.get(replica.store_id, {}).get(status, 0)
                                for status in COPY_STATUSES}
                 for replica in replica_set}
    return ReplicationStatus(retention, per_store, short, in_progress, blobs,
                             replica_set.errors)
