"""Bring every blob of one hash-prefix partition (`00`..`ff`) to the retention policy."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from archive_pipelines.catalog.models import Blob
from archive_pipelines.replication.report import BatchReport
from archive_pipelines.replication.scrub import prefix_range
from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.replication.worker import archive_batch
from archive_pipelines.storage.context import Storage


def replicate_prefix(storage: Storage, replica_set: ReplicaSet, prefix: str, *, retention: int,
                     max_age: timedelta, batch_size: int, width: int) -> BatchReport:
    """Every referenced blob whose sha256 starts with `prefix`, in batches, through the
    worker (which re-checks need, so blobs already at the policy cost one lookup)."""
    low, high = prefix_range(prefix)
    report = BatchReport()
    last = ""
    while True:
        with storage.read_session() as session:
            query = select(Blob.sha256).where(Blob.ref_count > 0, Blob.sha256 >= low,
                                              Blob.sha256 > last)
            if high is not None:
                query = query.where(Blob.sha256 < high)
            batch = list(session.scalars(query.order_by(Blob.sha256).limit(batch_size)))
        if not batch:
            return report
        report.merge(archive_batch(storage, replica_set, batch, retention=retention,
                                   max_age=max_age, width=width, raise_on_failure=False))
        last = batch[-1]
