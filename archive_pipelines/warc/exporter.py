"""Captures out as WARC 1.1 records, written with `warcio`.

Per HTTP exchange a `request` and a `response` record (`WARC-Concurrent-To` linking them); a
redirect hop is an exchange too, its response a status line and `Location` (the crawler did
not keep a hop's other headers). A body already written in the same file becomes a `revisit`
record (identical-payload-digest profile, `WARC-Refers-To-Target-URI` / `-Date`) unless
`self_contained`. An unchanged capture (a 304 to a conditional request, kept with the
earlier body) is a `revisit` of the server-not-modified profile, its 304 headers as the HTTP
block and the earlier capture (as the crawler recorded it, else the first of that body in
the export) as `WARC-Refers-To-Target-URI` / `-Date`; `self_contained`, it is a `response`
with the body in full, as the 200 it stands for. A page adds a `metadata` record
(application/warc-fields): its navigation id, depth, title, redirect chain and sub-requests
(`refused-request: <url> <reason>` for a browser's request the crawl did not make).
A fetch that got no response (a network error) and a page robots.txt kept us from fetching
are no `response`: they become `metadata` records with a `fetch-error` field, so the attempt
is on record and no reader mistakes it for a capture. A browser page load's full-page
screenshot and rendered DOM are `resource` records, `urn:fullPage:<url>` and `urn:dom:<url>`
(`rendering_records`), always with their bytes in full. A capture whose body the store cannot
give is reported and left out (the export then ends with problems); the rest is written.

Digests: `WARC-Payload-Digest` is the catalog's sha256 in base32 (`sha256:...`, which warcio
verifies); `WARC-Block-Digest` is sha1 over the HTTP headers and the payload, computed while
the body is read (and the body checked against its sha256 in the same read).
"""

from __future__ import annotations

import io
import os
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.catalog import CaptureScope, Catalog, ExportCapture
from archive_pipelines.counts import Counts, add_line
from archive_pipelines.warc.capture_records import read_capture_record
from archive_pipelines.warc.http_blocks import redirect_block, request_block, response_block
from archive_pipelines.warc.payloads import (
    DigestClock,
    Payload,
    PayloadProblem,
    empty_payload,
    read_payload,
    sha256_digest,
)
from archive_pipelines.warc.record_writer import DEFAULT_GZIP_LEVEL, RecordWriter
from archive_pipelines.warc.rendering_records import RENDERING_URNS, rendering_uri
from archive_pipelines.warc.stored_records import ReadAhead
from archive_pipelines.warc.warc_info import WarcInfo, warc_date

NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
_BATCH = 2_000
_FILE_BUFFER = 1024 * 1024
_RECORD_CACHE = 64


@dataclass(frozen=True)
class WrittenRecord:
    """A record as an index sees it: where it lies in the file and what it holds."""

    record_type: str  # response | revisit | request | metadata | resource
    uri: str
    fetched_ms: int
    content_type: str | None  # the HTTP Content-Type (the WARC one for a metadata record)
    status: int | None
    payload_digest: str | None
    offset: int
    length: int


@dataclass(frozen=True)
class ExportedPage:
    """A page (the top-level document of a visit) that got a response."""

    url: str
    fetched_ms: int
    title: str | None


@dataclass
class ExportReport(Counts):
    """What an export wrote, and what it could not."""

    captures: int = 0
    records: int = 0
    responses: int = 0
    revisits: int = 0
    requests: int = 0
    metadata: int = 0
    redirects: int = 0  # hop responses
    failed_fetches: int = 0  # metadata records of fetches without a response
    renderings: int = 0  # resource records of a page's screenshot or rendered DOM
    pages: int = 0
    skipped: int = 0  # captures left out (their body or record could not be read)
    payload_bytes: int = 0  # body bytes written in full
    warc_bytes: int = 0
    problems: list[str] = field(default_factory=list)
    digest_seconds: float = 0.0
    digest_bytes: int = 0

    def problem(self, line: str) -> None:
        self.skipped += 1
        add_line(self.problems, line)


@dataclass
class ExportSinks:
    """Who hears of each record and page written, and of progress (captures done)."""

    on_record: Callable[[WrittenRecord], None] | None = None
    on_page: Callable[[ExportedPage], None] | None = None
    on_progress: Callable[[int], None] | None = None


