"""One WARC record read for import: a capture with its body decoded to the store's form, a
revisit to resolve, a record that stays only in the stored file, or a refusal with the reason.

A `response` (or an http(s) `resource`) record's payload is read once: its
`WARC-Payload-Digest` (sha1 or sha256, base32, hex or base64) is checked as it streams (see
`digests`); chunked transfer coding is removed, and Content-Encoding (gzip, deflate, br,
zstd) decoded in bounded steps (a bomb is cut and the capture marked truncated, as the
crawler does) — the store keeps bodies decoded,
so an imported page and a crawled one share their body. The decoded body is hashed and
spooled (memory up to `IN_MEMORY`, then a temp file in the data dir). A digest that does not
match, a record shorter than its Content-Length, or a URI with control characters is refused:
never stored as good.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, BinaryIO
from urllib.parse import urljoin

from warcio.bufferedreaders import ChunkedDataReader
from warcio.recordloader import ArcWarcRecord

from archive_pipelines.captures.record_parser import url_key
from archive_pipelines.catalog import CaptureRow
from archive_pipelines.content_coding import SUPPORTED, BodyDecoder, parse_encodings
from archive_pipelines.warc.digests import PayloadCheck

IN_MEMORY = 4 * 1024 * 1024
MAX_BODY = 64 * 1024 ** 3  # decoded bytes of one body at most (a bomb is cut there)
_CHUNK = 256 * 1024
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_DOT_SEGMENT = re.compile(r"/(?:\.|%2[eE]){1,2}(?:/|\?|#|$)")
_HTML = ("text/html", "application/xhtml+xml")


class RecordRefused(ValueError):
    """A record that is not imported; the message says why."""


@dataclass
class Body:
    """A decoded body, hashed: in memory (`data`), or in a temp file of the data dir (`path`)
    once bigger than `IN_MEMORY`."""

    sha256: str
    size: int
    data: bytes | None = None
    path: Path | None = None
    truncated: bool = False

    def close(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def __reduce__(self) -> tuple[type[Body], tuple[object, ...]]:
        # Pickled as its fields (a worker's read records go to the importing process):
        # a dataclass's default (its __dict__) takes three times as long to load.
        return Body, (self.sha256, self.size, self.data, self.path, self.truncated)


class _Spool:
    """Pieces of a body, kept in memory up to `IN_MEMORY`, then written to a temp file."""

    def __init__(self, spool_dir: Path) -> None:
        self._dir = spool_dir
        self._pieces: list[bytes] = []
        self._held = 0
        self._file: BinaryIO | None = None
        self.path: Path | None = None

    def write(self, piece: bytes) -> None:
        if self._file is None:
            self._pieces.append(piece)
            self._held += len(piece)
            if self._held <= IN_MEMORY:
                return
            handle = tempfile.NamedTemporaryFile(dir=self._dir, delete=False)  # noqa: SIM115
            self._file, self.path = handle, Path(handle.name)  # type: ignore[assignment]
            for held in self._pieces:
                handle.write(held)
            self._pieces = []
            return
        self._file.write(piece)

    def body(self, sha256: str, size: int, *, truncated: bool) -> Body:
        if self._file is None:
            return Body(sha256, size, data=b"".join(self._pieces), truncated=truncated)
        self._file.close()
        return Body(sha256, size, path=self.path, truncated=truncated)

    def discard(self) -> None:
        if self._file is not None:
            self._file.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)


@dataclass
class Revisit:
    """A revisit record: the payload it stands for lies in another record."""

    payload_digest: str | None
    refers_to_uri: str | None
    refers_to_date: str | None

    def __reduce__(self) -> tuple[type[Revisit], tuple[object, ...]]:
        return Revisit, (self.payload_digest, self.refers_to_uri, self.refers_to_date)


@dataclass
class ReadRecord:
    """What one record gives the import."""

    capture: CaptureRow | None = None  # None: the record is no capture (request, metadata...)
    body: Body | None = None
    revisit: Revisit | None = None
    payload_digest: str | None = None  # as the WARC wrote it (revisits in the file refer to it)
    notes: list[str] = field(default_factory=list)

    def __reduce__(self) -> tuple[type[ReadRecord], tuple[object, ...]]:
        return ReadRecord, (self.capture, self.body, self.revisit, self.payload_digest, self.notes)


def warc_date_ms(value: str | None) -> int:
    """Epoch milliseconds of a WARC-Date (`2024-05-17T10:00:00Z`, with or without a fraction)."""
    if not value:
        raise RecordRefused("no WARC-Date")
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise RecordRefused(f"WARC-Date {text[:40]!r} is not an ISO 8601 date") from None
    if moment.tzinfo is None:
        raise RecordRefused(f"WARC-Date {text[:40]!r} has no time zone")
    return round(moment.timestamp() * 1000)


def _uri(record: ArcWarcRecord) -> str:
    value = record.rec_headers.get_header("WARC-Target-URI")
    if value is None or not value.strip():
        raise RecordRefused(f"{record.rec_type} record without a WARC-Target-URI")
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]  # wget 1.21 writes the URI in angle brackets
    if _CONTROL.search(value):
        raise RecordRefused(f"WARC-Target-URI {value[:100]!r} holds a control character or space")
    if _DOT_SEGMENT.search(value.split("://", 1)[-1]):
        raise RecordRefused(f"WARC-Target-URI {value[:100]!r} holds `.` or `..` path segments")
    return value


def read_record(record: ArcWarcRecord, *, spool_dir: Path,
                pages: dict[str, str | None] | None = None) -> ReadRecord:
    """The import's reading of `record` (its stream is consumed). RecordRefused when it
    cannot be imported as good; read errors (a broken gzip member) propagate."""
    kind = record.rec_type
    if kind not in ("response", "resource", "revisit"):
        return ReadRecord()
    uri = _uri(record)
    key = url_key(uri)
    if key is None:
        return ReadRecord(notes=[f"{kind} of {uri[:100]!r}: not an http(s) URL, kept in the "
                                 "stored file only"])
    fetched_ms = warc_date_ms(record.rec_headers.get_header("WARC-Date"))
    http = record.http_headers
    status: int | None
    if kind == "resource":
        status, content_type, headers = 200, record.rec_headers.get_header("Content-Type"), []
    else:
        if http is None or not http.get_statuscode().isdigit():
            raise RecordRefused(f"{kind} record of {uri[:100]!r} has no HTTP status line")
        status = int(http.get_statuscode())
        if not 100 <= status <= 599:
            raise RecordRefused(f"HTTP status {status} of {uri[:100]!r} is not 100-599")
        content_type, headers = http.get_header("Content-Type"), http.headers
    digest = record.rec_headers.get_header("WARC-Payload-Digest")
    location = http.get_header("Location") if http is not None else None
    final_url = urljoin(uri, location) if location and 300 <= status < 400 else uri
    if kind == "revisit":
        row = _row(key, uri, fetched_ms=fetched_ms, status=status, content_type=content_type,
                   final_url=final_url, pages=pages or {}, body=None)
        return ReadRecord(capture=row, payload_digest=digest, revisit=Revisit(
            digest, record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
            record.rec_headers.get_header("WARC-Refers-To-Date")))
    check = PayloadCheck(digest)
    body = _read_body(record, headers, spool_dir=spool_dir, check=check)
    problem = check.problem()
    if problem is not None:
        body.close()
        raise RecordRefused(f"digest mismatch for {uri[:100]!r}: {problem}")
    row = _row(key, uri, fetched_ms=fetched_ms, status=status, content_type=content_type,
               final_url=final_url, pages=pages or {}, body=body,
               truncated=body.truncated or record.rec_headers.get_header("WARC-Truncated") is not None)
    return ReadRecord(capture=row, body=body, payload_digest=digest)


def _row(key: tuple[str, str, str], uri: str, *, fetched_ms: int, status: int | None,
         content_type: str | None, final_url: str, pages: dict[str, str | None], body: Body | None,
         truncated: bool = False) -> CaptureRow:
    canonical, url_hash, site = key
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if status is not None and 300 <= status < 400 and final_url != uri:
        kind = "redirect"
    elif canonical in pages or (mime in _HTML and status is not None and 200 <= status < 300
                                and not pages):
        kind = "page"
    else:
        kind = "request"
    return CaptureRow(kind, None, uri, url_hash, site, canonical, fetched_ms, status,
                      final_url, None, (content_type or None) and content_type[:255],
                      None if body is None else body.sha256, None if body is None else body.size,
                      truncated, None, None, 0, title=pages.get(canonical) if kind == "page" else None)


def _read_body(record: ArcWarcRecord, headers: list[tuple[str, str]], *,
               spool_dir: Path, check: PayloadCheck) -> Body:
    """The payload, de-chunked and decoded, hashed into a spool (and, as read, into `check`);
    RecordRefused when the record holds fewer bytes than its Content-Length says."""
    values = {name.lower(): value for name, value in headers}
    raw = record.raw_stream
    counted = _Counted(raw, check)
    stream: IO[bytes] = counted  # type: ignore[assignment]
    if "chunked" in values.get("transfer-encoding", "").lower():
        stream = ChunkedDataReader(counted)
    codings = parse_encodings(values.get("content-encoding"))
    decoder = None
    if codings and all(coding in SUPPORTED for coding in codings):
        decoder = BodyDecoder(codings, max_bytes=MAX_BODY)
    spool = _Spool(spool_dir)
    # A payload stored as it is read, whose declared digest is a sha256: the check's hash is
    # the body's (not computed twice).
    shared = check.sha256 if decoder is None and stream is counted else None
    digest = shared if shared is not None else hashlib.sha256()
    size = 0
    try:
        while chunk := stream.read(_CHUNK):
            pieces = [chunk]
            if decoder is not None:
                decoder.feed(chunk)
                pieces = _drain(decoder)
            for piece in pieces:
                if shared is None:
                    digest.update(piece)
                spool.write(piece)
                size += len(piece)
            if decoder is not None and decoder.done:
                break
        if decoder is not None and not decoder.done:
            decoder.end()
            for piece in _drain(decoder):
                digest.update(piece)
                spool.write(piece)
                size += len(piece)
        while counted.read(_CHUNK):  # the rest of a cut body: read for the digest check
            pass
    except BaseException:
        spool.discard()
        raise
    declared = record.payload_length if record.payload_length >= 0 else (record.length or 0)
    if counted.count < declared:
        spool.discard()
        raise RecordRefused(f"the payload holds {counted.count:,} bytes, not the {declared:,} "
                            "the record's Content-Length says (cut short)")
    return spool.body(digest.hexdigest(), size,
                      truncated=decoder is not None and decoder.cut is not None)


def _drain(decoder: BodyDecoder) -> list[bytes]:
    pieces = []
    while piece := decoder.read():
        pieces.append(piece)
    return pieces


class _Counted:
    """A reader that counts the bytes read through it and hands them to the digest check."""

    def __init__(self, stream: IO[bytes], check: PayloadCheck) -> None:
        self._stream = stream
        self._check = check
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.count += len(data)
        self._check.update(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self._stream.readline(size)
        self.count += len(data)
        self._check.update(data)
        return data
