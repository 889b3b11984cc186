"""`import_warc_job`: WARC and WACZ files into the deduplicated store, as `import-warc` does.

An op job beside `export_warc_job`: an import is work done on request (from the launchpad,
or by `warc_inbox_sensor` for a file dropped in the inbox), on files of the caller's choosing.
Its step holds the blob_store pool: it writes blobs and their references, so gc waits.
"""

from pathlib import Path

import dagster as dg
from pydantic import Field

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.assets.metadata import counts, problem_list
from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.resources import StorageResource
from archive_pipelines.run_labels import BLOB_STORE_POOL
from archive_pipelines.sizes import human_bytes
from archive_pipelines.warc.import_run import import_sources, run_import
from archive_pipelines.warc.importer import ImportReport, ImportTarget

RECORDS_PER_LOG = 10_000  # a progress line every this many records read
MAX_LISTED = 50  # problems listed in the run log; the rest are counted


class ImportConfig(dg.Config):
    paths: list[str] = Field(description="WARC (.warc, .warc.gz) and WACZ files, and folders "
                                         "searched for them; relative paths are inside the "
                                         "data dir.")


@dg.op(description="Import WARC and WACZ files: each stored as it is, each body stored once "
                   "and deduplicated, each response a capture that `captures URL` finds. A "
                   "file imported before is skipped. Fails, after importing the rest, when a "
                   "record is refused, a stretch of a file is unreadable or a revisit does "
                   "not resolve.",
       pool=BLOB_STORE_POOL)
def import_warc_op(context: dg.OpExecutionContext, config: ImportConfig,
                   storage: StorageResource) -> dg.Output[list[str]]:
    if not config.paths:
        raise dg.Failure(description="no paths given: name the files or folders to import")
    parts = storage.open()
    settings = parts.settings
    try:
        files = import_sources(settings.local_path(path) for path in config.paths)
    except ArchiveError as exc:  # a path not there, or a folder without any WARC/WACZ file
        raise dg.Failure(description=f"nothing imported: {exc}") from None
    total_bytes = sum(path.stat().st_size for path in files)
    context.log.info(f"importing {len(files):,} file(s), {human_bytes(total_bytes)}")
    target = ImportTarget(parts.catalog, CapturePrimary(
        parts.primary.store, parts.primary.store_id, parts.views.farm, parts.views.crawl),
        settings.data_dir, settings=settings)
    progress = _Progress(context, files=len(files))
    report = run_import(files, target=target, on_record=progress.record, on_file=progress.file)
    metadata = {**counts(report.counts()),
                "problems": problem_list(report.problems, MAX_LISTED)}
    context.log.info(_summary(report))
    if report.failed:
        for line in report.problems[:MAX_LISTED]:
            context.log.warning(line)
        raise dg.Failure(description=f"{report.refused:,} record(s) refused, "
                                     f"{report.broken_spans:,} unreadable stretch(es), "
                                     f"{report.unresolved_revisits:,} unresolved revisit(s); "
                                     "the rest is imported (see the problems)",
                         metadata=metadata)
    return dg.Output([str(path) for path in files], metadata=metadata)


class _Progress:
    """Log lines while an import runs: each file as it starts, and the records read so far."""

    def __init__(self, context: dg.OpExecutionContext, *, files: int) -> None:
        self._log = context.log
        self._files = files
        self._file = 0
        self._records = 0

    def file(self, path: Path) -> None:
        self._file += 1
        self._log.info(f"file {self._file:,} of {self._files:,}: {path} "
                       f"({human_bytes(path.stat().st_size)}); {self._records:,} records read so far")

    def record(self, count: int) -> None:
        before = self._records
        self._records += count
        if self._records // RECORDS_PER_LOG > before // RECORDS_PER_LOG:
            self._log.info(f"{self._records:,} records read (file {self._file:,} of {self._files:,})")


def _summary(report: ImportReport) -> str:
    before = f" ({report.files_done_before:,} imported before)" if report.files_done_before else ""
    return (f"{report.files:,} file(s){before}, {report.records:,} records read: "
            f"{report.captures:,} captures ({report.pages:,} pages, {report.revisits:,} revisits, "
            f"{report.unresolved_revisits:,} unresolved), {report.new_bodies:,} new bodies "
            f"({human_bytes(report.new_body_bytes)})")


@dg.job(tags={"area": "import"},
        description="Import WARC and WACZ files (or every one under a folder) into the "
                    "deduplicated store, as `archive-pipelines import-warc` does.")
def import_warc_job() -> None:
    import_warc_op()