class _Records:
    """The crawler's records behind captures, a few kept (a record's captures come together)."""

    def __init__(self, data_dir: Path, store: BlobStore) -> None:
        self._data_dir = data_dir
        self._store = store
        self._cache: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
        self._ahead = ReadAhead()  # captures come in id order: an imported file's in file order

    def get(self, index_path: str, offset: int) -> dict[str, Any]:
        key = (index_path, offset)
        found = self._cache.get(key)
        if found is None:
            found = read_capture_record(self._data_dir, self._store, index_path,
                                        record_offset=offset, ahead=self._ahead)
            self._cache[key] = found
            if len(self._cache) > _RECORD_CACHE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return found


def _entry(record: dict[str, Any], index: int) -> dict[str, Any]:
    requests = record.get("requests")
    if isinstance(requests, list) and 0 <= index < len(requests) and isinstance(requests[index], dict):
        return requests[index]
    return {}


def _record_id() -> str:
    """A new WARC-Record-ID (warcio's own makes a uuid1, at ten times the cost)."""
    return f"<urn:uuid:{uuid.uuid4()}>"


def _fields(pairs: list[tuple[str, str]]) -> bytes:
    """application/warc-fields: `name: value` lines (line breaks in values flattened)."""
    lines = [f"{name}: {' '.join(str(value).split())}\r\n" for name, value in pairs]
    return "".join(lines).encode("utf-8")


@dataclass(frozen=True)
class ExportRun:
    """What every part of one export shares: its id (the record id of a body's first response
    derives from it and the capture, so a part can refer to a response another part wrote),
    the warcinfo record's id, and whether every body is written in full."""

    export_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    warcinfo_id: str = field(default_factory=lambda: f"<urn:uuid:{uuid.uuid4()}>")
    self_contained: bool = False

    def response_id(self, capture_id: int) -> str:
        """The record id of the response of capture `capture_id` that holds its body."""
        return f"<urn:uuid:{uuid.uuid5(uuid.UUID(self.export_id), str(capture_id))}>"


