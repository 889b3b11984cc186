"""Bring every blob of a hash-prefix partition (`00`..`ff`), or of several, to the retention
policy, with a report per prefix (what the `replica_copies` partitions record)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from archive_pipelines.blobstore.hash_prefixes import prefix_range
from archive_pipelines.catalog import Catalog
from archive_pipelines.replication.report import BatchReport
from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.replication.worker import archive_batch


def replicate_prefix(catalog: Catalog, replica_set: ReplicaSet, prefix: str, *, retention: int,
                     max_age: timedelta, batch_size: int, width: int) -> BatchReport:
    """Every referenced blob whose sha256 starts with `prefix`, in batches, through the worker
    (which re-checks need, so blobs already at the policy cost one lookup)."""
    low, high = prefix_range(prefix)
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


def replicate_prefixes(catalog: Catalog, replica_set: ReplicaSet, prefixes: Sequence[str], *,
                       retention: int, max_age: timedelta, batch_size: int,
                       width: int) -> dict[str, BatchReport]:
    """`replicate_prefix` for each of `prefixes` in turn: each prefix's own report, by prefix.

    Batches never span two prefixes, so each report counts that prefix's blobs only (on a
    small archive a batch then holds a prefix's few blobs; on a large one, a prefix fills
    its batches). A store taken out of the run stays out for the prefixes after it.
    """
    return {prefix: replicate_prefix(catalog, replica_set, prefix, retention=retention,
                                     max_age=max_age, batch_size=batch_size, width=width)
            for prefix in prefixes}
