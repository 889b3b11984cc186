"""`replica_copies`: copies of every blob across stores, partitioned by hash prefix."""

from datetime import timedelta

import dagster as dg
import pandas as pd

from archive_pipelines.assets.captures import captures
from archive_pipelines.assets.metadata import code_references, counts, table
from archive_pipelines.assets.storage import blobs
from archive_pipelines.blobstore.hash_prefixes import HEX_PREFIXES
from archive_pipelines.catalog import COPY_STATUSES
from archive_pipelines.replication import RunSummary, replication_status
from archive_pipelines.replication.prefix import replicate_prefix
from archive_pipelines.resources.replication import ReplicationResource
from archive_pipelines.run_labels import OWNERS
from archive_pipelines.sizes import human_bytes

hash_prefixes = dg.StaticPartitionsDefinition(list(HEX_PREFIXES))


# Every blob is replicated, whichever day stored it and whether a snapshot or a crawl holds
# it: each hash-prefix partition depends on all of the days of both.
@dg.asset(partitions_def=hash_prefixes, group_name="replication",
          backfill_policy=dg.BackfillPolicy.single_run(),
          kinds={"python"}, owners=OWNERS, tags={"area": "replication", "blob_store": "reads"},
          # A full pass (Materialize all: one run) at least weekly, as often as scrub reads.
          freshness_policy=dg.FreshnessPolicy.time_window(fail_window=timedelta(days=7),
                                                          warn_window=timedelta(days=2)),
          metadata=code_references(replicate_prefix),
          deps=[dg.AssetDep(blobs, partition_mapping=dg.AllPartitionMapping()),
                dg.AssetDep(captures, partition_mapping=dg.AllPartitionMapping())])
def replica_copies(context: dg.AssetExecutionContext,
                   replication: ReplicationResource) -> dg.MaterializeResult:
    """Verified copies of the blobs whose sha256 starts with this partition's two hex digits,
    across the configured stores, up to `replication.retention` copies each.

    Materializing a partition brings its blobs to the policy (integrity is checked at the
    source before every copy; nothing is ever deleted at a replica). A backfill of a range
    of partitions is one run that walks the range: "Materialize all" re-replicates
    everything in a single run, not 256.
    """
    setup = replication.open()
    policy = setup.policy
    for error in setup.replicas.errors:
        context.log.warning(error)
    keys = context.partition_key_range
    report = replicate_prefix(setup.catalog, setup.replicas, keys.start, last_prefix=keys.end,
                              retention=policy.retention, max_age=setup.max_age,
                              batch_size=policy.batch_size, width=policy.copier_width)
    where = keys.start if keys.start == keys.end else f"{keys.start}..{keys.end}"
    run = RunSummary.of_batch(report, tuple(setup.replicas.names.values()))
    context.log.info(f"prefix {where}: {report.requested:,} blobs checked; {run.verdict()}")
    for line in run.store_lines():
        context.log.info(line)
    for line in report.errors[:20]:
        context.log.warning(line)
    if not run.policy_met:
        raise dg.Failure(description=run.verdict(),
                         metadata={"summary": "\n".join(run.store_lines()),
                                   "errors": "\n".join(report.errors[:20])})
    copied = sum(report.bytes_copied.values())
    metadata: dict[str, dg.MetadataValue] = {
        **counts({"blobs_checked": report.requested, "copies_made": run.copies_made,
                  "bytes_copied": copied,
                  "corrupted_found": sum(report.corrupted_found.values()),
                  "missing_found": sum(report.missing_found.values()),
                  "unplaceable": report.unplaceable}),
        **counts({f"copies_to_{store}": n for store, n in report.created.items()}),
        "summary": dg.MetadataValue.md(
            f"{report.requested:,} blobs of prefix {where} checked, "
            f"{run.copies_made:,} copies made ({human_bytes(copied)})"),
    }
    return dg.MaterializeResult(metadata=metadata)


@dg.asset_check(asset=replica_copies, description="Every referenced blob has `retention` "
                                                   "present copies across the stores; the "
                                                   "copies per store and status as a table. "
                                                   "A warning: the director catches up.")
def replication_policy_met(replication: ReplicationResource) -> dg.AssetCheckResult:
    setup = replication.open()
    status = replication_status(setup.catalog, setup.replicas, setup.policy.retention)
    settings = replication.catalog.project_settings()
    rows = setup.catalog.blobs.counts(primary=settings.storage.primary,
                       grace_hours=settings.storage.gc_grace_hours)
    metadata: dict[str, dg.MetadataValue] = {
        # `referenced_blobs` (those replicated) as `status`, `verify` and `gc` count them.
        **counts({"referenced_blobs": status.blobs, "blob_rows": rows.rows,
                  "unreferenced_blobs": rows.unreferenced,
                  "under_replicated": status.under_replicated,
                  "retention": setup.policy.retention}),
        **counts({f"present_on_{store}": status.present(store) for store in status.copies_per_store}),
        "copies_per_store": table(copies_frame(status.copies_per_store)),
    }
    return dg.AssetCheckResult(passed=status.meets_policy, severity=dg.AssetCheckSeverity.WARN,
                               metadata=metadata)


def copies_frame(copies_per_store: dict[str, dict[str, int]]) -> pd.DataFrame:
    """Stores as rows, copy statuses as columns (0 where none), in the catalog's status order."""
    if not copies_per_store:
        return pd.DataFrame(columns=["store", *COPY_STATUSES])
    frame = pd.DataFrame(copies_per_store).T.reindex(columns=list(COPY_STATUSES)).fillna(0)
    frame = frame.astype("int64").rename_axis("store").reset_index()
    return frame.sort_values("store", ignore_index=True)
