"""`snapshots`: the catalog's snapshots of a day, adopted and migrated to the current layout."""

import dagster as dg

from archive_pipelines.assets.metadata import counts
from archive_pipelines.assets.partitions import day_window, snapshot_days
from archive_pipelines.migration import migrate_batch
from archive_pipelines.resources import StorageResource
from archive_pipelines.storage.day_stats import snapshots_of_day
from archive_pipelines.storage.snapshot_ingest import find_incomplete, resume_command


@dg.asset(partitions_def=snapshot_days, group_name="storage")
def snapshots(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    """Snapshots created on the day, every one at the current filesystem version.

    Materializing a day stores the legacy folders of the day's snapshots that are still
    behind in the blob store (every file at its original path); the lazy-migration sensor does the same in
    small batches without being asked.

    `incomplete` counts the day's snapshots that an `ingest` is filling or that an
    interrupted one left partial; `incomplete_snapshots` lists them with the command that
    finishes each.
    """
    parts = storage.open()
    start, end = day_window(context.partition_key)
    ids = snapshots_of_day(parts.catalog, start, end)
    report = migrate_batch(parts.catalog, parts.primary, parts.views, work=parts.work, layout=parts.layout,
                           snapshot_ids=ids, ingest_batch_size=parts.settings.storage.ingest_batch_size
                           ) if ids else None
    for line in (report.errors[:20] if report else []):
        context.log.warning(line)
    incomplete = find_incomplete(parts.catalog, created_between=(start, end))
    if incomplete.count:
        context.log.warning(f"{incomplete.count} snapshot(s) of the day are incomplete "
                            "(an ingest running or interrupted): see `incomplete_snapshots`")
    listed = "\n".join(f"- {state.snapshot_id} ({state.url} @ {state.timestamp}): "
                       f"`{resume_command(state.snapshot_id)}`" for state in incomplete.oldest)
    return dg.MaterializeResult(metadata={
        **counts({"snapshots": len(ids), "processed": report.processed if report else 0,
                  "migrated": report.migrated if report else 0,
                  "failed": report.failed if report else 0, "incomplete": incomplete.count}),
        "incomplete_snapshots": dg.MetadataValue.md(listed or "none")})
