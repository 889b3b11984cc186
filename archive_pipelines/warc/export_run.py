"""One export as a person asks for it: a `.warc.gz` file, or a `.wacz` package (the WARC, its
CDXJ index, the page list, the datapackage with every file's sha256).

Nothing appears under the output name until it is complete: the WARC is written beside it
under a temporary name and renamed; a WACZ is built in a work folder beside it, which is
removed afterwards (or by the next run, after a crash).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from archive_pipelines import __version__
from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.blobstore import BlobStore
from archive_pipelines.catalog import CaptureScope, Catalog
from archive_pipelines.settings import Settings
from archive_pipelines.storage.file_workers import may_start_processes
from archive_pipelines.warc.cdxj import IndexEntry, cdxj_line, indexed_record, record_mime, sort_cdxj
from archive_pipelines.warc.export_parts import export_parallel
from archive_pipelines.warc.exporter import (
    ExportedPage,
    ExportReport,
    ExportSinks,
    WrittenRecord,
    describe_scope,
    export_file,
)
from archive_pipelines.warc.wacz import PageEntry, WaczSummary, write_wacz
from archive_pipelines.warc.warc_info import WarcInfo, cdx_timestamp


class BadExportTarget(ArchiveError):
    """An output path the export cannot write."""


@dataclass(frozen=True)
class ExportRequest:
    """What to export, and where."""

    out: Path
    scope: CaptureScope
    self_contained: bool = False
    wacz: bool = False
    operator: str = ""
    gzip_level: int = 6
    overwrite: bool = False
    processes: int = 1  # worker processes (a large export, with the settings to open them)
    captures: int | None = None  # the scope's count, when the caller has it (no second count)


@dataclass(frozen=True)
class ExportOutcome:
    path: Path
    report: ExportReport
    wacz: WaczSummary | None = None


def check_target(request: ExportRequest) -> Path:
    """The absolute output path; BadExportTarget for a wrong suffix, a missing folder or an
    existing file (without `overwrite`)."""
    out = request.out.expanduser().absolute()
    suffix = ".wacz" if request.wacz else ".warc.gz"
    if not out.name.endswith(suffix) or out.name == suffix:
        raise BadExportTarget(f"{out}: the output of {'--wacz' if request.wacz else 'a WARC export'} "
                              f"is a file name ending in {suffix}")
    if not out.parent.is_dir():
        raise BadExportTarget(f"{out.parent}: no such folder")
    if out.exists() and not request.overwrite:
        raise BadExportTarget(f"{out} exists (remove it, or pass --overwrite)")
    if out.is_dir():
        raise BadExportTarget(f"{out} is a folder")
    return out


PARALLEL_FROM = 20_000  # captures: below this, starting worker processes costs more than it saves


def run_export(request: ExportRequest, *, catalog: Catalog, store: BlobStore, data_dir: Path,
               settings: Settings | None = None,
               on_progress: Callable[[int], None] | None = None) -> ExportOutcome:
    """Export the request's scope (see the module docstring): in worker processes when the
    request asks for several, `settings` are given (to open the catalog and store in each) and
    the scope is large, else in this process."""
    out = check_target(request)
    info = WarcInfo(operator=request.operator, description=describe_scope(request.scope),
                    self_contained=request.self_contained)
    parallel = settings is not None and request.processes > 1 and may_start_processes() and (
        request.captures if request.captures is not None
        else catalog.exports.count_in_scope(request.scope)) >= PARALLEL_FROM

    def export(path: Path, sinks: ExportSinks) -> ExportReport:
        if parallel:
            assert settings is not None
            return export_parallel(path, settings=settings, catalog=catalog,
                                   scope=request.scope, info=info,
                                   processes=request.processes,
                                   gzip_level=request.gzip_level, sinks=sinks)
        return export_file(path, catalog=catalog, store=store, data_dir=data_dir,
                           scope=request.scope, info=info, gzip_level=request.gzip_level,
                           sinks=sinks)

    if not request.wacz:
        return ExportOutcome(out, export(out, ExportSinks(on_progress=on_progress)))
    work = out.with_name(f".{out.name}.work")
    shutil.rmtree(work, ignore_errors=True)  # a crashed run's leftovers
    work.mkdir()
    try:
        warc_name = out.name.removesuffix(".wacz") + ".warc.gz"
        warc = work / warc_name
        unsorted = work / "index.unsorted"
        pages_file = work / "pages.jsonl"
        with open(unsorted, "w", encoding="utf-8") as index, \
                open(pages_file, "w", encoding="utf-8") as pages:
            sinks = ExportSinks(on_record=_indexer(index, warc_name), on_page=_pager(pages),
                                on_progress=on_progress)
            report = export(warc, sinks)
        index_path = work / "index.cdxj"
        sort_cdxj(unsorted, index_path)
        summary = write_wacz(out, warcs=[warc], index=index_path, pages=_read_pages(pages_file),
                             title=info.description,
                             software=f"archive-pipelines {__version__}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ExportOutcome(out, report, summary)


def _indexer(index: TextIO, filename: str) -> Callable[[WrittenRecord], None]:
    """Each record a CDXJ index lists (those cdxj-indexer lists) as a line of `index`."""
    def write(record: WrittenRecord) -> None:
        if not indexed_record(record.record_type, record.content_type):
            return
        entry = IndexEntry(url=record.uri, timestamp=cdx_timestamp(record.fetched_ms),
                           mime=record_mime(record.record_type, record.content_type),
                           status=record.status, digest=record.payload_digest,
                           length=record.length, offset=record.offset, filename=filename)
        index.write(cdxj_line(entry) + "\n")
    return write


def _pager(pages: TextIO) -> Callable[[ExportedPage], None]:
    def write(page: ExportedPage) -> None:
        pages.write(json.dumps([page.url, page.fetched_ms, page.title]) + "\n")
    return write


def _read_pages(path: Path) -> Iterator[PageEntry]:
    """The pages the export saw, read back one at a time (memory flat in their number)."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            url, fetched_ms, title = json.loads(line)
            yield PageEntry(url=url, ts=cdx_timestamp(fetched_ms), title=title)
