"""`snapshots`: the catalog's snapshots of a day, adopted and migrated to the current layout."""

import dagster as dg

from archive_pipelines.assets.metadata import code_references
from archive_pipelines.assets.partitions import day_window, snapshot_days
from archive_pipelines.migration.day_migration import migrate_day
from archive_pipelines.resources import StorageResource
from archive_pipelines.run_labels import BLOB_STORE_POOL, OWNERS
from archive_pipelines.storage.snapshot_ingest import resume_command


@dg.asset(partitions_def=snapshot_days, group_name="storage", pool=BLOB_STORE_POOL,
          kinds={"python", "filesystem"}, owners=OWNERS,
          tags={"area": "storage", "blob_store": "writes"},
          metadata=code_references(migrate_day))
def snapshots(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    """Snapshots created on the day, every one at the current filesystem version.

    Materializing a day stores the legacy folders of the day's snapshots that are still
    behind in the blob store (every file at its original path); the lazy-migration sensor does the same in
    small batches without being asked.

    Metadata: the day's figures (`day_snapshots`; `day_incomplete_snapshots`, those an
    `ingest` is filling or an interrupted one left partial, listed in `incomplete_snapshots`
    with the command that finishes each) and what this run did (`run_snapshots_migrated` ...).
    """
    parts = storage.open()
    start, end = day_window(context.partition_key)
    day = migrate_day(parts.catalog, parts.primary, parts.views,
                      work=parts.work, layout=parts.layout,
                      start=start, end=end,
                      ingest_batch_size=parts.settings.storage.ingest_batch_size)
    for line in day.log_lines():
        context.log.info(line)
    for line in day.migrated.errors[:20] + day.migrated.warc_problem_lines[:20]:
        context.log.warning(line)
    incomplete = day.incomplete
    if incomplete.count:
        context.log.warning(f"{incomplete.count} snapshot(s) of the day are incomplete "
                            "(an ingest running or interrupted): see `incomplete_snapshots`")
    listed = "\n".join(f"- {state.snapshot_id} ({state.url} @ {state.timestamp}): "
                       f"`{resume_command(state.snapshot_id)}`" for state in incomplete.oldest)
    return dg.MaterializeResult(metadata={
        **day.as_metadata(),
        "incomplete_snapshots": dg.MetadataValue.md(listed or "none")})
