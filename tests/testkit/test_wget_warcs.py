"""Debian's real wget crawling a test web site through the test web as its proxy: the WARC it writes.

Not skipped without wget: `make test` installs it (scripts/ensure-system-deps.sh), and the
import's interop with a third-party writer rests on these.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive_testkit.testweb import TestWeb, serve_in_background
from archive_testkit.testweb.config import TestWebConfig
from archive_testkit.warc_reading import read_warc
from archive_testkit.wget_warcs import WgetCrawl, read_wget_warc, wget_crawl

SITE = TestWebConfig(hosts=3, pages_per_host=30, links_per_page=6, cross_host_fraction=0.0,
                     page_min_bytes=2_000, page_max_bytes=5_000, special_fraction=0.0,
                     trap_fraction=0.0, dead_fraction=0.0, huge_robots_hosts=0)
START = "http://site0000.test/"
START_REQUISITES = ("/static/site.css", "/static/font.woff2", "/static/app.js", "/img/logo.png")


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(SITE) as running:
        yield running


@pytest.fixture(scope="module")
def crawl(web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> WgetCrawl:
    return wget_crawl(START, tmp_path_factory.mktemp("wget"), proxy=f"127.0.0.1:{web.port}")


def test_the_warc_reads_with_digests_checked_and_has_wgets_record_kinds(crawl: WgetCrawl) -> None:
    records = read_warc(crawl.warc.read_bytes())  # raises on a block or payload digest mismatch
    kinds = [record.kind for record in records]
    assert kinds[0] == "warcinfo"
    assert kinds[-3:] == ["metadata", "resource", "resource"]
    assert kinds[1:-3] == ["request", "response"] * len(crawl.responses)
    assert b"software: Wget/1.21" in records[0].payload
    assert all(record.header("WARC-Payload-Digest") for record in records if record.kind == "response")


def test_target_uris_name_the_virtual_host_not_the_loopback_port(crawl: WgetCrawl, web: TestWeb) -> None:
    assert crawl.urls[0] == START
    assert {urlsplit(url).netloc for url in crawl.urls} == {"site0000.test"}
    assert web.requests_for("site0000.test"), "the test web saw wget's requests under the virtual host"


def test_the_start_pages_requisites_and_links_were_fetched(crawl: WgetCrawl) -> None:
    start = crawl.payload(START)
    page = next(r.payload for r in read_warc(crawl.warc.read_bytes()) if r.header("WARC-Target-URI") == START
                and r.kind == "response")
    assert hashlib.sha256(page).hexdigest() == start.decoded_sha256
    paths = {urlsplit(url).path for url in crawl.urls}
    for requisite in START_REQUISITES:
        assert f'"{requisite}"'.encode() in page  # the page names it, and wget fetched it
        assert requisite in paths
    assert "/robots.txt" in paths
    assert any(p.endswith(".html") for p in paths)  # a page the start page links (level 1)


def test_the_log_lists_every_saved_file_and_identity_encoding_was_asked(crawl: WgetCrawl) -> None:
    saved = [response.url for response in crawl.responses if response.status == 200]
    assert sorted(crawl.logged_urls) == sorted(saved)
    assert all(r.sent_sha256 == r.decoded_sha256 and r.content_encoding is None for r in crawl.responses)
    requests = [r for r in read_warc(crawl.warc.read_bytes()) if r.kind == "request"]
    assert {dict(r.http_headers).get("Accept-Encoding") for r in requests} == {"identity"}


def test_compression_asks_for_gzip(web: TestWeb, tmp_path: Path) -> None:
    crawled = wget_crawl(f"{START}robots.txt", tmp_path, proxy=f"127.0.0.1:{web.port}", compression=True,
                         recursive_depth=0)
    requests = [r for r in read_warc(crawled.warc.read_bytes()) if r.kind == "request"]
    assert [dict(r.http_headers).get("Accept-Encoding") for r in requests] == ["gzip"]
    assert crawled.urls == [f"{START}robots.txt"]


def test_the_offsets_point_at_each_response(crawl: WgetCrawl) -> None:
    with crawl.warc.open("rb") as stream:
        for response in crawl.responses:
            stream.seek(response.offset)
            record = next(iter(ArchiveIterator(stream)))
            assert (record.rec_type, record.rec_headers.get_header("WARC-Target-URI")) == ("response",
                                                                                          response.url)


@pytest.mark.unit
def test_a_gzip_encoded_payload_has_its_sent_and_decoded_digests(tmp_path: Path) -> None:
    body = b"<html>" + b"compressible " * 200 + b"</html>"
    sent = gzip.compress(body)
    out = BytesIO()
    writer = WARCWriter(out, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
                                       ("Content-Length", str(len(sent)))], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record("http://a.test/", "response", payload=BytesIO(sent),
                                                  length=len(sent), http_headers=http))
    (tmp_path / "one.warc.gz").write_bytes(out.getvalue())
    responses, _log = read_wget_warc(tmp_path / "one.warc.gz")
    assert [(r.content_encoding, r.sent_sha256, r.decoded_sha256) for r in responses] == [
        ("gzip", hashlib.sha256(sent).hexdigest(), hashlib.sha256(body).hexdigest())]
