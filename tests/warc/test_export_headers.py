"""Headers that describe the payload, on a real crawl of a site that answers gzip-encoded and
chunked: the store holds the decoded bodies, so the exported responses carry no
Content-Encoding or Transfer-Encoding, a Content-Length equal to the payload, and the values
the server sent as X-Original-<Name>; warcio reads each body as the store holds it."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.catalog import CaptureScope
from archive_pipelines.warc.exporter import export_file
from archive_pipelines.warc.warc_info import WarcInfo
from frontier_service.service.service import CrawlerService
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.captures import capture_primary, open_parts
from tests.helpers.crawls import delete_keys

PAGE = ("<html><head><title>gzip site</title><link rel=stylesheet href=/style.css></head>"
        "<body>" + "<p>words of the page</p>" * 200 + "<a href=/plain.txt>plain</a></body></html>")
CSS = "body { color: #123456 }\n" * 100
PLAIN = "not compressed\n" * 10


async def _compressed(request: web.Request, text: str, content_type: str) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": content_type})
    response.enable_chunked_encoding()
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        response.enable_compression(web.ContentCoding.gzip)
    await response.prepare(request)
    await response.write(text.encode())
    await response.write_eof()
    return response


def _app() -> web.Application:
    app = web.Application()

    async def page(request: web.Request) -> web.StreamResponse:
        return await _compressed(request, PAGE, "text/html; charset=utf-8")

    async def css(request: web.Request) -> web.StreamResponse:
        return await _compressed(request, CSS, "text/css")

    async def plain(_request: web.Request) -> web.Response:
        return web.Response(text=PLAIN)

    async def robots(_request: web.Request) -> web.Response:
        return web.Response(status=404)

    app.router.add_get("/", page)
    app.router.add_get("/style.css", css)
    app.router.add_get("/plain.txt", plain)
    app.router.add_get("/robots.txt", robots)
    return app


@pytest.fixture(scope="module")
def gzip_site() -> Iterator[int]:
    """The site on a free loopback port, in a thread of its own; yields the port."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(_app())
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.run_until_complete(runner.cleanup())
        loop.close()


@pytest.fixture(scope="module")
def exported(gzip_site: int, redis_url: str, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("gzip-export")
    data_dir = root / "data"
    name = f"gz-{root.name[-8:]}"
    settings = crawler_settings(data_dir, redis_url, name, gzip_site, max_depth=1,
                                min_delay_s=0.0, response_time_factor=0.0)
    try:
        asyncio.run(CrawlerService(settings, seeds=("http://gz.test/",)).run())
    finally:
        delete_keys(redis_url, name)
    out = root / "gz.warc.gz"
    with open_parts(data_dir) as parts:
        assert not ingest_crawl(parts.catalog, capture_primary(parts), data_dir).failed
        report = export_file(out, catalog=parts.catalog, store=parts.primary.store,
                             data_dir=data_dir, scope=CaptureScope(), info=WarcInfo())
        parts.catalog.engine.dispose()
    assert report.responses >= 3 and not report.problems
    yield out
    shutil.rmtree(data_dir, ignore_errors=True)


def test_compressed_answers_are_exported_decoded_with_their_original_headers(exported: Path) -> None:
    bodies: dict[str, tuple[bytes, dict[str, str]]] = {}
    with open(exported, "rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            if record.rec_type != "response" or record.http_headers is None:
                continue
            headers = {name.lower(): value for name, value in record.http_headers.headers}
            raw = record.raw_stream.read()
            assert "transfer-encoding" not in headers and "content-encoding" not in headers
            assert headers["content-length"] == str(len(raw))
            path = record.rec_headers.get_header("WARC-Target-URI").split("gz.test", 1)[1]
            bodies[path] = (raw, headers)
    assert bodies["/"][0] == PAGE.encode() and bodies["/style.css"][0] == CSS.encode()
    for path in ("/", "/style.css"):
        headers = bodies[path][1]
        assert headers["x-original-content-encoding"] == "gzip"
        assert headers["x-original-transfer-encoding"] == "chunked"
    assert bodies["/plain.txt"][0] == PLAIN.encode()
    assert "x-original-content-encoding" not in bodies["/plain.txt"][1]