class WarcExport:
    """Captures into one open file: `write_warcinfo`, then `export_range` of the scope (all
    of it, or a run of ids: the parts of a parallel export). Which capture writes a body in
    full is the catalog's answer, not this file's history: the first capture of the scope
    (by id) with that body; the later ones are revisits of it. So parts written apart agree."""

    def __init__(self, *, catalog: Catalog, store: BlobStore, data_dir: Path, out: BinaryIO,
                 run: ExportRun, gzip_level: int = DEFAULT_GZIP_LEVEL,
                 sinks: ExportSinks | None = None) -> None:
        self._catalog = catalog
        self._store = store
        self._records = _Records(data_dir, store)
        self._writer = RecordWriter(out, gzip_level=gzip_level)
        self._builder = self._writer.builder
        self._run = run
        self._sinks = sinks or ExportSinks()
        self._firsts: dict[str, tuple[int, str, int]] = {}  # sha256 -> (capture id, uri, ms)
        self._clock = DigestClock()
        self._warcinfo_id = run.warcinfo_id
        self.report = ExportReport()

    def write_warcinfo(self, info: WarcInfo, *, filename: str) -> None:
        warcinfo = self._builder.create_warcinfo_record(filename, info.fields())
        warcinfo.rec_headers.replace_header("WARC-Record-ID", self._warcinfo_id)
        self._write(warcinfo, None)

    def export_range(self, scope: CaptureScope, *, from_id: int = 0,
                     to_id: int | None = None) -> ExportReport:
        """Every capture of the scope with an id in [from_id, to_id)."""
        if not self._run.self_contained:
            self._firsts = self._catalog.exports.first_with_bodies(scope, from_id=from_id,
                                                                   to_id=to_id)
        for capture in self._captures(scope, from_id=from_id, to_id=to_id):
            self.report.captures += 1
            self._capture(capture)
            if self._sinks.on_progress is not None:
                self._sinks.on_progress(1)
        self.report.digest_seconds = self._clock.seconds
        self.report.digest_bytes = self._clock.bytes
        return self.report

    def _captures(self, scope: CaptureScope, *, from_id: int, to_id: int | None
                  ) -> Iterator[ExportCapture]:
        after = from_id - 1
        while True:
            page = self._catalog.exports.page_in_scope(scope, after_id=after, limit=_BATCH,
                                                       before_id=to_id)
            yield from page
            if len(page) < _BATCH:
                return
            after = page[-1].id

    def _capture(self, capture: ExportCapture) -> None:
        where = f"capture {capture.id} ({capture.url[:200]} at {warc_date(capture.fetched_ms)})"
        if capture.kind in RENDERING_URNS:  # no exchange: its record is not needed
            try:
                self._rendering(capture)
            except PayloadProblem as exc:
                self.report.problem(f"{where}: {exc}")
            return
        try:
            record = self._records.get(capture.index_path, capture.record_offset)
        except (OSError, ValueError) as exc:
            self.report.problem(f"{where}: its crawl record cannot be read: {exc}")
            return
        entry = _entry(record, capture.request_index)
        if capture.kind == "redirect" and capture.body_sha256 is None:
            self._redirect(capture, entry)  # a hop the crawler followed: no response kept
        elif capture.status_code is None:
            self._failed(capture, record)
        else:
            try:
                response_id = self._exchange(capture, entry)
            except PayloadProblem as exc:
                self.report.problem(f"{where}: {exc}")
                return
            if capture.kind == "page":
                self._navigation(capture, record, response_id)

    def _headers(self, capture: ExportCapture, *, record_id: str | None = None,
                 **more: str) -> dict[str, str]:
        headers = {"WARC-Record-ID": record_id or _record_id(),
                   "WARC-Date": warc_date(capture.fetched_ms),
                   "WARC-Warcinfo-ID": self._warcinfo_id}
        headers.update(more)
        return headers

    def _request(self, capture: ExportCapture, entry: dict[str, Any], response_id: str) -> None:
        block = request_block(capture.url, entry.get("request_headers"))
        record = self._builder.create_warc_record(
            capture.url, "request", http_headers=block,
            warc_headers_dict=self._headers(capture, **{"WARC-Concurrent-To": response_id}))
        self._write(record, capture)
        self.report.requests += 1

    def _redirect(self, capture: ExportCapture, entry: dict[str, Any]) -> None:
        assert capture.status_code is not None
        block = redirect_block(capture.status_code, capture.final_url)
        payload = empty_payload(block.to_ascii_bytes())
        response_id = _record_id()
        self._response(capture, block, payload, record_id=response_id)
        self._request(capture, entry, response_id)
        self.report.redirects += 1

    def _exchange(self, capture: ExportCapture, entry: dict[str, Any]) -> str:
        """The request and its response (or revisit); the response's record id."""
        assert capture.status_code is not None
        response = entry.get("response") if isinstance(entry.get("response"), dict) else {}
        assert isinstance(response, dict)
        sha256, size = capture.body_sha256, capture.body_size or 0
        if sha256 is not None and not capture.stored:
            raise PayloadProblem(f"body sha256:{sha256} was not in the store when the crawl "
                                 "was ingested")
        if capture.status_code == 304 and sha256 is not None:
            response_id = self._unchanged(capture, response, sha256=sha256, size=size)
            self._request(capture, entry, response_id)
            return response_id
        block = response_block(capture.status_code, response.get("headers"),
                               payload_size=size if sha256 is not None else 0,
                               still_encoded=bool(response.get("body_encoding")))
        first = None
        if sha256 is not None and size > 0 and not self._run.self_contained:
            first = self._firsts.get(sha256)
        if first is not None and first[0] != capture.id:
            assert sha256 is not None
            response_id = _record_id()
            if not self._store.exists(sha256):
                raise PayloadProblem(f"body sha256:{sha256} is not in the store")
            self._revisit(capture, block, sha256=sha256, record_id=response_id, earlier=(
                first[1], warc_date(first[2]), self._run.response_id(first[0])))
        else:
            response_id = (self._run.response_id(capture.id) if first is not None
                           else _record_id())
            headers = block.to_ascii_bytes()
            payload = (empty_payload(headers) if sha256 is None else
                       read_payload(self._store, sha256, size=size, headers=headers,
                                    clock=self._clock))
            self._response(capture, block, payload, record_id=response_id)
        self._request(capture, entry, response_id)
        return response_id

    def _response(self, capture: ExportCapture, block: StatusAndHeaders, payload: Payload, *,
                  record_id: str) -> None:
        more = {"WARC-Block-Digest": payload.block_digest,
                "WARC-Payload-Digest": sha256_digest(capture.body_sha256) if capture.body_sha256
                else _EMPTY_SHA256}
        if capture.truncated:
            more["WARC-Truncated"] = "length"
        try:
            record = self._builder.create_warc_record(
                capture.url, "response", payload=payload.stream, length=payload.size,
                http_headers=block,
                warc_headers_dict=self._headers(capture, record_id=record_id, **more))
            self._write(record, capture)
        finally:
            payload.stream.close()
        self.report.responses += 1
        self.report.payload_bytes += payload.size

    def _unchanged(self, capture: ExportCapture, response: dict[str, Any], *, sha256: str,
                   size: int) -> str:
        """An unchanged capture's response record: a server-not-modified revisit (or, self
        contained, the body in full as the 200 it stands for); its record id."""
        if not self._store.exists(sha256):
            raise PayloadProblem(f"body sha256:{sha256} is not in the store")
        earlier = response.get("revisit_of")
        earlier = earlier if isinstance(earlier, dict) else {}
        headers = list(response.get("headers") or [])
        record_id = _record_id()
        if self._run.self_contained:
            content_type = earlier.get("content_type") or capture.content_type
            if content_type and not any(isinstance(pair, list | tuple) and len(pair) == 2
                                        and str(pair[0]).lower() == "content-type"
                                        for pair in headers):
                headers.append(["Content-Type", content_type])
            block = response_block(_status(earlier.get("status")), headers, payload_size=size)
            payload = read_payload(self._store, sha256, size=size, headers=block.to_ascii_bytes(),
                                   clock=self._clock)
            self._response(capture, block, payload, record_id=record_id)
            return record_id
        block = response_block(304, headers, payload_size=0)
        first = self._firsts.get(sha256)
        uri, at = earlier.get("url"), earlier.get("timestamp")
        refers_id = None
        if isinstance(uri, str) and isinstance(at, int | float) and not isinstance(at, bool):
            ms = round(at * 1000)
            if first is not None and (first[1], first[2]) == (uri, ms):
                refers_id = self._run.response_id(first[0])
        elif first is not None:
            uri, ms, refers_id = first[1], first[2], self._run.response_id(first[0])
        else:
            uri, ms = capture.url, capture.fetched_ms  # nothing known of the earlier one
        more = {"WARC-Refers-To": refers_id} if refers_id else {}
        record = self._builder.create_revisit_record(
            capture.url, sha256_digest(sha256), uri, warc_date(ms), http_headers=block,
            warc_headers_dict=self._headers(capture, record_id=record_id, **more))
        record.rec_headers.replace_header("WARC-Profile", NOT_MODIFIED_PROFILE)
        self._write(record, capture)
        self.report.revisits += 1
        return record_id

    def _revisit(self, capture: ExportCapture, block: StatusAndHeaders, *, sha256: str,
                 earlier: tuple[str, str, str], record_id: str) -> None:
        uri, date, earlier_id = earlier
        record = self._builder.create_revisit_record(
            capture.url, sha256_digest(sha256), uri, date, http_headers=block,
            warc_headers_dict=self._headers(capture, record_id=record_id,
                                            **{"WARC-Refers-To": earlier_id}))
        self._write(record, capture)
        self.report.revisits += 1

    def _rendering(self, capture: ExportCapture) -> None:
        """A page's screenshot or rendered DOM as a `resource` record."""
        sha256 = capture.body_sha256
        if sha256 is None or not capture.stored:
            raise PayloadProblem(f"body sha256:{sha256} was not in the store when the crawl "
                                 "was ingested")
        payload = read_payload(self._store, sha256, size=capture.body_size or 0, headers=b"",
                               clock=self._clock)
        content_type = capture.content_type or "application/octet-stream"
        more = {"WARC-Block-Digest": payload.block_digest,
                "WARC-Payload-Digest": sha256_digest(sha256), "Content-Type": content_type}
        try:
            record = self._builder.create_warc_record(
                rendering_uri(capture.kind, capture.url), "resource", payload=payload.stream,
                length=payload.size, warc_content_type=content_type,
                warc_headers_dict=self._headers(capture, **more))
            self._write(record, capture)
        finally:
            payload.stream.close()
        self.report.renderings += 1
        self.report.payload_bytes += payload.size

    def _navigation(self, capture: ExportCapture, record: dict[str, Any], response_id: str) -> None:
        """The page's metadata record, and the page for a page list."""
        title = record.get("title") if isinstance(record.get("title"), str) else None
        pairs: list[tuple[str, str]] = []
        if capture.navigation_id:
            pairs.append(("navigation-id", capture.navigation_id))
        if capture.depth is not None:
            pairs.append(("depth", str(capture.depth)))
        if title:
            pairs.append(("title", title))
        for hop in _entry(record, 0).get("redirects") or []:
            if isinstance(hop, dict):
                pairs.append(("redirect", f"{hop.get('url')} {hop.get('status')} {hop.get('location')}"))
        requests = record.get("requests") if isinstance(record.get("requests"), list) else []
        assert isinstance(requests, list)
        for sub in requests[1:]:
            if isinstance(sub, dict) and isinstance(sub.get("url"), str):
                refused = sub.get("refused")  # a browser's request the crawl did not fetch
                pairs.append(("refused-request", f"{sub['url']} {refused}") if isinstance(
                    refused, str) else ("request", sub["url"]))
        self._metadata(capture, pairs, concurrent_to=response_id)
        self.report.pages += 1
        if self._sinks.on_page is not None:
            self._sinks.on_page(ExportedPage(capture.url, capture.fetched_ms, title))

    def _failed(self, capture: ExportCapture, record: dict[str, Any]) -> None:
        pairs = [("fetch-error", capture.error or "no response")]
        if capture.navigation_id:
            pairs.append(("navigation-id", capture.navigation_id))
        if capture.kind == "page" and not record.get("requests"):
            pairs.append(("fetched", "no (not attempted)"))
        self._metadata(capture, pairs)
        self.report.failed_fetches += 1

    def _metadata(self, capture: ExportCapture, pairs: list[tuple[str, str]], *,
                  concurrent_to: str | None = None) -> None:
        body = _fields(pairs)
        more = {"Content-Type": "application/warc-fields"}
        if concurrent_to is not None:
            more["WARC-Concurrent-To"] = concurrent_to
        record = self._builder.create_warc_record(
            capture.url, "metadata", payload=io.BytesIO(body), length=len(body),
            warc_content_type="application/warc-fields",
            warc_headers_dict=self._headers(capture, **more))
        self._write(record, capture)
        self.report.metadata += 1

    def _write(self, record: ArcWarcRecord, capture: ExportCapture | None) -> None:
        self.report.records += 1
        on_record = self._sinks.on_record
        if capture is None or on_record is None:
            self._writer.write(record)
            return
        http = record.http_headers
        status = capture.status_code if record.rec_type in ("response", "revisit") else None
        if record.rec_type in ("response", "revisit", "request"):
            content_type = http.get_header("Content-Type") if http is not None else None
        else:
            content_type = record.rec_headers.get_header("Content-Type")
        kind, fetched_ms = record.rec_type, capture.fetched_ms
        uri = record.rec_headers.get_header("WARC-Target-URI") or capture.url
        digest = record.rec_headers.get_header("WARC-Payload-Digest")

        def placed(offset: int, length: int) -> None:  # on the compressing thread
            on_record(WrittenRecord(kind, uri, fetched_ms, content_type, status, digest,
                                    offset, length))

        self._writer.write(record, placed)

    def close(self) -> None:
        """Wait for the last record to reach the file."""
        self._writer.close()
        self.report.warc_bytes = self._writer.position


