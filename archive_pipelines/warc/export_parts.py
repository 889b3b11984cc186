"""An export in parallel: the scope cut into runs of ids, each exported by a worker process
into a part file of its own, the parts then appended in order behind the warcinfo record.

A part is a run of whole gzip members, so the parts concatenated are one valid WARC; a
record's offset is its offset in its part plus where the part begins. Which capture writes a
body in full is the catalog's answer (`WarcExport`), so parts written apart agree on the
revisits. Workers start with `spawn` and open their own catalog and store from the settings.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.blobstore import open_store
from archive_pipelines.catalog import CaptureScope, Catalog
from archive_pipelines.settings import Settings
from archive_pipelines.storage.file_workers import die_with_parent, main_module_hidden
from archive_pipelines.warc.exporter import (
    ExportedPage,
    ExportReport,
    ExportRun,
    ExportSinks,
    WarcExport,
    WrittenRecord,
)
from archive_pipelines.warc.record_writer import DEFAULT_GZIP_LEVEL, RecordWriter
from archive_pipelines.warc.warc_info import WarcInfo

PARTS_PER_PROCESS = 8  # more parts than processes: the last one holds the others idle briefly
_COPY = 8 * 1024 * 1024


@dataclass(frozen=True)
class PartTask:
    """One run of ids to export into `out` (and, with `sidecars`, the records and pages it
    wrote, as JSON lines beside it)."""

    settings: Settings
    scope: CaptureScope
    run: ExportRun
    from_id: int
    to_id: int | None
    out: Path
    gzip_level: int
    sidecars: bool


@dataclass
class PartResult:
    report: ExportReport
    out: Path


def _records_path(out: Path) -> Path:
    return out.with_name(out.name + ".records")


def _pages_path(out: Path) -> Path:
    return out.with_name(out.name + ".pages")


def export_part(task: PartTask) -> PartResult:
    """In a worker process: the task's run of ids into its part file."""
    settings = task.settings
    catalog = Catalog.open(settings.catalog_url,
                           busy_timeout_ms=settings.catalog.sqlite_busy_timeout_ms)
    store = open_store(settings.primary_store, settings.data_dir)
    try:
        with ExitStack() as stack:
            handle = stack.enter_context(open(task.out, "wb", buffering=_COPY))
            sinks = ExportSinks()
            if task.sidecars:
                records = stack.enter_context(open(_records_path(task.out), "w", encoding="utf-8"))
                pages = stack.enter_context(open(_pages_path(task.out), "w", encoding="utf-8"))

                def on_record(record: WrittenRecord) -> None:
                    records.write(json.dumps([record.record_type, record.uri, record.fetched_ms,
                                              record.content_type, record.status,
                                              record.payload_digest, record.offset,
                                              record.length]) + "\n")

                def on_page(page: ExportedPage) -> None:
                    pages.write(json.dumps([page.url, page.fetched_ms, page.title]) + "\n")

                sinks = ExportSinks(on_record=on_record, on_page=on_page)
            export = WarcExport(catalog=catalog, store=store, data_dir=settings.data_dir,
                                out=handle, run=task.run, gzip_level=task.gzip_level,
                                sinks=sinks)
            try:
                report = export.export_range(task.scope, from_id=task.from_id, to_id=task.to_id)
            finally:
                export.close()
        return PartResult(report, task.out)
    finally:
        catalog.close()


def export_parallel(path: Path, *, settings: Settings, catalog: Catalog, scope: CaptureScope,
                    info: WarcInfo, processes: int, gzip_level: int = DEFAULT_GZIP_LEVEL,
                    sinks: ExportSinks | None = None) -> ExportReport:
    """Export `scope` into `path` with `processes` worker processes (see the module
    docstring); written under a temporary name and renamed when whole."""
    sinks = sinks or ExportSinks()
    run = ExportRun(self_contained=info.self_contained)
    bounds = catalog.exports.id_bounds(scope, parts=processes * PARTS_PER_PROCESS)
    ranges = list(zip([0, *bounds], [*bounds, None], strict=True))
    work = path.with_name(f".{path.name}.parts")
    shutil.rmtree(work, ignore_errors=True)  # a crashed run's leftovers
    work.mkdir()
    part = path.with_name(f".{path.name}.part")
    report = ExportReport()
    sidecars = sinks.on_record is not None or sinks.on_page is not None
    try:
        with open(part, "wb", buffering=_COPY) as handle:
            _write_warcinfo(handle, run=run, info=info, filename=path.name, level=gzip_level)
            report.records += 1
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=processes, mp_context=context,
                                     initializer=die_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                with main_module_hidden():
                    futures: list[Future[PartResult]] = [pool.submit(export_part, PartTask(
                        settings=settings, scope=scope, run=run, from_id=start, to_id=end,
                        out=work / f"{number:05d}.warc.gz", gzip_level=gzip_level,
                        sidecars=sidecars)) for number, (start, end) in enumerate(ranges)]
                for future in futures:
                    result = future.result()
                    _append(handle, result.out, sinks=sinks)
                    report.add(result.report)
                    report.digest_seconds += result.report.digest_seconds  # a float: not a count
                    if sinks.on_progress is not None:
                        sinks.on_progress(result.report.captures)
            report.warc_bytes = handle.tell()
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return report


def _write_warcinfo(handle: object, *, run: ExportRun, info: WarcInfo, filename: str,
                    level: int) -> None:
    writer = RecordWriter(handle, gzip_level=level)  # type: ignore[arg-type]
    record = writer.builder.create_warcinfo_record(filename, info.fields())
    record.rec_headers.replace_header("WARC-Record-ID", run.warcinfo_id)
    writer.write(record)
    writer.close()


def _append(handle: object, part: Path, *, sinks: ExportSinks) -> None:
    """The part's bytes after what `handle` holds, its records and pages told to the sinks
    at their place in the whole file; the part's files removed."""
    handle.flush()  # type: ignore[attr-defined]
    base = handle.tell()  # type: ignore[attr-defined]
    with open(part, "rb") as source:
        _copy(source.fileno(), handle.fileno(), os.fstat(source.fileno()).st_size)  # type: ignore[attr-defined]
    handle.seek(0, os.SEEK_END)  # type: ignore[attr-defined]  # the buffer's idea of the end
    _replay(_records_path(part), sinks.on_record, lambda row: WrittenRecord(
        row[0], row[1], row[2], row[3], row[4], row[5], row[6] + base, row[7]))
    _replay(_pages_path(part), sinks.on_page, lambda row: ExportedPage(row[0], row[1], row[2]))
    for path in (part, _records_path(part), _pages_path(part)):
        path.unlink(missing_ok=True)


def _copy(source: int, target: int, size: int) -> None:
    """`size` bytes from `source` to the end of `target`, in the kernel (no copy through
    this process where the filesystem allows: `copy_file_range`)."""
    left = size
    try:
        while left > 0:
            copied = os.copy_file_range(source, target, min(left, 1 << 30))
            if copied == 0:
                break
            left -= copied
    except OSError:  # not supported across these files: copy the rest through user space
        pass
    while left > 0:
        data = os.read(source, min(left, _COPY))
        if not data:
            break
        os.write(target, data)
        left -= len(data)
    if left:
        raise OSError(f"part ended {left:,} bytes short of its size")


def _replay(path: Path, sink: Callable[..., None] | None, build: Callable[[list], object]
            ) -> None:
    if sink is None or not path.exists():
        return
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            sink(build(json.loads(line)))
