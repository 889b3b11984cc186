"""`replica_copies`: copies of every blob across stores, partitioned by hash prefix."""

import dagster as dg

from archive_pipelines.assets.captures import captures
from archive_pipelines.assets.storage import blobs
from archive_pipelines.blobstore.prefixes import HEX_PREFIXES
from archive_pipelines.replication import RunSummary, replication_status
from archive_pipelines.replication.prefix import replicate_prefix
from archive_pipelines.resources.replication import ReplicationResource

hash_prefixes = dg.StaticPartitionsDefinition(list(HEX_PREFIXES))


# Every blob is replicated, whichever day stored it and whether a snapshot or a crawl holds
# it: each hash-prefix partition depends on all of the days of both.
@dg.asset(partitions_def=hash_prefixes, group_name="replication",
          deps=[dg.AssetDep(blobs, partition_mapping=dg.AllPartitionMapping()),
                dg.AssetDep(captures, partition_mapping=dg.AllPartitionMapping())])
def replica_copies(context: dg.AssetExecutionContext,
                   replication: ReplicationResource) -> dg.MaterializeResult:
    """Verified copies of the blobs whose sha256 starts with this partition's two hex digits,
    across the configured stores, up to `replication.retention` copies each.

    Materializing a partition brings its blobs to the policy (integrity is checked at the
    source before every copy; nothing is ever deleted at a replica). Backfill all 256
    partitions to re-replicate everything.
    """
    setup = replication.open()
    policy = setup.policy
    for error in setup.replicas.errors:
        context.log.warning(error)
    report = replicate_prefix(setup.catalog, setup.replicas, context.partition_key,
                              retention=policy.retention, max_age=setup.max_age,
                              batch_size=policy.batch_size, width=policy.copier_width)
    run = RunSummary.of_batch(report, tuple(setup.replicas.names.values()))
    for line in report.errors[:20]:
        context.log.warning(line)
    if not run.policy_met:
        raise dg.Failure(description=run.verdict(),
                         metadata={"summary": "\n".join(run.store_lines()),
                                   "errors": "\n".join(report.errors[:20])})
    metadata: dict[str, object] = {
        "blobs_checked": report.requested, "copies_made": run.copies_made,
        "bytes_copied": sum(report.bytes_copied.values()),
        "corrupted_found": sum(report.corrupted_found.values()),
        "missing_found": sum(report.missing_found.values()),
        "unplaceable": report.unplaceable,
    }
    metadata.update({f"copies_to_{store}": n for store, n in report.created.items()})
    return dg.MaterializeResult(metadata=metadata)  # type: ignore[arg-type]


@dg.asset_check(asset=replica_copies, description="Every referenced blob has `retention` "
                                                   "present copies across the stores.")
def replication_policy_met(replication: ReplicationResource) -> dg.AssetCheckResult:
    setup = replication.open()
    status = replication_status(setup.catalog, setup.replicas, setup.policy.retention)
    metadata: dict[str, object] = {"blobs": status.blobs,
                                   "under_replicated": status.under_replicated,
                                   "retention": setup.policy.retention}
    metadata.update({f"present_on_{store}": status.present(store)
                     for store in status.copies_per_store})
    return dg.AssetCheckResult(passed=status.meets_policy, metadata=metadata)  # type: ignore[arg-type]
