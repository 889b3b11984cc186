"""`export_warc_job`: captures out as a WARC or WACZ file under the data dir's exports folder.

An op job beside the assets it reads (it shares their `crawl_days` partitions): an export is
a file made on request, with a scope of the caller's choosing, not an asset of its own.

Partitioned like `captures` (by crawl day): a partition exports that day's captures (UTC);
without one, the config's scope (every capture by default). The same choices as the
`export-warc` command.
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
from pydantic import Field

from archive_pipelines.assets.partitions import crawl_days
from archive_pipelines.resources import StorageResource
from archive_pipelines.warc.export_run import ExportRequest, run_export
from archive_pipelines.warc.export_scope import export_scope


class ExportConfig(dg.Config):
    sessions: list[str] = Field(default_factory=list,
                                description="Only these crawl sessions (ids or their start).")
    url_prefix: str = Field(default="", description="Only URLs under this one (a site or a path).")
    from_time: str = Field(default="", description="Captures not before (as --from).")
    to_time: str = Field(default="", description="Captures not after (as --to).")
    self_contained: bool = Field(default=False, description="Every body in full, no revisits.")
    wacz: bool = Field(default=False, description="A WACZ package instead of a .warc.gz.")
    name: str = Field(default="", description="File name inside export.directory (default: "
                                              "the partition or `archive`, and the time).")


def _day_window(day: str) -> tuple[str, str]:
    start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    end = start + timedelta(days=1) - timedelta(milliseconds=1)
    return f"{start.timestamp():.3f}", f"{end.timestamp():.3f}"


@dg.op(description="Write the captures of the partition's day (or of the config's scope) to "
                   "a WARC 1.1 file or a WACZ package in the exports folder. Fails, after "
                   "writing the rest, when a capture's body is missing from the store.")
def export_warc_op(context: dg.OpExecutionContext, config: ExportConfig,
                   storage: StorageResource) -> dg.Output[str]:
    parts = storage.open()
    settings = parts.settings
    from_time, to_time = config.from_time or None, config.to_time or None
    label = "archive"
    if context.has_partition_key:
        label = context.partition_key
        from_time, to_time = _day_window(context.partition_key)
    scope = export_scope(parts.catalog, sessions=config.sessions,
                         url_prefix=config.url_prefix or None, from_time=from_time,
                         to_time=to_time)
    folder = settings.local_path(settings.export.directory)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".wacz" if config.wacz else ".warc.gz"
    name = config.name or f"{label}-{datetime.now(UTC):%Y%m%d%H%M%S}{suffix}"
    if Path(name).name != name:
        raise dg.Failure(description=f"name {name!r} must be a file name, not a path")
    total = parts.catalog.exports.count_in_scope(scope)
    context.log.info(f"exporting {total:,} captures to {folder / name}")
    done = 0

    def progress(count: int) -> None:
        nonlocal done
        done += count
        if done % 50_000 == 0:
            context.log.info(f"{done:,} of {total:,} captures exported")

    outcome = run_export(ExportRequest(out=folder / name, scope=scope,
                                       self_contained=config.self_contained, wacz=config.wacz,
                                       operator=settings.export.operator,
                                       gzip_level=settings.export.gzip_level,
                                       processes=settings.export.worker_processes,
                                       captures=total),
                         settings=settings,
                         catalog=parts.catalog, store=parts.primary.store,
                         data_dir=settings.data_dir, on_progress=progress)
    report = outcome.report
    metadata: dict[str, object] = {**report.counts(), "path": str(outcome.path),
                                   "bytes": outcome.path.stat().st_size,
                                   "digest_seconds": round(report.digest_seconds, 3)}
    context.log.info(f"{report.captures:,} captures -> {report.records:,} records "
                     f"({report.responses:,} responses, {report.revisits:,} revisits) in "
                     f"{outcome.path}")
    if report.problems:
        for line in report.problems[:20]:
            context.log.warning(line)
        raise dg.Failure(description=f"{report.skipped:,} capture(s) not exported: their "
                                     "bodies are missing from the store (the rest is written)",
                         metadata=metadata)  # type: ignore[arg-type]
    return dg.Output(str(outcome.path), metadata=metadata)  # type: ignore[arg-type]


@dg.job(partitions_def=crawl_days, tags={"area": "export"},
        description="Export captures as WARC 1.1 or WACZ into the data dir's exports folder "
                    "(a partition: that crawl day).")
def export_warc_job() -> None:
    export_warc_op()
