"""Bring every blob of a hash-prefix partition (`00`..`ff`), or of a range of them, to the
retention policy."""

from __future__ import annotations

from datetime import timedelta

from archive_pipelines.blobstore.hash_prefixes import prefix_range
from archive_pipelines.catalog import Catalog
from archive_pipelines.replication.report import BatchReport
from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.replication.worker import archive_batch


def replicate_prefix(catalog: Catalog, replica_set: ReplicaSet, prefix: str, *, retention: int,
                     max_age: timedelta, batch_size: int, width: int,
                     last_prefix: str | None = None) -> BatchReport:
    """Every referenced blob whose sha256 starts with `prefix` (or with any prefix from
    `prefix` through `last_prefix`, of the same length), in batches, through the worker
    (which re-checks need, so blobs already at the policy cost one lookup)."""
    low, high = prefix_range(prefix)
    if last_prefix is not None:
        if len(last_prefix) != len(prefix) or last_prefix < prefix:
            raise ValueError(f"prefix range {prefix}..{last_prefix} is not a range")
        high = prefix_range(last_prefix)[1]
    report = BatchReport()
    last = ""
    while True:
        with catalog.reading() as tx:
            batch = tx.blobs.referenced_hashes(low=low, high=high, after=last, limit=batch_size)
        if not batch:
            return report
        report.add(archive_batch(catalog, replica_set, batch, retention=retention,
                                   max_age=max_age, width=width, raise_on_failure=False))
        last = batch[-1]
