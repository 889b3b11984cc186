"""Adoption jobs: import orphan folders, migrate filesystems, merge duplicates."""

import dagster as dg
from pydantic import Field

from archive_pipelines.migration import import_orphans, merge_duplicates, migrate_batch
from archive_pipelines.resources import StorageResource
from archive_pipelines.run_labels import BLOB_STORE_POOL


class ImportOrphansConfig(dg.Config):
    resume_from: str = Field(default="", description="First archive/<timestamp> to take.")
    batch_size: int = Field(default=200, ge=1, description="Folders per transaction.")


@dg.op(description="One streaming pass over archive/: adopt, reconcile, move the unadoptable "
                   "to invalid/ (never deleted).", pool=BLOB_STORE_POOL)
def import_orphans_op(context: dg.OpExecutionContext, config: ImportOrphansConfig,
                      storage: StorageResource) -> dg.Output[int]:
    parts = storage.open()
    report = import_orphans(parts.catalog, parts.layout, resume_from=config.resume_from,
                            batch_size=config.batch_size,
                            default_user=parts.settings.views.default_user)
    for line in report.log_lines():
        context.log.info(line)
    for line in report.errors[:20]:
        context.log.warning(line)
    return dg.Output(report.imported, metadata=report.as_metadata())


@dg.job(description="Adopt legacy folders under archive/ into the catalog (no up-front scan "
                    "at init; this is the streaming pass).")
def import_orphans_job() -> None:
    import_orphans_op()


class MigrateFsConfig(dg.Config):
    snapshot_ids: list[str] = Field(default_factory=list,
                                    description="The batch (from lazy_migration_sensor).")


@dg.op(description="Store each snapshot's legacy folder in the blob store, original paths kept.",
       pool=BLOB_STORE_POOL)
def migrate_fs_op(context: dg.OpExecutionContext, config: MigrateFsConfig,
                  storage: StorageResource) -> dg.Output[int]:
    parts = storage.open()
    report = migrate_batch(parts.catalog, parts.primary, parts.views, work=parts.work,
                           layout=parts.layout, snapshot_ids=config.snapshot_ids,
                           ingest_batch_size=parts.settings.storage.ingest_batch_size)
    for line in report.log_lines():
        context.log.info(line)
    for line in report.errors[:20] + report.warc_problem_lines[:20]:
        context.log.warning(line)
    return dg.Output(report.migrated, metadata=report.as_metadata())


@dg.job(description="Migrate one batch of snapshots to the current filesystem layout.")
def migrate_fs_job() -> None:
    migrate_fs_op()


class MergeDuplicatesConfig(dg.Config):
    batch_size: int = Field(default=100, ge=1)


@dg.op(description="Merge exact duplicates (same url+timestamp or url+crawl_id) into the oldest.",
       pool=BLOB_STORE_POOL)
def merge_duplicates_op(context: dg.OpExecutionContext, config: MergeDuplicatesConfig,
                        storage: StorageResource) -> dg.Output[int]:
    parts = storage.open()
    report = merge_duplicates(parts.catalog, parts.primary, parts.views, work=parts.work,
                              layout=parts.layout, batch_size=config.batch_size,
                              ingest_batch_size=parts.settings.storage.ingest_batch_size)
    for line in report.log_lines():
        context.log.info(line)
    for line in report.errors[:20]:
        context.log.warning(line)
    return dg.Output(report.merged, metadata=report.as_metadata())


@dg.job(description="Merge exact duplicate snapshots, streaming.")
def merge_duplicates_job() -> None:
    merge_duplicates_op()
