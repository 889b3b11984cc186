"""A memento's answer: `/web/<timestamp><modifier>/<url>` and the TimeGate `/web/<url>`.

The capture nearest the timestamp is found (its URL by SURT key); when its own 14-digit
timestamp differs from the one asked, the answer is a redirect to it, so every memento has
one URI. A recorded redirect replays as that redirect, its Location sent into the archive at
the same time. Otherwise the capture's status and headers (neutralised: `responses`) come
with its body, streamed from the store (hot small bodies from memory), rewritten when it is
HTML or CSS (`rewriting`), or as bytes with `Range` (206/416) when it is not.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urljoin

from aiohttp import web

from archive_pipelines.blobstore.store_errors import BlobNotFound, BlobStoreError
from archive_pipelines.catalog import Capture
from archive_pipelines.replay.archive import Found, ReplayArchive
from archive_pipelines.replay.banner import render_banner
from archive_pipelines.replay.body_cache import BodyCache, CorruptBody, read_chunk
from archive_pipelines.replay.capture_headers import CaptureHeaders, RecordedResponse
from archive_pipelines.replay.memento import (
    Paths,
    header_uri,
    http_date,
    link_header,
    parse_http_date,
)
from archive_pipelines.replay.metrics import ReplayMetrics
from archive_pipelines.replay.pages import describe, error_page
from archive_pipelines.replay.responses import (
    REPLAY_CSP,
    ByteRange,
    Unsatisfiable,
    parse_range,
    replay_headers,
)
from archive_pipelines.replay.rewriting import BodyRewriter, body_rewriter
from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.replay.wayback_paths import WaybackPath

PATHS = Paths()  # root-relative: the replay works under whatever host name it is reached by
_HTML = "text/html"


class ReplayProblem(Exception):
    """An answer that is an error page: its status, title, message and links."""

    def __init__(self, status: int, title: str, message: str, *,
                 links: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message
        self.links = links

    def response(self) -> web.Response:
        return web.Response(status=self.status, text=error_page(self.title, self.message,
                                                               links=self.links),
                            content_type=_HTML, charset="utf-8",
                            headers={"Content-Security-Policy": REPLAY_CSP})


@dataclass
class Replayer:
    """What the replay routes read from: the catalog (in worker threads), capture headers
    and bodies (cached), and the counters."""

    archive: ReplayArchive
    headers: CaptureHeaders
    bodies: BodyCache
    pool: Executor
    metrics: ReplayMetrics
    banner: bool = True
    send_timeout_s: float = 60.0

    async def blocking(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, lambda: function(*args, **kwargs))

    async def find(self, url: str, *, at_ms: int | None) -> Found:
        if self.archive.excluded(url):
            raise ReplayProblem(403, "Withdrawn", f"{url} has been withdrawn from this archive.")
        found: Found | None = await self.blocking(self.archive.nearest, url, at_ms=at_ms)
        if found is None:
            raise ReplayProblem(404, "Not in the archive",
                                f"The archive holds no capture of {url}.",
                                links=((f"/web/*/{url}", "Every capture under this URL"),))
        return found

    async def timegate(self, request: web.Request, url: str) -> web.StreamResponse:
        """RFC 7089 TimeGate: a 302 to the memento nearest `Accept-Datetime` (the latest
        without one)."""
        asked = request.headers.get("Accept-Datetime")
        at_ms = None
        if asked is not None:
            at_ms = parse_http_date(asked)
            if at_ms is None:
                raise ReplayProblem(400, "Bad Accept-Datetime",
                                    f"Accept-Datetime {asked[:100]!r} is not an HTTP date "
                                    "(e.g. Tue, 20 Jun 2000 18:02:59 GMT).")
        found = await self.find(url, at_ms=at_ms)
        original = found.capture.url
        return web.Response(status=302, headers={
            "Location": PATHS.memento(found.memento), "Vary": "accept-datetime",
            "Link": link_header(original, PATHS, memento=None, neighbours=found.neighbours),
            "Content-Length": "0"})

    async def memento(self, request: web.Request, path: WaybackPath) -> web.StreamResponse:
        found = await self.find(path.url, at_ms=path.at_ms)
        capture = found.capture
        timestamp = timestamp_of(capture.fetched_ms)
        link = link_header(capture.url, PATHS, memento=found.memento,
                           neighbours=found.neighbours)
        if timestamp != path.timestamp:
            return web.Response(status=302, headers={
                "Location": PATHS.memento(found.memento, path.modifier), "Link": link,
                "Content-Length": "0"})
        headers = {"Memento-Datetime": http_date(capture.fetched_ms), "Link": link,
                   "Content-Security-Policy": REPLAY_CSP}
        status = capture.replay_status  # an unchanged capture (304) replays as its 200
        if 300 <= status < 400:
            return await self._redirect(capture, path, headers)
        recorded = await self._recorded(capture)
        return await self._body(request, found, path=path, recorded=recorded, headers=headers)

    async def _recorded(self, capture: Capture) -> RecordedResponse | None:
        try:
            recorded: RecordedResponse | None = await self.blocking(
                self.headers.response, index_path=capture.index_path,
                record_offset=capture.record_offset, url=capture.url,
                request_index=capture.request_index)
        except (OSError, ValueError):
            return None  # the body still replays, with the catalog's status and type only
        return recorded

    async def _redirect(self, capture: Capture, path: WaybackPath,
                        headers: dict[str, str]) -> web.StreamResponse:
        location = capture.final_url if capture.kind == "redirect" else None
        if location is None or location == capture.url:
            recorded = await self._recorded(capture)
            location = next((value for name, value in (recorded.headers if recorded else ())
                             if name.lower() == "location"), None)
        if location is None:
            raise ReplayProblem(502, "Redirect without a target",
                                f"{describe(capture)} is a redirect ({capture.status_code}) "
                                "whose Location was not recorded.")
        target = urljoin(capture.url, location)
        if not target.lower().startswith(("http://", "https://")):
            raise ReplayProblem(502, "Redirect out of the web",
                                f"{describe(capture)} redirects to {target[:200]}, "
                                "which is not an http(s) URL.")
        self.metrics.mementos += 1
        headers["Location"] = header_uri(
            f"/web/{timestamp_of(capture.fetched_ms)}{path.modifier}/{target}")
        headers["Content-Length"] = "0"
        return web.Response(status=capture.status_code or 302, headers=headers)

    def banner_html(self, found: Found) -> str:
        """The banner over a replayed page: its time and URL, its neighbours, its calendar."""
        capture, near = found.capture, found.neighbours
        return render_banner(
            timestamp=timestamp_of(capture.fetched_ms), original_url=capture.url,
            calendar_href=f"/web/*/{capture.url}",
            previous_href=None if near.prev is None else PATHS.memento(near.prev),
            next_href=None if near.next is None else PATHS.memento(near.next))

    async def _body(self, request: web.Request, found: Found, *, path: WaybackPath,
                    recorded: RecordedResponse | None,
                    headers: dict[str, str]) -> web.StreamResponse:
        capture = found.capture
        sha256, size = capture.body_sha256, capture.body_size or 0
        if sha256 is None:
            raise ReplayProblem(404, "Body not stored", f"{describe(capture)} has no stored body.")
        out = web.StreamResponse(status=capture.replay_status)
        for name, value in replay_headers(recorded.headers if recorded else ()):
            out.headers.add(name, value)
        out.headers.update(headers)
        # The recorded Content-Type keeps the charset the catalog's media type lacks.
        content_type = next((value for name, value in (recorded.headers if recorded else ())
                             if name.lower() == "content-type" and value.isascii()
                             and value.strip()), None) or capture.content_type \
            or "application/octet-stream"
        out.headers["Content-Type"] = content_type
        still_encoded = recorded is not None and recorded.still_encoded
        if recorded is not None and still_encoded:  # the bytes are as the server encoded them
            encoding = next((value for name, value in recorded.headers
                             if name.lower() == "content-encoding"), None)
            if encoding:
                out.headers["Content-Encoding"] = encoding
        self.metrics.mementos += 1
        rewriter = None if still_encoded else body_rewriter(
            content_type=content_type, modifier=path.modifier, timestamp=path.timestamp,
            page_url=capture.url, banner=self.banner_html(found) if self.banner else None)
        if rewriter is not None:
            whole = ByteRange(0, size - 1, size) if size else None
            opened = await self._open_or_fail(request, capture, sha256=sha256, size=size, span=whole)
            return await self._stream(request, out, capture=capture, sha256=sha256, span=whole,
                                      rewriter=rewriter, opened=opened)
        out.headers["Accept-Ranges"] = "bytes"
        try:
            wanted = parse_range(request.headers.get("Range"), size)
        except Unsatisfiable:
            raise ReplayProblemWithHeaders(416, {"Content-Range": f"bytes */{size}"}) from None
        if wanted is not None:
            out.set_status(206)
            out.headers["Content-Range"] = wanted.content_range()
        span = wanted or (ByteRange(0, size - 1, size) if size else None)
        out.content_length = span.length if span else 0
        opened = await self._open_or_fail(request, capture, sha256=sha256, size=size, span=span)
        return await self._stream(request, out, capture=capture, sha256=sha256, span=span,
                                  rewriter=None, opened=opened)

    async def _stream(self, request: web.Request, out: web.StreamResponse, *, capture: Capture,
                      sha256: str, span: ByteRange | None, rewriter: BodyRewriter | None,
                      opened: BinaryIO | None = None) -> web.StreamResponse:
        """Headers, then the body (from `opened` when the reader is open already). When it
        cannot be finished (the client left or stopped reading, the store's bytes ran out),
        the connection is dropped, so the client sees an incomplete body rather than a short
        one that looks whole; no error is logged."""
        try:
            await out.prepare(request)
            try:
                if request.method != "HEAD":
                    reader, opened = opened, None  # _send closes it
                    await self._send(out, capture=capture, sha256=sha256, span=span,
                                     rewriter=rewriter, opened=reader)
                await out.write_eof()
            except ConnectionError:
                if request.transport is not None:
                    request.transport.abort()
        finally:
            if opened is not None:
                await self.blocking(opened.close)
        return out

    async def _open_or_fail(self, request: web.Request, capture: Capture, *, sha256: str,
                            size: int, span: ByteRange | None) -> BinaryIO | None:
        """Before any header is sent: a small body read (checked, cached), a large one looked
        up (a missing or corrupt one is an error page). In an object store a large body's
        lookup is its GET, the reader kept for sending (returned): a HEAD first would be a
        request more."""
        if (size <= self.bodies.max_item or span is None or request.method == "HEAD"
                or self.bodies.store.local_path(sha256) is not None):
            await self._read_or_fail(capture, sha256, size, probe=True)
            return None
        try:
            reader: BinaryIO = await self.blocking(self.bodies.open, sha256, start=span.start)
        except BlobNotFound:
            self.metrics.missing_bodies += 1
            raise ReplayProblem(404, "Body missing from the store",
                                f"The body of {describe(capture)} (sha256:{sha256}) is missing "
                                "from the store.") from None
        except BlobStoreError as exc:
            self.metrics.corrupt_bodies += 1
            raise ReplayProblem(502, "Corrupt body",
                                f"The body of {describe(capture)} (sha256:{sha256}) cannot be "
                                f"read from the store: {exc}") from None
        return reader

    async def _read_or_fail(self, capture: Capture, sha256: str, size: int, *,
                            probe: bool) -> bytes | None:
        """The whole body when small (checked, cached): a missing or corrupt one is an error
        page before any byte is sent. Large bodies are only opened here (then streamed)."""
        try:
            if size <= self.bodies.max_item:
                hit = self.bodies.cache.get(sha256)
                if hit is not None:
                    return hit
                data: bytes = await self.blocking(self.bodies.whole, sha256, size=size)
                return data
            if probe:
                exists = await self.blocking(self.bodies.store.exists, sha256)
                if not exists:
                    raise BlobNotFound(sha256)
            return None
        except BlobNotFound:
            self.metrics.missing_bodies += 1
            raise ReplayProblem(404, "Body missing from the store",
                                f"The body of {describe(capture)} (sha256:{sha256}) is missing "
                                "from the store.") from None
        except (CorruptBody, BlobStoreError) as exc:
            self.metrics.corrupt_bodies += 1
            raise ReplayProblem(502, "Corrupt body",
                                f"The body of {describe(capture)} (sha256:{sha256}) cannot be "
                                f"read from the store: {exc}") from None

    async def _send(self, out: web.StreamResponse, *, capture: Capture, sha256: str,
                    span: ByteRange | None, rewriter: BodyRewriter | None,
                    opened: BinaryIO | None = None) -> None:
        """The body's bytes of `span` (from `opened`, a large body's reader, when given: it is
        closed here)."""
        if span is None:
            if opened is not None:
                await self.blocking(opened.close)
            if rewriter is not None:
                await self._write(out, rewriter.close())
            return
        small = self.bodies.cache.get(sha256) \
            if opened is None and span.size <= self.bodies.max_item else None
        if small is not None:
            chunk = small[span.start:span.end + 1]
            await self._write(out, rewriter.feed(chunk) + rewriter.close() if rewriter else chunk)
            return
        if opened is not None:
            reader = opened
        else:
            try:
                reader = await self.blocking(self.bodies.open, sha256, start=span.start)
            except BlobStoreError as exc:  # gone since it was looked at: the headers are sent
                self.metrics.missing_bodies += 1
                raise ConnectionResetError(f"{describe(capture)}: {exc}") from None
        try:
            left = span.length
            while left > 0:
                try:
                    chunk = await self.blocking(read_chunk, reader, left)
                except CorruptBody:
                    self.metrics.corrupt_bodies += 1
                    raise ConnectionResetError(f"{describe(capture)}: stored body corrupt") \
                        from None
                left -= len(chunk)
                await self._write(out, rewriter.feed(chunk) if rewriter else chunk)
            if rewriter is not None:
                await self._write(out, rewriter.close())
        finally:
            await self.blocking(reader.close)

    async def _write(self, out: web.StreamResponse, data: bytes) -> None:
        if not data:
            return
        try:
            await asyncio.wait_for(out.write(data), self.send_timeout_s)
        except TimeoutError:
            self.metrics.slow_clients_cut += 1
            raise ConnectionResetError("the client stopped reading") from None
        self.metrics.body_bytes += len(data)


class ReplayProblemWithHeaders(ReplayProblem):
    """An error answer that carries headers (416's Content-Range)."""

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        super().__init__(status, "Range not satisfiable", "The range asked for lies past the "
                         "end of this capture's body.")
        self.headers = headers

    def response(self) -> web.Response:
        answer = super().response()
        answer.headers.update(self.headers)
        return answer
