"""The record behind any capture, wherever it lies: a crawl segment or compacted session (the
crawler's JSON record), or an imported WARC file in the store (its record at the capture's
offset, read from the store's file or, in an object store, by ranged reads of the blob;
given the same shape: `page_url`, `timestamp`, and one request whose `response` holds
the status and the headers as the WARC has them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archive_pipelines.blobstore import BlobStore, BlobStoreError
from archive_pipelines.captures.record_files import read_record
from archive_pipelines.captures.segment_source import segment_source
from archive_pipelines.warc.stored_records import ReadAhead, read_stored_record
from archive_pipelines.warc.warc_files import FoundRecord, Layout, iter_records

_SHA256_HEX = frozenset("0123456789abcdef")


def warc_place(index_path: str) -> tuple[str, Layout] | None:
    """(sha256 of the stored WARC, its layout) of an import's index path
    (`imports/<sha256>/<layout>/<start>-<end>`), None for a crawl's."""
    parts = index_path.split("/")
    if len(parts) != 4 or parts[0] != "imports":
        return None
    sha256, layout = parts[1], parts[2]
    if len(sha256) != 64 or not set(sha256) <= _SHA256_HEX:
        raise ValueError(f"{index_path!r} names no stored WARC")
    try:
        return sha256, Layout(layout)
    except ValueError:
        raise ValueError(f"{index_path!r}: unknown WARC layout {layout!r}") from None


def read_capture_record(data_dir: Path, store: BlobStore, index_path: str, *,
                        record_offset: int, ahead: ReadAhead | None = None) -> dict[str, Any]:
    """The record (a dict in the crawler's shape) a capture came from. OSError / ValueError
    when it cannot be read. `ahead`: a reader going through records in file order (ranged
    reads of an object store's WARC fetch more at once)."""
    place = warc_place(index_path)
    if place is None:  # a crawl segment or compacted session: the data dir's, or the bucket's
        return read_record(data_dir, index_path, record_offset,
                           source=segment_source(store, data_dir))
    sha256, layout = place
    path = store.local_path(sha256)
    if path is None:  # an object store: ranged reads of the blob
        try:
            found = read_stored_record(store, sha256, layout, offset=record_offset, ahead=ahead)
        except BlobStoreError as exc:  # as a local file that cannot be read
            raise OSError(f"stored WARC {sha256[:12]}: {exc}") from exc
        return _as_page_record(found)
    for item in iter_records(path, layout, start=record_offset):
        if not isinstance(item, FoundRecord) or item.offset != record_offset:
            break
        return _as_page_record(item)
    raise ValueError(f"stored WARC {sha256[:12]} holds no record at {record_offset}")


def _as_page_record(found: FoundRecord) -> dict[str, Any]:
    record = found.record
    headers = record.rec_headers
    uri = (headers.get_header("WARC-Target-URI") or "").strip("<>")
    http = record.http_headers
    response: dict[str, Any] | None = None
    if http is not None and http.get_statuscode().isdigit():
        response = {"status_code": int(http.get_statuscode()),
                    "headers": [[name, value] for name, value in http.headers],
                    "body_type": http.get_header("Content-Type")}
    return {"page_url": uri, "warc_date": headers.get_header("WARC-Date"),
            "warc_type": record.rec_type, "warc_record_id": headers.get_header("WARC-Record-ID"),
            "warc_offset": found.offset,
            "requests": [{"url": uri, "request_headers": [], "response": response}]}
