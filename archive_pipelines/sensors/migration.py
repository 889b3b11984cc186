"""Lazy migration (seed 001): sensors that adopt and migrate a little at a time."""

import dagster as dg

from archive_pipelines.migration import next_migration_batches, orphan_folders_changed
from archive_pipelines.ops.migration_jobs import import_orphans_job, migrate_fs_job
from archive_pipelines.resources import StorageResource
from archive_pipelines.sensors.run_keys import batch_run_key


@dg.sensor(job=migrate_fs_job, minimum_interval_seconds=30,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Finds snapshots whose fs_version is behind (indexed query + cursor) "
                       "and launches migrate_fs_job runs, migration.max_runs_per_tick per tick.")
def lazy_migration_sensor(context: dg.SensorEvaluationContext,
                          storage: StorageResource) -> dg.SensorResult:
    store = storage.open()
    policy = store.settings.migration
    batches, cursor = next_migration_batches(store.catalog, cursor=context.cursor or "",
                                             batch_size=policy.batch_size,
                                             max_batches=policy.max_runs_per_tick)
    runs = [dg.RunRequest(
        run_key=batch_run_key("migrate", batch),
        run_config={"ops": {"migrate_fs_op": {"config": {"snapshot_ids": batch}}}})
        for batch in batches]
    return dg.SensorResult(run_requests=runs, cursor=cursor)


@dg.sensor(job=import_orphans_job, minimum_interval_seconds=60,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Notices new folders under archive/ (its mtime; no scan) and launches "
                       "import_orphans_job.")
def orphan_import_sensor(context: dg.SensorEvaluationContext,
                         storage: StorageResource) -> dg.SensorResult:
    store = storage.open()
    changed, mtime_ns = orphan_folders_changed(store.layout.archive, int(context.cursor or 0))
    runs = [dg.RunRequest(run_key=f"import-{mtime_ns}")] if changed else []
    return dg.SensorResult(run_requests=runs, cursor=str(mtime_ns))
