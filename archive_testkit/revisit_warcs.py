"""WARC files written by warcio's own `WARCWriter` with `revisit` records, for the WARC import.

Each page is a `response` the first time its body is seen; a later page with the same body
(the same URL recaptured, or another URL serving it) is an identical-payload-digest
`revisit` naming the first response's URI and date (`WARC-Refers-To-Target-URI`,
`WARC-Refers-To-Date`), as pywb and Heritrix deduplicate. One more revisit, half way through,
refers to a capture this file does not hold: an importer must report it, not drop it, and
import the records after it. Digests are sha1 in base32, as warcio writes them; record ids
and dates follow from the pages, so the same pages always give the same records. WARC/1.1
(the 1.0 revisit profile is in `hostile_warcs.warc_1_0_file`).
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path
from typing import Protocol

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

START = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
SAMPLE_PAGES: tuple[tuple[str, bytes], ...] = (
    ("http://site0000.test/", b"<!DOCTYPE html><html><body>home</body></html>\n"),
    ("http://site0000.test/style.css", b"body { margin: 0 }\n"),
    ("http://site0000.test/", b"<!DOCTYPE html><html><body>home</body></html>\n"),  # recaptured
    ("http://mirror.test/style.css", b"body { margin: 0 }\n"),  # another URL, the same body
    ("http://site0000.test/news", b"<!DOCTYPE html><html><body>news</body></html>\n"),
)
UNRESOLVABLE_URL = "http://site0000.test/old-logo.png"
UNRESOLVABLE_REFERS_TO = ("http://gone.test/old-logo.png", "2001-02-03T04:05:06Z")
UNRESOLVABLE_BODY = b"a body that no record of this file holds\n"


class WarcSink(Protocol):
    """Where records go: a file, or a gzip.GzipFile for a whole-file gzip (offsets: uncompressed)."""

    def write(self, data: bytes, /) -> int: ...

    def tell(self) -> int: ...


@dataclass(frozen=True)
class WrittenRecord:
    """A response or revisit as written: where it lies and which body it stands for.

    `offset` is of the record in the file (of its gzip member when gzipped per record);
    `refers_to` is the (URI, WARC-Date) a revisit names, None for a response.
    """

    kind: str
    url: str
    date: str
    offset: int
    payload_sha256: str  # hex, of the body (a revisit: of the body it refers to)
    payload_digest: str  # the WARC-Payload-Digest header, sha1 base32
    refers_to: tuple[str, str] | None = None


@dataclass(frozen=True)
class RevisitWarc:
    """A written WARC, its responses and revisits in file order, and the revisit it cannot resolve."""

    path: Path
    records: tuple[WrittenRecord, ...]
    unresolvable: WrittenRecord

    @property
    def revisits(self) -> list[WrittenRecord]:
        """The revisits a reader resolves from this file alone."""
        return [r for r in self.records if r.kind == "revisit" and r is not self.unresolvable]


def write_revisit_warc(
    path: Path, *, pages: Sequence[tuple[str, bytes]] = SAMPLE_PAGES, gzip: bool = True,
    start: datetime = START,
) -> RevisitWarc:
    """Write `pages` (URL, body) to `path` with warcio, repeated bodies as revisits (see the module)."""
    with path.open("wb") as stream:
        records = write_revisit_records(stream, pages=pages, gzip=gzip, start=start)
    unresolvable = next(r for r in records if r.url == UNRESOLVABLE_URL)
    return RevisitWarc(path, tuple(records), unresolvable)


def write_revisit_records(
    stream: WarcSink, *, pages: Sequence[tuple[str, bytes]], gzip: bool, start: datetime = START,
) -> list[WrittenRecord]:
    """Write the records into `stream` (offsets: its tell() before each record)."""
    writer = WARCWriter(stream, gzip=gzip, warc_version="1.1")
    first: dict[str, WrittenRecord] = {}  # by body sha256
    written: list[WrittenRecord] = []
    for index, (url, body) in enumerate(pages):
        if index == len(pages) // 2:
            written.append(_revisit(writer, stream, url=UNRESOLVABLE_URL, body=UNRESOLVABLE_BODY,
                                    refers_to=UNRESOLVABLE_REFERS_TO, date=_date(start, len(written))))
        date = _date(start, len(written))
        earlier = first.get(hashlib.sha256(body).hexdigest())
        if earlier is None:
            record = _response(writer, stream, url=url, body=body, date=date)
            first[record.payload_sha256] = record
        else:
            record = _revisit(writer, stream, url=url, body=body, refers_to=(earlier.url, earlier.date),
                              date=date)
        written.append(record)
    return written


def sha1_base32(body: bytes) -> str:
    """`sha1:<base32>`, the payload digest warcio writes."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def _response(writer: WARCWriter, stream: WarcSink, *, url: str, body: bytes, date: str) -> WrittenRecord:
    offset = stream.tell()
    record = writer.create_warc_record(url, "response", payload=BytesIO(body), length=len(body),
                                       warc_headers_dict=_ids(url, date), http_headers=_http(url, body))
    writer.write_record(record)
    return WrittenRecord("response", url, date, offset, hashlib.sha256(body).hexdigest(), sha1_base32(body))


def _revisit(writer: WARCWriter, stream: WarcSink, *, url: str, body: bytes, refers_to: tuple[str, str],
             date: str) -> WrittenRecord:
    offset = stream.tell()
    digest = sha1_base32(body)
    record = writer.create_revisit_record(url, digest, refers_to[0], refers_to[1],
                                          http_headers=_http(url, body), warc_headers_dict=_ids(url, date))
    writer.write_record(record)
    return WrittenRecord("revisit", url, date, offset, hashlib.sha256(body).hexdigest(), digest, refers_to)


def _http(url: str, body: bytes) -> StatusAndHeaders:
    suffix = url.rsplit(".", 1)[-1] if "." in url.rsplit("/", 1)[-1] else ""
    kind = {"css": "text/css", "png": "image/png"}.get(suffix, "text/html; charset=utf-8")
    return StatusAndHeaders("200 OK", [("Content-Type", kind), ("Content-Length", str(len(body)))],
                            protocol="HTTP/1.1")


def _ids(url: str, date: str) -> dict[str, str]:
    digest = hashlib.sha256(f"{url}|{date}".encode()).digest()[:16]
    return {"WARC-Record-ID": f"<urn:uuid:{uuid.UUID(bytes=digest, version=4)}>", "WARC-Date": date}


def _date(start: datetime, index: int) -> str:
    return (start + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%SZ")
