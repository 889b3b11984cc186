"""Lazy migration: sensors that adopt and migrate ArchiveBox folders a little at a time.

Both are off by default: they move and adopt an operator's folders, which an operator turns
on (Dagit, Automation) once the collection's data dir is the one configured."""

import dagster as dg

from archive_pipelines.migration import next_migration_batches, orphan_folders_changed
from archive_pipelines.ops.migration_jobs import import_orphans_job, migrate_fs_job
from archive_pipelines.resources import StorageResource
from archive_pipelines.run_keys import batch_run_key
from archive_pipelines.run_labels import launched_by


@dg.sensor(job=migrate_fs_job, minimum_interval_seconds=30,
           default_status=dg.DefaultSensorStatus.STOPPED,
           description="Off by default. Finds snapshots still in ArchiveBox's folder layout and "
                       "launches migrate_fs_job runs that store their files in the blob store "
                       "(migration.max_runs_per_tick runs per tick).")
def lazy_migration_sensor(context: dg.SensorEvaluationContext,
                          storage: StorageResource) -> dg.SensorResult:
    parts = storage.open()
    policy = parts.settings.migration
    batches, cursor = next_migration_batches(parts.catalog, cursor=context.cursor or "",
                                             batch_size=policy.batch_size,
                                             max_batches=policy.max_runs_per_tick)
    runs = [dg.RunRequest(
        run_key=batch_run_key("migrate", batch),
        run_config={"ops": {"migrate_fs_op": {"config": {"snapshot_ids": batch}}}},
        tags=launched_by("sensor", "lazy_migration_sensor"))
        for batch in batches]
    skip = None if runs else "no snapshot left in ArchiveBox's folder layout"
    context.log.info(skip or f"launching {len(runs)} migrate_fs_job run(s) for "
                             f"{sum(len(batch) for batch in batches):,} snapshots")
    return dg.SensorResult(run_requests=runs, cursor=cursor, skip_reason=skip)


@dg.sensor(job=import_orphans_job, minimum_interval_seconds=60,
           default_status=dg.DefaultSensorStatus.STOPPED,
           description="Off by default. Notices new folders under archive/ (from its mtime, no "
                       "scan) and launches import_orphans_job to adopt them.")
def orphan_import_sensor(context: dg.SensorEvaluationContext,
                         storage: StorageResource) -> dg.SensorResult:
    parts = storage.open()
    changed, mtime_ns = orphan_folders_changed(parts.layout.archive, int(context.cursor or 0))
    runs = [dg.RunRequest(run_key=f"import-{mtime_ns}",
                          tags=launched_by("sensor", "orphan_import_sensor"))] if changed else []
    skip = None if runs else "archive/ unchanged since the last import (its mtime)"
    context.log.info(skip or "archive/ changed since the last import: launching import_orphans_job")
    return dg.SensorResult(run_requests=runs, cursor=str(mtime_ns), skip_reason=skip)
