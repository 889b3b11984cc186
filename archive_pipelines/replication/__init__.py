"""Replication: keep `retention` verified copies of every referenced blob.

Plain Python (no Dagster). The director (`plan_batches`) finds under-replicated blobs with
one bounded, indexed query per tick; the worker (`archive_batch`) re-checks need, checks
integrity at the source and copies with the copier, recording missing / ongoing / present /
corrupted per (blob, store); `plan_scrubs` / `run_scrubs` re-verify copies at rest (a
corrupt local object is set aside into `quarantine/`). Nothing here ever deletes an object
at any store.
"""

from archive_pipelines.blobstore.hash_prefixes import prefix_range
from archive_pipelines.replication.copier import CopyItem, CopyOutcome, copy_object, copy_objects
from archive_pipelines.replication.director import DirectorTick, plan_batches, replicate_until_met
from archive_pipelines.replication.report import BatchReport, ReplicationFailed
from archive_pipelines.replication.scrub import ScrubReport, scrub_store
from archive_pipelines.replication.scrub_runs import ScrubPlan, plan_scrubs, run_scrubs
from archive_pipelines.replication.setup import ReplicationSetup
from archive_pipelines.replication.status import ReplicationStatus, replication_status
from archive_pipelines.replication.stores import ReplicaSet, ReplicaStore
from archive_pipelines.replication.summary import RunSummary, StoreTally
from archive_pipelines.replication.worker import archive_batch

__all__ = [
    "BatchReport",
    "CopyItem",
    "CopyOutcome",
    "DirectorTick",
    "ReplicaSet",
    "ReplicaStore",
    "ReplicationFailed",
    "ReplicationSetup",
    "ReplicationStatus",
    "RunSummary",
    "ScrubPlan",
    "ScrubReport",
    "StoreTally",
    "archive_batch",
    "copy_object",
    "copy_objects",
    "plan_batches",
    "plan_scrubs",
    "prefix_range",
    "replicate_until_met",
    "replication_status",
    "run_scrubs",
    "scrub_store",
]
