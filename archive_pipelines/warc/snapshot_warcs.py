"""The WARCs inside snapshots (ArchiveBox's wget writes `warc/<unix seconds>.warc.gz` into each
snapshot folder) indexed into captures linked to their snapshot, so `captures URL` finds what
an adopted collection fetched.

An adopted snapshot's files are blobs already, stored with their original bytes; so are its
WARCs. They are read where the store keeps them, never copied, moved or rewritten: each one's
records become captures (bodies deduplicated against the whole store) through the importer,
whose ledger makes a second run skip a file indexed before. The session of a file names it as
`archive/<timestamp>/warc/<name>` and links the snapshot. A file that is no WARC, or whose
records cannot all be read, is reported (file and offset) in the import report; what could be
read is indexed, and nothing raises: a snapshot's own WARC never stops its adoption.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from archive_pipelines.catalog import Catalog, SnapshotWarc
from archive_pipelines.warc.importer import ImportReport, ImportTarget, import_stored_warc

SUFFIXES = (".warc", ".warc.gz")
_PAGE = 1000


@dataclass
class SnapshotWarcs:
    """The snapshot WARC files found, those whose records were read now (the others were
    indexed before), and those with a problem (their sources: the lines are in the report)."""

    found: int = 0
    indexed: int = 0
    with_problems: list[str] = field(default_factory=list)


def is_snapshot_warc(relative_path: str) -> bool:
    """Whether a snapshot's file is one of its WARCs: `warc/<name>.warc` or `.warc.gz`."""
    name = relative_path.removeprefix("warc/")
    return name != relative_path and "/" not in name and name.endswith(SUFFIXES)


def snapshot_warc_source(warc: SnapshotWarc) -> str:
    """How reports and the capture's session name the file: its path as the collection had it."""
    return f"archive/{warc.timestamp}/{warc.relative_path}"


def _snapshot_warcs(catalog: Catalog, snapshot_ids: Sequence[str] | None) -> Iterator[SnapshotWarc]:
    if snapshot_ids is not None:
        found = catalog.imports.snapshot_warcs(snapshot_ids) if snapshot_ids else []
        yield from (w for w in found if is_snapshot_warc(w.relative_path))
        return
    after = 0
    while page := catalog.imports.snapshot_warc_page(after=after, limit=_PAGE):
        yield from (w for w in page if is_snapshot_warc(w.relative_path))
        after = page[-1].file_id


def _problems(report: ImportReport) -> int:
    return report.refused + report.broken_spans + report.unresolved_revisits


def index_snapshot_warcs(target: ImportTarget, *, snapshot_ids: Sequence[str] | None = None,
                         report: ImportReport, on_file: Callable[[str], None] | None = None,
                         on_record: Callable[[int], None] | None = None) -> SnapshotWarcs:
    """Index the WARCs of these snapshots (of every snapshot when None) into captures; the
    record-level counts and problem lines go to `report`."""
    done = SnapshotWarcs()
    for warc in _snapshot_warcs(target.catalog, snapshot_ids):
        source = snapshot_warc_source(warc)
        done.found += 1
        if on_file is not None:
            on_file(source)
        problems, before = _problems(report), report.files_done_before
        try:
            read = import_stored_warc(warc.sha256, warc.size, target=target, report=report,
                                      source=source, snapshot_id=warc.snapshot_id,
                                      on_record=on_record)
        except Exception as exc:
            # Whatever a file holds, the adoption goes on: reported, the records committed
            # before stay, and a rerun resumes after them.
            read = False
            report.broken_spans += 1
            report.problem(f"{source}: not indexed: {type(exc).__name__}: {exc}"[:2000])
        if read and report.files_done_before == before:
            done.indexed += 1
        if _problems(report) > problems:
            done.with_problems.append(source)
    return done
