"""Hostile WARC files for the import: each returns the file and what importing it must give.

Every file holds good records before and after the bad one (per-record gzip unless said),
so a test checks both that the bad record is reported with its offset and that the rest is
imported (`HostileFile.good`). The WARC 1.0 file is not hostile: an import takes all of it.
"""

from __future__ import annotations

import base64
import hashlib
import random
from io import BytesIO
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive_testkit.hostile_records import (
    GoodRecord,
    HostileFile,
    RecordBytes,
    good,
    member,
    page,
    response_bytes,
    write_members,
    write_records,
)

TWO_GB = 2_147_483_648
# How each odd target URI is written in the header line (after `WARC-Target-URI: `).
ODD_URIS: dict[str, bytes] = {
    "continuation-line": b"http://site0000.test/a\r\n b.html",  # a folded header: CRLF + space
    "bare-lf": b"http://site0000.test/a\nb.html",  # a lone LF inside the line
    "percent-newline": b"http://site0000.test/a%0D%0Ab.html",  # decodes to CRLF
    "dot-segments": b"http://site0000.test/a/../../../../etc/passwd",
    "percent-nul": b"http://site0000.test/a%00.html",
}


def truncated_member_warc(path: Path) -> HostileFile:
    """The middle record's gzip member loses its second half; the next member follows intact."""
    before, after = response_bytes(*page(0), index=0), response_bytes(*page(2), index=2)
    noise = random.Random(29).randbytes(8_000)  # incompressible: the cut falls inside the body
    middle = response_bytes("http://site0000.test/noise.bin", noise, index=1)
    members = [member(before.data), member(middle.data), member(after.data)]
    members[1] = members[1][: len(members[1]) // 2]
    offsets = write_members(path, members)
    return HostileFile(path, "truncated gzip member", offsets[1],
                       (good(before, offsets[0]), good(after, offsets[2])))


def content_length_too_long_warc(path: Path, *, gzipped: bool = True, extra: int = 100) -> HostileFile:
    """A record whose Content-Length says `extra` bytes more than its block holds, then another record."""
    return _lying_length(path, delta=extra, gzipped=gzipped, problem="Content-Length beyond the record")


def content_length_too_short_warc(path: Path, *, gzipped: bool = True, short: int = 20) -> HostileFile:
    """A record whose Content-Length says `short` bytes less than its block holds, then another record."""
    return _lying_length(path, delta=-short, gzipped=gzipped, problem="Content-Length short of the record")


def content_length_2gb_warc(path: Path) -> HostileFile:
    """A small file whose middle record declares a Content-Length of 2 GiB (2,147,483,648)."""
    records = [response_bytes(*page(0), index=0), response_bytes(*page(1), index=1),
               response_bytes(*page(2), index=2)]
    datas = [r.data for r in records]
    datas[1] = _with_warc_header(datas[1], b"Content-Length", str(TWO_GB).encode())
    offsets = write_records(path, datas)
    return HostileFile(path, "declared length of 2 GiB", offsets[1],
                       (good(records[0], offsets[0]), good(records[2], offsets[2])))


def no_target_uri_warc(path: Path) -> HostileFile:
    """A response record without WARC-Target-URI between two good ones."""
    records = [response_bytes(*page(0), index=0), response_bytes(None, page(1)[1], index=1),
               response_bytes(*page(2), index=2)]
    assert b"WARC-Target-URI" not in records[1].data
    offsets = write_records(path, [r.data for r in records])
    return HostileFile(path, "response without a target URI", offsets[1],
                       (good(records[0], offsets[0]), good(records[2], offsets[2])))


def odd_target_uri_warc(path: Path, *, case: str) -> HostileFile:
    """A response whose WARC-Target-URI is written as `ODD_URIS[case]`, between two good ones."""
    placeholder = "http://site0000.test/placeholder"
    records = [response_bytes(*page(0), index=0), response_bytes(placeholder, page(1)[1], index=1),
               response_bytes(*page(2), index=2)]
    datas = [r.data for r in records]
    datas[1] = _with_warc_header(datas[1], b"WARC-Target-URI", ODD_URIS[case])
    offsets = write_records(path, datas)
    return HostileFile(path, f"target URI: {case}", offsets[1],
                       (good(records[0], offsets[0]), good(records[2], offsets[2])))


def wrong_payload_digest_warc(path: Path, *, algorithm: str = "sha1") -> HostileFile:
    """A response whose WARC-Payload-Digest is of other bytes: `sha1` base32, or `sha256` hex.

    The block digest is right, so only the payload digest check finds it.
    """
    other = b"not the payload"
    digest = {
        "sha1": "sha1:" + base64.b32encode(hashlib.sha1(other).digest()).decode(),
        "sha256": "sha256:" + hashlib.sha256(other).hexdigest(),
    }[algorithm]
    records = [response_bytes(*page(0), index=0), response_bytes(*page(1), index=1, payload_digest=digest),
               response_bytes(*page(2), index=2)]
    offsets = write_records(path, [r.data for r in records])
    return HostileFile(path, f"payload digest mismatch ({algorithm})", offsets[1],
                       (good(records[0], offsets[0]), good(records[2], offsets[2])))


def warc_1_0_file(path: Path) -> HostileFile:
    """A WARC/1.0 file (warcinfo, request, response, revisit, resource, metadata) with nothing wrong."""
    writer_out = BytesIO()
    writer = WARCWriter(writer_out, gzip=True, warc_version="1.0")
    url, body = page(0)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
                            protocol="HTTP/1.1")
    request = StatusAndHeaders("GET /p0.html HTTP/1.1", [("Host", "site0000.test")], is_http_request=True)
    offsets: dict[str, int] = {}

    def write(kind: str, record: object) -> None:
        offsets[kind] = writer_out.tell()
        writer.write_record(record)

    write("warcinfo", writer.create_warcinfo_record("old.warc.gz", {"software": "archive_testkit"}))
    write("request", writer.create_warc_record(url, "request", http_headers=request,
                                               warc_headers_dict={"WARC-Date": "2010-01-01T00:00:00Z"}))
    write("response", writer.create_warc_record(url, "response", payload=BytesIO(body), length=len(body),
                                                http_headers=http,
                                                warc_headers_dict={"WARC-Date": "2010-01-01T00:00:00Z"}))
    digest = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    write("revisit", writer.create_revisit_record(url, digest, url, "2010-01-01T00:00:00Z", http_headers=http,
                                                  warc_headers_dict={"WARC-Date": "2011-01-01T00:00:00Z"}))
    note = b"a note kept beside the capture\n"
    write("resource", writer.create_warc_record("http://site0000.test/note.txt", "resource",
                                                payload=BytesIO(note), length=len(note),
                                                warc_content_type="text/plain"))
    fields = b"via: archive_testkit\r\n"
    write("metadata", writer.create_warc_record(url, "metadata", payload=BytesIO(fields), length=len(fields),
                                                warc_content_type="application/warc-fields"))
    path.write_bytes(writer_out.getvalue())
    body_sha256, note_sha256 = hashlib.sha256(body).hexdigest(), hashlib.sha256(note).hexdigest()
    goods = (GoodRecord(url, offsets["response"], body_sha256),
             GoodRecord(url, offsets["revisit"], body_sha256),
             GoodRecord("http://site0000.test/note.txt", offsets["resource"], note_sha256))
    return HostileFile(path, "", None, goods)


def _lying_length(path: Path, *, delta: int, gzipped: bool, problem: str) -> HostileFile:
    records = [response_bytes(*page(0), index=0), response_bytes(*page(1), index=1),
               response_bytes(*page(2), index=2)]
    datas = [r.data for r in records]
    datas[1] = _with_warc_header(datas[1], b"Content-Length", str(_block_length(records[1]) + delta).encode())
    offsets = write_records(path, datas, gzipped=gzipped)
    return HostileFile(path, problem, offsets[1],
                       (good(records[0], offsets[0]), good(records[2], offsets[2])))


def _block_length(record: RecordBytes) -> int:
    _head, _, rest = record.data.partition(b"\r\n\r\n")
    return len(rest) - 4  # the record ends with two CRLFs after its block


def _with_warc_header(data: bytes, name: bytes, value: bytes) -> bytes:
    """The record with the WARC header `name` (which it has) set to `value` as raw bytes."""
    head, separator, rest = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    index = next(i for i, line in enumerate(lines) if line.lower().startswith(name.lower() + b":"))
    lines[index] = name + b": " + value
    return b"\r\n".join(lines) + separator + rest

