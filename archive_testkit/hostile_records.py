"""The pieces hostile WARC files are made of: honest records as bytes, and what an import must say.

Records are written by warcio's `WARCWriter` (uncompressed), then edited as bytes where a
generator needs a lie, and gzipped one member each. A `HostileFile` says what the import of
the file must report and which records it must still import.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

_START = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class GoodRecord:
    """A record the import must still store: its target URI, where it lies, its body's sha256."""

    url: str
    offset: int
    payload_sha256: str


@dataclass(frozen=True)
class HostileFile:
    """A hostile file and what importing it must give.

    `problem` names what must be reported (empty: nothing); `bad_offset` is where the bad record
    starts (of its gzip member in a gzipped WARC; None where no record is at fault); `good` the
    records that must still be imported.
    """

    path: Path
    problem: str
    bad_offset: int | None
    good: tuple[GoodRecord, ...]


@dataclass(frozen=True)
class RecordBytes:
    """One record as written (uncompressed), with the URI and body it carries."""

    url: str | None
    body: bytes
    data: bytes


def response_bytes(
    url: str | None, body: bytes, *, index: int, payload_digest: str | None = None, version: str = "1.1",
) -> RecordBytes:
    """A `response` record, 200 text/html; no WARC-Target-URI when `url` is None.

    `payload_digest` replaces the digest warcio would compute (the block digest stays right).
    """
    out = BytesIO()
    writer = WARCWriter(out, gzip=False, warc_version=version)
    headers = {"WARC-Date": _date(index), "WARC-Record-ID": _record_id(index)}
    if payload_digest is not None:
        headers["WARC-Payload-Digest"] = payload_digest
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                       ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
    record = writer.create_warc_record(url or "", "response", payload=BytesIO(body), length=len(body),
                                       warc_headers_dict=headers, http_headers=http)
    writer.write_record(record)
    return RecordBytes(url, body, out.getvalue())


def page(index: int) -> tuple[str, bytes]:
    """An ordinary page: URL and body, distinct for each index."""
    return (f"http://site0000.test/p{index}.html",
            f"<!DOCTYPE html><html><body>page {index}</body></html>\n".encode())


def write_records(path: Path, records: list[bytes], *, gzipped: bool = True) -> list[int]:
    """Write the records (each its own gzip member when `gzipped`); returns their offsets."""
    return write_members(path, [member(data) if gzipped else data for data in records])


def member(data: bytes) -> bytes:
    """`data` as one gzip member (no timestamp, so the same data gives the same bytes)."""
    return gzip.compress(data, mtime=0)


def write_members(path: Path, chunks: list[bytes]) -> list[int]:
    """Write `chunks` one after another; returns where each starts."""
    offsets, position = [], 0
    for chunk in chunks:
        offsets.append(position)
        position += len(chunk)
    path.write_bytes(b"".join(chunks))
    return offsets


def good(record: RecordBytes, offset: int) -> GoodRecord:
    assert record.url is not None
    return GoodRecord(record.url, offset, hashlib.sha256(record.body).hexdigest())


def _date(index: int) -> str:
    return (_START + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _record_id(index: int) -> str:
    return f"<urn:uuid:00000000-0000-4000-8000-{index:012d}>"
