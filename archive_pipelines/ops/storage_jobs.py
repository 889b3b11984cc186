"""Imperative storage jobs: verify/repair, rebuild views, migrate legacy folders, gc.

Every job runs with no config (defaults) from `dagster job execute -m
archive_pipelines.definitions -j <job>`, or with a config file.
"""

import dagster as dg
from pydantic import Field

from archive_pipelines.migration.collection import adopt_collection, estimate_dedup
from archive_pipelines.resources import StorageResource
from archive_pipelines.run_labels import BLOB_STORE_POOL
from archive_pipelines.storage.gc import collect_garbage
from archive_pipelines.storage.verify import verify_storage
from archive_pipelines.storage.view_rebuild import rebuild_views


class VerifyConfig(dg.Config):
    fix: bool = Field(default=False, description="Repair links and ref counts.")
    vacuum: bool = Field(default=False, description="Remove orphan links and empty folders.")
    deep: bool = Field(default=False, description="Rehash every referenced blob (slow).")
    views: list[str] = Field(default_factory=list, description="Views to check; [] = enabled.")


@dg.op(description="Check blob files, view links and ref counts against the catalog.")
def verify_storage_op(context: dg.OpExecutionContext, config: VerifyConfig,
                      storage: StorageResource) -> dg.Output[int]:
    parts = storage.open(config.views or None)
    report = verify_storage(parts.catalog, parts.primary, parts.views, fix=config.fix,
                            vacuum=config.vacuum, deep=config.deep, data_dir=parts.layout.root)
    summary, *details = report.log_lines()
    context.log.info(summary)  # "healthy", or how many problems of each kind
    for line in details:  # examples of each problem at WARNING, what was fixed at INFO
        (context.log.warning if line.startswith("  ") else context.log.info)(line)
    return dg.Output(report.problems, metadata=report.as_metadata())


@dg.job(description="Verify storage health; with fix/vacuum, repair it. Scheduled.")
def verify_storage_job() -> None:
    verify_storage_op()


class RebuildViewsConfig(dg.Config):
    views: list[str] = Field(default_factory=list, description="Views to rebuild; [] = enabled.")
    clean: bool = Field(default=False, description="Remove the views' links first.")


@dg.op(description="Rebuild view links from the catalog.")
def rebuild_views_op(context: dg.OpExecutionContext, config: RebuildViewsConfig,
                     storage: StorageResource) -> dg.Output[int]:
    parts = storage.open(config.views or None)
    report = rebuild_views(parts.catalog, parts.primary, parts.views, work=parts.work,
                           clean=config.clean)
    for line in report.log_lines():
        context.log.info(line)
    return dg.Output(report.links, metadata=report.as_metadata())


@dg.job(description="Rebuild the symlink views from the catalog (optionally clean first).")
def rebuild_views_job() -> None:
    rebuild_views_op()


class MigrateToCasConfig(dg.Config):
    dry_run: bool = Field(default=False, description="Report dedup savings; write nothing.")
    views: list[str] = Field(default_factory=list, description="Views to create; [] = enabled.")
    cleanup_legacy: bool = Field(default=False,
                                 description="Move verified folders to migrated/ and link "
                                             "archive/<timestamp> into by_timestamp/.")
    batch_size: int = Field(default=500, ge=1, description="Snapshots per batch.")
    resume_from: str = Field(default="", description="First legacy timestamp folder to take.")


@dg.op(description="Adopt legacy archive/<timestamp>/ folders and store their files in the "
                   "blob store at their original paths.", pool=BLOB_STORE_POOL)
def migrate_to_cas_op(context: dg.OpExecutionContext, config: MigrateToCasConfig,
                      storage: StorageResource) -> dg.Output[int]:
    parts = storage.open(config.views or None)
    if config.dry_run:
        estimate = estimate_dedup(parts.catalog, parts.layout, resume_from=config.resume_from)
        for line in estimate.log_lines():
            context.log.info(line)
        return dg.Output(estimate.files, metadata=estimate.as_metadata())
    report = adopt_collection(parts.catalog, parts.primary, parts.views,
                              work=parts.work, layout=parts.layout,
                              resume_from=config.resume_from, batch_size=config.batch_size,
                              default_user=parts.settings.views.default_user,
                              retire=config.cleanup_legacy,
                              ingest_batch_size=parts.settings.storage.ingest_batch_size)
    for line in report.log_lines():
        context.log.info(line)
    errors = report.errors
    for error in errors[:20] + report.migrated.warc_problem_lines[:20]:
        context.log.warning(error)
    if errors:
        raise dg.Failure(description=f"{len(errors)} folder(s) could not be adopted or stored",
                         metadata={"first_errors": "\n".join(errors[:20])})
    return dg.Output(report.migrated.files, metadata=report.as_metadata())


@dg.job(description="Migrate legacy folders into the content-addressed store (dedup report).")
def migrate_to_cas_job() -> None:
    migrate_to_cas_op()


class GcConfig(dg.Config):
    grace_hours: float = Field(default=-1.0, description="< 0 = storage.gc_grace_hours.")
    dry_run: bool = Field(default=False)


@dg.op(description="Remove blobs unreferenced for longer than the grace period (primary only). "
                   "Waits for the blob_store pool: never runs while a run writes blobs.",
       pool=BLOB_STORE_POOL)
def gc_op(context: dg.OpExecutionContext, config: GcConfig,
          storage: StorageResource) -> dg.Output[int]:
    parts = storage.open()
    grace = (parts.settings.storage.gc_grace_hours if config.grace_hours < 0
             else config.grace_hours)
    report = collect_garbage(parts.catalog, parts.primary, parts.views.farm,
                             layout=parts.layout, grace_hours=grace, dry_run=config.dry_run)
    for line in report.log_lines():
        context.log.info(line)
    for error in report.errors[:20]:
        context.log.warning(error)
    return dg.Output(report.removed, metadata=report.as_metadata())


@dg.job(description="Garbage-collect unreferenced blobs from the primary store.")
def gc_job() -> None:
    gc_op()
