"""The one Definitions object of the code location (assembled here, no logic).

On by default (they start no surprise work): `days_sensor` (adds partitions, launches
nothing), `captures_sensor` (records what a crawl just wrote in the catalog: additive),
`archival_director_sensor` (copies blobs up to the configured retention; nothing with one
store), `verify_storage_schedule` (reads the catalog and the primary store, changes
nothing), `run_failure_sensor` (appends each failed run to logs/run-failures.jsonl),
`crawls_sensor` (records crawl requests in the `crawls` asset) and each
`crawl_<name>_schedule` (a `[[crawls]]` definition's cadence: the operator wrote it). Off
until an operator turns them on: `lazy_migration_sensor` and `orphan_import_sensor` (they
move and adopt ArchiveBox folders), `warc_inbox_sensor` (imports the WARC/WACZ files put in
the inbox folder) and `scrub_schedule` (reads every object of every store: S3 GETs cost
money).
"""

import dagster as dg

from archive_pipelines.assets.capture_qa import capture_qa
from archive_pipelines.assets.captures import captures, captures_complete, captures_job
from archive_pipelines.assets.crawl import crawl_segments
from archive_pipelines.assets.crawl_job import crawl_job
from archive_pipelines.assets.crawl_requests import crawl_taken, crawls
from archive_pipelines.assets.replication import (
    replica_copies,
    replica_copies_job,
    replication_policy_met,
)
from archive_pipelines.assets.snapshots import snapshots
from archive_pipelines.assets.storage import blobs, storage_health, views
from archive_pipelines.assets.warc_export import export_warc_job
from archive_pipelines.assets.warc_import import import_warc_job
from archive_pipelines.executors import archive_executor
from archive_pipelines.ops.init_job import init_job
from archive_pipelines.ops.migration_jobs import (
    import_orphans_job,
    merge_duplicates_job,
    migrate_fs_job,
)
from archive_pipelines.ops.replication_jobs import (
    archive_batch_job,
    archive_director_job,
    scrub_job,
)
from archive_pipelines.ops.storage_jobs import (
    gc_job,
    migrate_to_cas_job,
    rebuild_views_job,
    verify_storage_job,
)
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.resources.replication import ReplicationResource
from archive_pipelines.sensors.captures import captures_sensor
from archive_pipelines.sensors.crawl_schedules import configured_crawl_schedules
from archive_pipelines.sensors.crawls import crawls_sensor
from archive_pipelines.sensors.days import days_sensor
from archive_pipelines.sensors.director import archival_director_sensor
from archive_pipelines.sensors.migration import lazy_migration_sensor, orphan_import_sensor
from archive_pipelines.sensors.run_failures import run_failure_sensor
from archive_pipelines.sensors.schedules import scrub_schedule, verify_storage_schedule
from archive_pipelines.sensors.warc_inbox import warc_inbox_sensor

_settings = SettingsResource()
_catalog = CatalogResource(settings=_settings)
_storage = StorageResource(catalog=_catalog)

defs = dg.Definitions(
    # Code references: each asset's own function (added here) and its domain functions.
    assets=dg.with_source_code_references(
        [snapshots, blobs, views, replica_copies, crawl_segments, captures, crawls]),
    asset_checks=[storage_health, replication_policy_met, captures_complete, capture_qa,
                  crawl_taken],
    jobs=[init_job, verify_storage_job, rebuild_views_job, migrate_to_cas_job, gc_job,
          archive_batch_job, archive_director_job, scrub_job, import_orphans_job,
          migrate_fs_job, merge_duplicates_job, captures_job, export_warc_job, import_warc_job,
          crawl_job, replica_copies_job],
    # One schedule per [[crawls]] definition with a cadence: read from archive.toml when the
    # code location loads (reload it in Dagit after editing the definitions).
    schedules=[verify_storage_schedule, scrub_schedule, *configured_crawl_schedules()],
    sensors=[days_sensor, archival_director_sensor, lazy_migration_sensor, orphan_import_sensor,
             captures_sensor, run_failure_sensor, warc_inbox_sensor, crawls_sensor],
    # Dagster's multiprocess executor, or the dagster-celery workers where the deployment's
    # dagster/executor.yaml says so (read when each run starts: the cluster profile).
    executor=archive_executor,
    resources={
        "settings": _settings,
        "catalog": _catalog,
        "storage": _storage,
        "replication": ReplicationResource(catalog=_catalog),
    },
)
