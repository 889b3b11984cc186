"""The `blobs` and `views` assets (partitioned by snapshot day) and their health checks."""

import dagster as dg
import pandas as pd

from archive_pipelines.assets.metadata import code_references, counts, table
from archive_pipelines.assets.partitions import day_window, snapshot_days
from archive_pipelines.assets.snapshots import snapshots
from archive_pipelines.migration.day_migration import store_day_files
from archive_pipelines.resources import StorageResource
from archive_pipelines.run_labels import BLOB_STORE_POOL, OWNERS
from archive_pipelines.sizes import human_bytes
from archive_pipelines.storage.day_stats import Saving
from archive_pipelines.storage.verify import verify_storage
from archive_pipelines.storage.view_rebuild import rebuild_views

TOP_SAVINGS = 10  # rows of the largest_savings table


@dg.asset(partitions_def=snapshot_days, deps=[snapshots], group_name="storage",
          pool=BLOB_STORE_POOL, kinds={"python", "filesystem"}, owners=OWNERS,
          tags={"area": "storage", "blob_store": "writes"},
          metadata=code_references(store_day_files))
def blobs(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    """Every file of the day's snapshots, stored once by SHA-256 in the primary blob store.

    Materializing a day stores the files of the day's snapshots still in legacy folders
    (dedup against everything stored, original paths kept). Metadata: the day's figures
    (`day_`: files, distinct blobs, bytes, bytes saved by dedup among the day's files, and
    `day_largest_savings`, the blobs dedup saves the most on within the day) and what this
    run did (`run_`: files stored from legacy folders, blobs new to the store).
    """
    parts = storage.open()
    start, end = day_window(context.partition_key)
    day = store_day_files(parts.catalog, parts.primary, parts.views,
                          work=parts.work, layout=parts.layout,
                          start=start, end=end, savings_limit=TOP_SAVINGS,
                          ingest_batch_size=parts.settings.storage.ingest_batch_size)
    for line in day.log_lines():
        context.log.info(line)
    for error in day.migrated.errors[:20] + day.migrated.warc_problem_lines[:20]:
        context.log.warning(error)
    stats, run = day.stats, day.migrated
    return dg.MaterializeResult(metadata={
        **day.as_metadata(),
        "summary": dg.MetadataValue.md(
            f"The day: {stats.files:,} files of {stats.snapshots:,} snapshots, "
            f"**{human_bytes(stats.logical_bytes)}** of files stored in "
            f"**{human_bytes(stats.unique_bytes)}** ({stats.dedup_ratio:.2f}x, "
            f"{human_bytes(stats.bytes_saved)} saved by dedup). This run: {run.files:,} "
            f"files stored from legacy folders, {run.new_blobs:,} new blobs."),
        "day_largest_savings": table(_savings_frame(day.savings)),
    })


def _savings_frame(savings: list[Saving]) -> pd.DataFrame:
    """The day's blobs that dedup saves most on within the day, with sizes written out
    (`references`: the day's files holding the blob; `archive_references`: all of them)."""
    columns = ["path", "sha256", "size", "references", "bytes_saved", "archive_references"]
    frame = pd.DataFrame([{"path": s.example_path, "sha256": s.sha256[:12], "size": s.size,
                           "references": s.references, "bytes_saved": s.bytes_saved,
                           "archive_references": s.archive_references}
                          for s in savings], columns=columns)
    frame["saved"] = frame["bytes_saved"].map(human_bytes)
    return frame


@dg.asset(partitions_def=snapshot_days, deps=[blobs], group_name="storage",
          kinds={"python", "filesystem"}, owners=OWNERS,
          tags={"area": "storage", "blob_store": "reads"},
          metadata=code_references(rebuild_views))
def views(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    """Browsable folders of the day's snapshots under archive/ (by_domain, by_date, by_user,
    by_timestamp): relative symlinks into the blob store, generated from the catalog.

    Metadata: the day's snapshots, files and links (`day_`, all of the day's links checked)
    and what this run changed (`run_links_created`, `run_links_fixed`)."""
    start, end = day_window(context.partition_key)
    parts = storage.open()
    report = rebuild_views(parts.catalog, parts.primary, parts.views, work=parts.work,
                           created_between=(start, end))
    for line in report.log_lines():
        context.log.info(line)
    return dg.MaterializeResult(metadata=report.as_day_metadata())


@dg.multi_asset_check(
    specs=[
        # Blocking: views and replica copies of a day whose blob files are missing would
        # link to, or try to copy, nothing.
        dg.AssetCheckSpec("blob_files_present", asset=blobs, blocking=True,
                          description="Every referenced blob of the archive (all days, crawled "
                                      "bodies too) has its file in the primary store. Blocking: "
                                      "a failure stops the views of the same run."),
        dg.AssetCheckSpec("ref_counts_exact", asset=blobs,
                          description="Every blob of the archive has a ref_count equal to its "
                                      "counted references (an error: gc trusts them; "
                                      "`verify --fix` repairs them)."),
        dg.AssetCheckSpec("view_links_healthy", asset=views,
                          description="No missing, wrong, broken or orphan links in the "
                                      "archive's views, all days (a warning: views are rebuilt "
                                      "from the catalog at will)."),
    ],
    can_subset=True,
)
def storage_health(context: dg.AssetCheckExecutionContext,  # type: ignore[no-untyped-def]
                   storage: StorageResource):
    """One verify pass (no repair) feeding the storage-health checks that were selected, so
    each check (and a run of `blobs` or `views` alone) can run on its own.

    The checks look at the whole archive, whichever day's run they follow: their figures
    are archive-wide (`archive_`), counted when the check ran (a check after the first
    day's run counts the blobs stored by then)."""
    selected = context.selected_asset_check_keys
    parts = storage.open()
    report = verify_storage(parts.catalog, parts.primary, parts.views, scan_store=False)
    found = report.found
    # The counts `status`, `verify`, `gc` and `replication-status` show, by the same names.
    blob_rows = parts.catalog.blobs.counts(primary=parts.settings.storage.primary,
                            grace_hours=parts.settings.storage.gc_grace_hours).as_dict()
    link_kinds = ("missing_links", "wrong_links", "broken_links", "orphan_links", "conflict_links")
    results = [
        dg.AssetCheckResult(
            check_name="blob_files_present", asset_key=blobs.key,
            passed=found["missing_blob_files"] == 0, severity=dg.AssetCheckSeverity.ERROR,
            metadata=_archive_wide({"missing_blob_files": found["missing_blob_files"],
                                    "referenced_blobs_checked": report.blobs_checked})),
        dg.AssetCheckResult(
            check_name="ref_counts_exact", asset_key=blobs.key,
            passed=found["refcount_drift"] == 0, severity=dg.AssetCheckSeverity.ERROR,
            metadata=_archive_wide({"refcount_drift": found["refcount_drift"], **blob_rows})),
        dg.AssetCheckResult(
            check_name="view_links_healthy", asset_key=views.key,
            passed=sum(found[k] for k in link_kinds) == 0, severity=dg.AssetCheckSeverity.WARN,
            metadata=_archive_wide({k: found[k] for k in link_kinds}
                                   | {"links_checked": report.links_checked})),
    ]
    for result in results:
        assert result.asset_key is not None and result.check_name is not None  # set above
        if dg.AssetCheckKey(result.asset_key, result.check_name) in selected:
            yield result


def _archive_wide(values: dict[str, int]) -> dict[str, dg.IntMetadataValue]:
    return counts({f"archive_{name}": value for name, value in values.items()})
