"""A small WARC written by warcio itself, with every kind of record an index must handle, and our
own CDXJ lines for it (built from the record offsets and lengths warcio reads back)."""

from __future__ import annotations

import base64
import gzip
import hashlib
from datetime import datetime
from io import BytesIO
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import iso_date_to_datetime
from warcio.warcwriter import WARCWriter

from archive_pipelines.warc.cdxj import IndexEntry, cdxj_line, cdxj_timestamp, indexed_record, record_mime

PAGE = "https://www.example.com/Path/?b=2&a=1#top"
PAGE_BODY = "<html><head><title>Café \"quoted\"</title></head><body>hi</body></html>".encode()
UNDIGESTED_BODY = b"a body whose record has no WARC-Payload-Digest"


def _date(day: int, millis: int = 0) -> str:
    return f"2024-03-{day:02d}T10:11:12.{millis:03d}Z"


def _response(writer: WARCWriter, uri: str, *, status: str, headers: list[tuple[str, str]],
              body: bytes, date: str) -> None:
    http = StatusAndHeaders(status, [*headers, ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
    record = writer.create_warc_record(uri, "response", payload=BytesIO(body), length=len(body),
                                       http_headers=http, warc_headers_dict={"WARC-Date": date})
    writer.write_record(record)
    request = writer.create_warc_record(
        uri, "request", http_headers=StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.com")],
                                                      is_http_request=True),
        warc_headers_dict={"WARC-Date": date,
                           "WARC-Concurrent-To": record.rec_headers.get_header("WARC-Record-ID")})
    writer.write_record(request)


def _undigested_response(uri: str, date: str) -> bytes:
    """A gzip member holding a response written by warcio, its WARC-Payload-Digest removed."""
    raw = BytesIO()
    buffer = WARCWriter(raw, gzip=False, warc_version="1.1")
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain"),
                                       ("Content-Length", str(len(UNDIGESTED_BODY)))], protocol="HTTP/1.1")
    buffer.write_record(buffer.create_warc_record(uri, "response", payload=BytesIO(UNDIGESTED_BODY),
                                                  length=len(UNDIGESTED_BODY), http_headers=http,
                                                  warc_headers_dict={"WARC-Date": date}))
    lines = raw.getvalue().split(b"\r\n")
    kept = [line for line in lines if not line.startswith(b"WARC-Payload-Digest:")]
    assert len(kept) == len(lines) - 1
    return gzip.compress(b"\r\n".join(kept))


def write_sample_warc(path: Path) -> None:
    """Responses (200, 404, a redirect, no Content-Type, non-ASCII URL, no payload digest), their
    requests, revisits with and without HTTP headers, metadata and resource records."""
    with path.open("wb") as sink:
        writer = WARCWriter(sink, gzip=True, warc_version="1.1")
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "tests"}))
        _response(writer, PAGE, status="200 OK", body=PAGE_BODY, date=_date(1, 123),
                  headers=[("Content-Type", "text/html; charset=utf-8")])
        _response(writer, "http://example.com/missing", status="404 Not Found", body=b"gone",
                  headers=[("Content-Type", "text/plain")], date=_date(1, 200))
        _response(writer, "http://example.com/old", status="301 Moved Permanently", body=b"",
                  headers=[("Location", "https://www.example.com/Path/")], date=_date(1, 300))
        _response(writer, "https://example.com/raw", status="200 OK", body=b"\x00\x01binary",
                  headers=[], date=_date(2))
        _response(writer, "https://bücher.example/straße?q=ä", status="200 OK", body=b"umlauts",
                  headers=[("Content-Type", "text/plain;charset=latin-1")], date=_date(2, 1))
        digest = "sha1:" + base64.b32encode(hashlib.sha1(PAGE_BODY).digest()).decode()
        writer.write_record(writer.create_revisit_record(
            PAGE, digest, PAGE, _date(1, 123),
            http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
            warc_headers_dict={"WARC-Date": _date(3)}))
        writer.write_record(writer.create_revisit_record(
            "http://example.com/missing", digest, PAGE, _date(1, 123),
            warc_headers_dict={"WARC-Date": _date(3, 5)}))
        writer.write_record(writer.create_warc_record(
            PAGE, "metadata", payload=BytesIO(b"via: https://example.com/\r\n"), length=26,
            warc_content_type="application/warc-fields", warc_headers_dict={"WARC-Date": _date(1, 123)}))
        writer.write_record(writer.create_warc_record(
            "urn:x-archive:navigation:42", "metadata", payload=BytesIO(b'{"requests": 3}'), length=15,
            warc_content_type="application/json", warc_headers_dict={"WARC-Date": _date(1, 124)}))
        writer.write_record(writer.create_warc_record(
            "https://example.com/notes.txt", "resource", payload=BytesIO(b"plain notes"), length=11,
            warc_content_type="text/plain; charset=utf-8", warc_headers_dict={"WARC-Date": _date(4)}))
        sink.write(_undigested_response("http://example.com/undigested", _date(5)))


def sample_warc_index_lines(path: Path, filename: str) -> list[str]:
    """Our CDXJ lines for a WARC, in file order: IndexEntry per indexed record, cdxj_line each."""
    lines = []
    with path.open("rb") as source:
        records = ArchiveIterator(source)
        for record in records:
            content_type = record.rec_headers.get_header("Content-Type")
            if not indexed_record(record.rec_type, content_type):
                continue
            http = record.http_headers
            body = record.content_stream().read()
            digest = record.rec_headers.get_header("WARC-Payload-Digest")
            if digest is None and record.rec_type != "revisit":
                digest = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
            status = http.get_statuscode() if http and record.rec_type in ("response", "revisit") else None
            entry = IndexEntry(
                url=record.rec_headers.get_header("WARC-Target-URI"),
                timestamp=cdxj_timestamp(_warc_date(record.rec_headers.get_header("WARC-Date"))),
                mime=record_mime(record.rec_type, http.get_header("Content-Type") if http else (
                    None if record.rec_type == "response" else content_type)),
                status=int(status) if status else None,
                digest=digest,
                length=records.get_record_length(),
                offset=records.get_record_offset(),
                filename=filename,
            )
            lines.append(cdxj_line(entry))
    return lines


def _warc_date(text: str) -> datetime:
    return iso_date_to_datetime(text)
