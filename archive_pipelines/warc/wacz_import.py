"""A WACZ package into the store: checked first (paths, the datapackage's sha256 of every
file), then each WARC inside imported as a WARC file is, with the package's page list naming
the pages (and their titles). The package itself is kept as it is, one blob.

A member whose path leaves the package (`../x`, `/abs`, a drive or backslash), a member that
would inflate past `MAX_RATIO` times its stored size, and a WARC whose bytes do not hash to what
`datapackage.json` says are reported and not imported; the rest of the package is.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from archive_pipelines.captures.record_parser import url_key
from archive_pipelines.catalog import Body, SegmentRows, utcnow
from archive_pipelines.warc.importer import (
    ImportReport,
    ImportTarget,
    import_session_id,
    import_warc_file,
    ledger_prefix,
)

MAX_RATIO = 1000
_CHUNK = 1024 * 1024


def _safe_name(name: str) -> bool:
    path = PurePosixPath(name)
    return (bool(name) and "\\" not in name and not path.is_absolute() and ":" not in path.parts[0]
            and ".." not in path.parts and "\x00" not in name)


def _declared_hashes(package: zipfile.ZipFile, report: ImportReport, source: str
                     ) -> dict[str, str] | None:
    try:
        data = json.loads(package.read("datapackage.json"))
        resources = data["resources"]
        return {str(entry["path"]): str(entry["hash"]).removeprefix("sha256:")
                for entry in resources}
    except (KeyError, TypeError, ValueError) as exc:
        report.broken_spans += 1
        report.problem(f"{source}: datapackage.json is missing or unreadable ({exc})")
        return None


def _pages(package: zipfile.ZipFile, names: set[str]) -> dict[str, str | None]:
    """Canonical page URL -> title, from pages/pages.jsonl (and pages/extraPages.jsonl)."""
    found: dict[str, str | None] = {}
    for name in ("pages/pages.jsonl", "pages/extraPages.jsonl"):
        if name not in names:
            continue
        with package.open(name) as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                url = entry.get("url") if isinstance(entry, dict) else None
                key = url_key(url) if isinstance(url, str) else None
                if key is not None:
                    title = entry.get("title")
                    found[key[0]] = title[:1000] if isinstance(title, str) and title else None
    return found


def _extract(package: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> str:
    """Copy a member out (its declared size and ratio checked); its sha256."""
    if info.compress_size and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise ValueError(f"inflates {info.file_size / info.compress_size:,.0f}:1 (a zip bomb?)")
    digest = hashlib.sha256()
    written = 0
    with package.open(info) as source, open(target, "wb") as sink:
        while chunk := source.read(_CHUNK):
            written += len(chunk)
            if written > info.file_size:
                raise ValueError("holds more bytes than its entry declares")
            digest.update(chunk)
            sink.write(chunk)
    return digest.hexdigest()


def import_wacz_file(path: Path, *, target: ImportTarget, report: ImportReport,
                     on_record: Callable[[int], None] | None = None) -> None:
    """Check and import one WACZ (see the module docstring)."""
    source = str(path)
    try:
        package = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        report.files += 1
        report.broken_spans += 1
        report.problem(f"{source}: not a WACZ (zip) file: {exc}")
        return
    work = target.data_dir / "tmp" / "wacz-import"
    work.mkdir(parents=True, exist_ok=True)
    with package:
        infos = package.infolist()
        bad = [info.filename for info in infos if not _safe_name(info.filename)]
        for name in bad:
            report.problem(f"{source}: member {name[:200]!r} leaves the package: not read")
            report.broken_spans += 1
        names = {info.filename for info in infos if info.filename not in bad}
        declared = _declared_hashes(package, report, source) or {}
        pages = _pages(package, names)
        for info in infos:
            name = info.filename
            if name in bad or not name.startswith("archive/") or info.is_dir():
                continue
            where = f"{source}!{name}"
            copy = work / hashlib.sha256(where.encode()).hexdigest()
            try:
                got = _extract(package, info, copy)
                if declared.get(name) != got:
                    report.broken_spans += 1
                    report.problem(f"{where}: sha256 {got[:16]}… is not the datapackage's "
                                   f"{(declared.get(name) or 'none')[:16]}…: not imported")
                    continue
                import_warc_file(copy, target=target, report=report, source=where, pages=pages,
                                 on_record=on_record)
            except (ValueError, zipfile.BadZipFile, OSError) as exc:
                report.broken_spans += 1
                report.problem(f"{where}: {exc}")
            finally:
                copy.unlink(missing_ok=True)
    _keep_package(path, target=target, source=source)
    shutil.rmtree(work, ignore_errors=True)


def _keep_package(path: Path, *, target: ImportTarget, source: str) -> None:
    """The package as it is, one blob, referenced by its own closing ledger row."""
    put = target.store.put_file(path)
    target.store.sync()
    target.ensure_aliases([put.sha256])
    blob = Body(put.sha256, put.size, "application/wacz")
    session_id = import_session_id(put.sha256)
    now_ms = int(time.time() * 1000)
    with target.catalog.transaction() as tx:
        tx.captures.record_segment(SegmentRows(
            path=f"{ledger_prefix(put.sha256)}wacz/end", sha256=put.sha256, session_id=session_id,
            index_dir=ledger_prefix(put.sha256).rstrip("/"), segment_blob=blob, captures=[],
            bodies={}, records=0, rejected=0, cut_bytes=0, pages=0, first_ms=now_ms, last_ms=now_ms),
            primary_store_id=target.store_id, now=utcnow())
        tx.imports.mark_warc_session(session_id, source=source)
