"""`replica_copies`: copies of every blob across stores, partitioned by hash prefix."""

from datetime import timedelta

import dagster as dg
import pandas as pd

from archive_pipelines.assets.captures import captures
from archive_pipelines.assets.metadata import code_references, counts, table
from archive_pipelines.assets.storage import blobs
from archive_pipelines.blobstore.hash_prefixes import HEX_PREFIXES
from archive_pipelines.catalog import COPY_STATUSES
from archive_pipelines.replication import BatchReport, RunSummary, replication_status
from archive_pipelines.replication.prefix import replicate_prefixes
from archive_pipelines.resources.replication import ReplicationResource
from archive_pipelines.run_labels import OWNERS
from archive_pipelines.sizes import human_bytes

hash_prefixes = dg.StaticPartitionsDefinition(list(HEX_PREFIXES))

# A backfill launches one run per PREFIXES_PER_RUN prefixes: "Materialize all" is 32 runs, each
# one step, which a cluster's Celery workers share (one run would be one step on one worker).
# On one machine it costs 31 more run launches per full pass (~7 CPU-s each, measured by
# bench/cluster_bench.py): nothing next to a pass over a large archive, and the runs queue
# behind max_concurrent_runs.
PREFIXES_PER_RUN = 8


# Every blob is replicated, whichever day stored it and whether a snapshot or a crawl holds
# it: each hash-prefix partition depends on all of the days of both.
@dg.asset(partitions_def=hash_prefixes, group_name="replication",
          backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=PREFIXES_PER_RUN),
          kinds={"python"}, owners=OWNERS, tags={"area": "replication", "blob_store": "reads"},
          # A full pass (Materialize all: one run) at least weekly, as often as scrub reads.
          freshness_policy=dg.FreshnessPolicy.time_window(fail_window=timedelta(days=7),
                                                          warn_window=timedelta(days=2)),
          metadata=code_references(replicate_prefixes),
          deps=[dg.AssetDep(blobs, partition_mapping=dg.AllPartitionMapping()),
                dg.AssetDep(captures, partition_mapping=dg.AllPartitionMapping())])
def replica_copies(context: dg.AssetExecutionContext,
                   replication: ReplicationResource) -> dg.MaterializeResult:
    """Verified copies of the blobs whose sha256 starts with this partition's two hex digits,
    across the configured stores, up to `replication.retention` copies each.

    Materializing a partition brings its blobs to the policy (integrity is checked at the
    source before every copy; nothing is ever deleted at a replica). A backfill launches a
    run per 8 prefixes, each walking its range: "Materialize all" re-replicates everything
    in 32 runs, not 256, which several machines' workers share.

    Each partition records its own prefix's figures, also after a run over a range:
    `prefix_blobs_checked` (the prefix's referenced blobs, every one checked) and what the
    run did for that prefix (`run_copies_made`, `run_bytes_copied`, ...). The run's totals
    over the range are in the run's log, not on any partition.
    """
    setup = replication.open()
    policy = setup.policy
    for error in setup.replicas.errors:
        context.log.warning(error)
    prefixes = context.partition_keys
    reports = replicate_prefixes(setup.catalog, setup.replicas, prefixes,
                                 retention=policy.retention, max_age=setup.max_age,
                                 batch_size=policy.batch_size, width=policy.copier_width)
    total = BatchReport()
    for report in reports.values():
        total.add(report)
    where = prefixes[0] if len(prefixes) == 1 else f"{prefixes[0]}..{prefixes[-1]}"
    run = RunSummary.of_batch(total, tuple(setup.replicas.names.values()))
    context.log.info(f"prefix {where}: {total.requested:,} blobs checked; {run.verdict()}")
    for line in run.store_lines():
        context.log.info(line)
    for line in total.errors[:20]:
        context.log.warning(line)
    if not run.policy_met:
        short = [prefix for prefix, report in reports.items() if report.short]
        raise dg.Failure(description=run.verdict(),
                         metadata={"summary": "\n".join(run.store_lines()),
                                   "prefixes_short": ", ".join(short),
                                   "errors": "\n".join(total.errors[:20])})
    for prefix, report in reports.items():
        context.add_asset_metadata(prefix_metadata(prefix, report, stores=run.stores),
                                   partition_key=prefix)
    context.log.info(f"prefixes {where} ({len(prefixes)} partition(s)): "
                     f"{total.requested:,} blobs checked, {run.copies_made:,} copies made "
                     f"({human_bytes(sum(total.bytes_copied.values()))}) by this run")
    return dg.MaterializeResult()


# One run per prefix where the asset's own backfill runs 8 prefixes per run: the finest
# spread of a backfill over the cluster's Celery workers (`dagster job backfill -j
# replica_copies_job`).
replica_copies_job = dg.define_asset_job(
    "replica_copies_job", selection=[replica_copies],
    description="`replica_copies` of the chosen prefixes; a job backfill launches one run per "
                "prefix, so several workers share it (the asset's own backfill runs 8 prefixes "
                "per run).")


def prefix_metadata(prefix: str, report: BatchReport, *,
                    stores: tuple[str, ...]) -> dict[str, dg.MetadataValue]:
    """One partition's figures: its prefix's blobs, and what this run did for that prefix
    (copies per store: every configured store, 0 where none, so each plots per partition)."""
    copied = sum(report.bytes_copied.values())
    copies_made = sum(report.created.values())
    return {
        **counts({"prefix_blobs_checked": report.requested, "run_copies_made": copies_made,
                  "run_bytes_copied": copied,
                  "run_corrupted_found": sum(report.corrupted_found.values()),
                  "run_missing_found": sum(report.missing_found.values())}),
        **counts({f"run_copies_to_{store}": report.created[store] for store in stores}),
        "summary": dg.MetadataValue.md(
            f"prefix {prefix}: {report.requested:,} referenced blobs checked; this run made "
            f"{copies_made:,} copies ({human_bytes(copied)})"),
    }


@dg.asset_check(asset=replica_copies, description="Every referenced blob of the archive (every "
                                                   "prefix) has `retention` present copies "
                                                   "across the stores; the archive's copies "
                                                   "per store and status as a table. "
                                                   "A warning: the director catches up.")
def replication_policy_met(replication: ReplicationResource) -> dg.AssetCheckResult:
    setup = replication.open()
    status = replication_status(setup.catalog, setup.replicas, setup.policy.retention)
    settings = replication.catalog.project_settings()
    rows = setup.catalog.blobs.counts(primary=settings.storage.primary,
                       grace_hours=settings.storage.gc_grace_hours)
    # Archive-wide, whichever partition the check runs with: `referenced_blobs` (those
    # replicated) as `status`, `verify` and `gc` count them.
    metadata: dict[str, dg.MetadataValue] = {
        **counts({"archive_referenced_blobs": status.blobs, "archive_blob_rows": rows.rows,
                  "archive_unreferenced_blobs": rows.unreferenced,
                  "archive_under_replicated_blobs": status.under_replicated,
                  "retention": setup.policy.retention}),
        **counts({f"archive_present_on_{store}": status.present(store)
                  for store in status.copies_per_store}),
        "archive_copies_per_store": table(copies_frame(status.copies_per_store)),
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
