"""WACZ 1.1.1: WARCs, their CDXJ index and the page list in one ZIP that replay tools open.

Layout (https://specs.webrecorder.net/wacz/1.1.1/), as py-wacz 0.6 writes it:

    archive/<name>.warc.gz     the WARCs, stored (already compressed; replay reads ranges)
    indexes/index.cdxj         the sorted CDXJ index (its `filename` fields: the names above)
    pages/pages.jsonl          a header line, then one page per line: id, url, ts, title
    datapackage.json           every file above with its sha256 and size, title, software, created
    datapackage-digest.json    the sha256 of datapackage.json

Everything is streamed: each file is copied in 1 MiB chunks and hashed as it is copied, so
memory stays flat for WARCs of any size (ZIP64 where needed). The WACZ is written under a
temporary name in the destination directory and renamed when complete: a crash never leaves
a half-written file under the final name. Its own sha256 costs one more read of the file
(the ZIP writer seeks back to patch each entry's header, so it cannot be hashed as written).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import uuid
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

WACZ_VERSION = "1.1.1"
PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
_CHUNK = 1 << 20
_NOT_IN_A_NAME = re.compile(r"[^-a-z0-9._/]")  # Frictionless's resource-name alphabet
_ZIP_EPOCH = datetime(1980, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class PageEntry:
    """A page of the page list: its URL, when it was captured, its title where known."""

    url: str
    ts: str | datetime  # a 14-digit YYYYMMDDhhmmss (UTC) or a datetime
    title: str | None = None
    id: str | None = None  # derived from ts and url when not given


@dataclass(frozen=True)
class WaczSummary:
    """What write_wacz wrote: the file, its size and sha256 (hex), how many pages and WARCs."""

    path: Path
    bytes: int
    sha256: str
    pages: int
    warcs: int


@dataclass(frozen=True)
class _Resource:
    path: str
    sha256: str
    bytes: int


def write_wacz(out: Path, *, warcs: Sequence[Path], index: Path, pages: Iterable[PageEntry], title: str,
               software: str, created: datetime | None = None, main_page_url: str | None = None,
               main_page_date: datetime | None = None) -> WaczSummary:
    """Write a WACZ at `out` from WARC files, their sorted CDXJ `index` and the page list.

    The WARCs keep their file names under archive/ (two WARCs of one name are refused);
    `created` defaults to now (UTC).
    """
    names = [warc.name for warc in warcs]
    if not names:
        raise ValueError("a WACZ holds at least one WARC")
    if len(set(names)) != len(names):
        raise ValueError(f"two WARCs share a file name: {sorted(names)}")
    created = (created or datetime.now(UTC)).astimezone(UTC)
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, partial_name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    partial = Path(partial_name)
    try:
        with os.fdopen(handle, "w+b") as sink:
            page_count = _write_zip(sink, warcs=warcs, index=index, pages=pages, created=created,
                                    metadata=_metadata(title=title, software=software, created=created,
                                                       main_page_url=main_page_url,
                                                       main_page_date=main_page_date))
            sink.flush()
            os.fsync(sink.fileno())
            sink.seek(0)
            size, digest = _hash_stream(sink)
        partial.chmod(0o644)  # mkstemp's 0600 is for the partial file only
        os.replace(partial, out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return WaczSummary(path=out, bytes=size, sha256=digest, pages=page_count, warcs=len(names))


def _metadata(*, title: str, software: str, created: datetime, main_page_url: str | None,
              main_page_date: datetime | None) -> dict[str, str]:
    metadata = {"title": title, "software": software, "created": _iso(created)}
    if main_page_url:
        metadata["mainPageURL"] = main_page_url
    if main_page_date:
        metadata["mainPageDate"] = _iso(main_page_date)
    return metadata


def _write_zip(sink: IO[bytes], *, warcs: Sequence[Path], index: Path, pages: Iterable[PageEntry],
               created: datetime, metadata: dict[str, str]) -> int:
    stamp = max(created, _ZIP_EPOCH).timetuple()[:6]
    resources = []
    with zipfile.ZipFile(sink, "w", allowZip64=True) as archive:
        for warc in warcs:
            resources.append(_copy_file(archive, warc, f"archive/{warc.name}", stamp=stamp,
                                        compress=zipfile.ZIP_STORED))
        resources.append(_copy_file(archive, index, "indexes/index.cdxj", stamp=stamp,
                                    compress=zipfile.ZIP_DEFLATED))
        page_resource, page_count = _write_pages(archive, pages, stamp=stamp)
        resources.append(page_resource)
        package = json.dumps(_datapackage(resources, metadata), indent=2).encode("utf-8")
        archive.writestr(_entry("datapackage.json", stamp, zipfile.ZIP_DEFLATED), package)
        digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(package).hexdigest()}
        archive.writestr(_entry("datapackage-digest.json", stamp, zipfile.ZIP_DEFLATED),
                         json.dumps(digest, indent=2).encode("utf-8"))
    return page_count


def _datapackage(resources: list[_Resource], metadata: dict[str, str]) -> dict[str, object]:
    names: set[str] = set()
    listed = []
    for resource in resources:
        name = _unique(_NOT_IN_A_NAME.sub("-", resource.path.rsplit("/", 1)[-1].lower()), names)
        listed.append({"name": name, "path": resource.path, "hash": "sha256:" + resource.sha256,
                       "bytes": resource.bytes})
    return {"profile": "data-package", "resources": listed, **metadata, "wacz_version": WACZ_VERSION}


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name}-{number}"
    taken.add(candidate)
    return candidate


def _entry(path: str, stamp: tuple[int, ...], compress: int, *, size: int = 0) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, date_time=stamp)  # type: ignore[arg-type]
    info.compress_type = compress
    info.file_size = size  # lets the writer choose ZIP64 up front for large members
    return info


def _copy_file(archive: zipfile.ZipFile, source: Path, path: str, *, stamp: tuple[int, ...],
               compress: int) -> _Resource:
    hasher = hashlib.sha256()
    copied = 0
    with source.open("rb") as reader, archive.open(
            _entry(path, stamp, compress, size=source.stat().st_size), "w") as writer:
        while chunk := reader.read(_CHUNK):
            hasher.update(chunk)
            writer.write(chunk)
            copied += len(chunk)
    return _Resource(path=path, sha256=hasher.hexdigest(), bytes=copied)


def _write_pages(archive: zipfile.ZipFile, pages: Iterable[PageEntry], *,
                 stamp: tuple[int, ...]) -> tuple[_Resource, int]:
    hasher = hashlib.sha256()
    written = count = 0
    with archive.open(_entry("pages/pages.jsonl", stamp, zipfile.ZIP_DEFLATED), "w",
                      force_zip64=True) as writer:  # its size is not known up front
        for line in _page_lines(pages):
            data = line.encode("utf-8")
            hasher.update(data)
            writer.write(data)
            written += len(data)
            count += 1
    return _Resource(path="pages/pages.jsonl", sha256=hasher.hexdigest(), bytes=written), count - 1


def _page_lines(pages: Iterable[PageEntry]) -> Iterable[str]:
    yield json.dumps(PAGES_HEADER) + "\n"
    for page in pages:
        when = _page_time(page.ts)
        line = {"id": page.id or uuid.uuid5(uuid.NAMESPACE_URL, f"{when:%Y%m%d%H%M%S} {page.url}").hex,
                "url": page.url, "ts": _iso(when)}
        if page.title is not None:
            line["title"] = page.title
        yield json.dumps(line) + "\n"


def _page_time(ts: str | datetime) -> datetime:
    if isinstance(ts, datetime):
        return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
    if not re.fullmatch(r"[0-9]{14}", ts):
        raise ValueError(f"a page's ts is a datetime or 14 digits (YYYYMMDDhhmmss), not {ts!r}")
    return datetime.strptime(ts, "%Y%m%d%H%M%S").replace(tzinfo=UTC)


def _iso(when: datetime) -> str:
    """ISO 8601 in UTC to the second, as py-wacz writes `created`: 2024-03-01T10:11:12Z."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hash_stream(stream: IO[bytes]) -> tuple[int, str]:
    hasher = hashlib.sha256()
    size = 0
    while chunk := stream.read(_CHUNK):
        hasher.update(chunk)
        size += len(chunk)
    return size, hasher.hexdigest()
