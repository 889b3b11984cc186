"""An import as a person asks for it: files and folders (searched for `*.warc`, `*.warc.gz`,
`*.wacz`), each checked, then imported; one report over all."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.warc.importer import ImportReport, ImportTarget, import_warc_file
from archive_pipelines.warc.wacz_import import import_wacz_file

SUFFIXES = (".warc", ".warc.gz", ".wacz")


class BadImportSource(ArchiveError):
    """A path to import that is not there, or not a file we read."""


def import_sources(paths: Iterable[Path]) -> list[Path]:
    """The files to import: each file given, and every WARC/WACZ under each folder given
    (sorted); BadImportSource for a path that does not exist or a folder without any."""
    found: list[Path] = []
    for given in paths:
        path = given.expanduser()
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
            if not inside:
                raise BadImportSource(f"{given}: no *.warc, *.warc.gz or *.wacz file in it")
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            raise BadImportSource(f"{given}: no such file or folder")
    return list(dict.fromkeys(p.absolute() for p in found))


def _files(paths: list[Path]) -> Iterator[tuple[Path, bool]]:
    for path in paths:
        yield path, path.name.endswith(".wacz")


def run_import(paths: list[Path], *, target: ImportTarget,
               on_record: Callable[[int], None] | None = None,
               on_file: Callable[[Path], None] | None = None) -> ImportReport:
    """Import every file of `paths` (from `import_sources`)."""
    report = ImportReport()
    for path, is_wacz in _files(paths):
        if on_file is not None:
            on_file(path)
        if is_wacz:
            import_wacz_file(path, target=target, report=report, on_record=on_record)
        else:
            import_warc_file(path, target=target, report=report, on_record=on_record)
    return report