def _status(value: object) -> int:
    """The earlier capture's status as recorded (200 when the record does not say)."""
    return value if isinstance(value, int) and not isinstance(value, bool) \
        and 200 <= value <= 299 else 200


_EMPTY_SHA256 = sha256_digest("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")


def export_file(path: Path, *, catalog: Catalog, store: BlobStore, data_dir: Path,
                scope: CaptureScope, info: WarcInfo, gzip_level: int = DEFAULT_GZIP_LEVEL,
                sinks: ExportSinks | None = None) -> ExportReport:
    """Export `scope` into the WARC file `path` (.warc.gz), in this process. Written beside
    it under a temporary name, synced, then renamed: a crash leaves no partial file under
    `path`."""
    part = path.with_name(f".{path.name}.part")
    try:
        with open(part, "wb", buffering=_FILE_BUFFER) as handle:
            export = WarcExport(catalog=catalog, store=store, data_dir=data_dir, out=handle,
                                run=ExportRun(self_contained=info.self_contained),
                                gzip_level=gzip_level, sinks=sinks)
            try:
                export.write_warcinfo(info, filename=path.name)
                report = export.export_range(scope)
            finally:
                export.close()
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    return report


def describe_scope(scope: CaptureScope) -> str:
    """One line for the warcinfo record and the report: what was exported."""
    parts = []
    if scope.sessions:
        parts.append("sessions " + ", ".join(scope.sessions))
    if scope.canonical_prefix is not None:
        parts.append(f"URLs under {scope.canonical_prefix}")
    elif scope.site is not None:
        parts.append(f"site {scope.site}")
    if scope.from_ms is not None:
        parts.append(f"from {warc_date(scope.from_ms)}")
    if scope.to_ms is not None:
        parts.append(f"to {warc_date(scope.to_ms)}")
    return "captures of " + ("; ".join(parts) if parts else "the whole archive")

