"""Page titles end to end on a real crawl of the test web: the crawler reads each HTML page's
<title>, its record keeps it, ingest puts it on the page capture and lookups return it.

The expected titles come from another parser (the standard library's html.parser, reading
the body the store holds), not from the crawler's own extraction."""

from __future__ import annotations

import asyncio
import html
import re
import uuid
from html.parser import HTMLParser
from pathlib import Path

import pytest

from archive_pipelines.captures.lookup import find_session, find_url
from archive_pipelines.captures.record_files import read_record
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit.testweb import TestWeb, hosts_where, page_path, render_page
from archive_testkit.testweb.asset_pages import MANY
from archive_testkit.testweb.graph import IDN_HOST
from archive_testkit.testweb.hosts import RobotsKind
from frontier_service.service.service import CrawlerService
from tests.frontier_service.service.web import WEB, crawler_settings
from tests.helpers.captures import capture_rows, ingest_all, parts_of
from tests.helpers.crawls import Crawled, delete_keys

_WHITESPACE = re.compile(r"[\t\n\f\r ]+")


class _FirstTitle(HTMLParser):
    """The raw text of a document's first <title> (read as RCDATA: tags inside are text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.parts: list[str] | None = None
        self.done = False

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "title" and self.parts is None:
            self.parts = []
            self.set_cdata_mode("title")  # type: ignore[attr-defined]

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.parts is not None:
            self.done = True

    def handle_data(self, data: str) -> None:
        if self.parts is not None and not self.done:
            self.parts.append(data)


def expected_title(body: bytes) -> str | None:
    """The title a browser shows for a test-web page (served as UTF-8)."""
    parser = _FirstTitle()
    parser.feed(body.decode("utf-8", errors="replace"))
    if parser.parts is None:
        return None
    text = _WHITESPACE.sub(" ", html.unescape("".join(parser.parts))).strip(" ")
    return text[:1_000].rstrip(" ") or None


def test_page_captures_carry_the_html_title_of_their_body(
        crawled: Crawled, crawl_data: Path, catalog_url: str) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)
        rows = capture_rows(parts.catalog)
        titled: dict[str, str] = {}
        for row in rows:
            parsed_html = (row["kind"] == "page" and row["content_type"] == "text/html"
                           and row["status_code"] is not None and 200 <= row["status_code"] < 300
                           and row["body_blob_id"] is not None)
            if not parsed_html:  # not read for links: sub-requests, redirects, errors, non-HTML
                assert row["title"] is None, row
                continue
            with parts.primary.store.open(row["body_sha256"]) as handle:
                expected = expected_title(handle.read())
            assert row["title"] == expected, row["url"]
            record = read_record(crawl_data, row["index_path"], row["record_offset"])
            assert record["title"] == expected  # the record on disk says the same
            if expected is not None:
                titled[row["url"]] = expected
        assert len(titled) > 100, len(titled)
        # A non-ASCII title (the internationalised host's page, read as UTF-8), and a lying
        # charset's replacement characters.
        idn = [title for url, title in titled.items() if "xn--" in url]
        assert idn == ["B\u00fccher"], idn
        assert "Caf\ufffd cr\ufffdme" in titled.values()
        # Lookups hand the title back: by URL, and in a session's pages.
        url, title = next((u, t) for u, t in titled.items() if "xn--" in u)
        _canonical, found = find_url(parts.catalog, url)
        assert [c.title for c in found if c.kind == "page"] == [title]
        pages = find_session(parts.catalog, crawled.report.session_id, every_request=False)
        assert {c.url: c.title for c in pages if c.title is not None} == titled
        assert IDN_HOST.encode("idna").decode() in url


SPECIAL = hosts_where(WEB, lambda t: t.alive and t.special and not t.traps
                      and t.robots in (RobotsKind.STANDARD, RobotsKind.NONE))[0]


def test_odd_pages_titles_from_a_crawl_of_them(captures_web: TestWeb, redis_url: str,
                                               tmp_path: Path) -> None:
    """The pages the shared crawl does not reach: malformed HTML, a 2xx page with no title,
    an error page; each page's capture has what a browser would show (or None)."""
    base = f"http://{SPECIAL}"
    ordinary = page_path(4)
    rendered = render_page(WEB, SPECIAL, ordinary).decode()
    expected = {
        f"{base}/malformed/page.html": "Broken <b>title",  # a title's text is never markup
        f"{base}/enc/latin1.html": "Caf\ufffd cr\ufffdme",
        f"{base}{MANY}": None,  # HTML with no <title>
        f"{base}/error/1": None,  # a 500 page: not read
        f"{base}{ordinary}": rendered.split("<title>", 1)[1].split("</title>", 1)[0],
        f"http://{IDN_HOST.encode('idna').decode()}/": "B\u00fccher",
    }
    data_dir = tmp_path / "data"
    initialize(Settings(data_dir=data_dir))
    name = f"titles-{uuid.uuid4().hex[:10]}"
    settings = crawler_settings(data_dir, redis_url, name, captures_web.port, max_depth=0,
                                fetch_assets=False, min_delay_s=0.0, response_time_factor=0.0)
    try:
        report = asyncio.run(CrawlerService(settings, seeds=tuple(expected)).run())
    finally:
        delete_keys(redis_url, name)
    assert report.pages == len(expected)
    with parts_of(data_dir) as parts:
        ingest_all(parts, data_dir)
        pages = {row["url"]: row for row in capture_rows(parts.catalog) if row["kind"] == "page"}
    assert {url: row["title"] for url, row in pages.items()} == expected
    assert pages[f"{base}/error/1"]["status_code"] == 500
    assert pages[f"{base}{MANY}"]["status_code"] == 200


@pytest.mark.unit
def test_the_reference_parser_reads_titles_as_a_browser_does() -> None:
    """The expectation above is only as good as this reading of it."""
    assert expected_title(b"<title> a\n &amp; <b>b</b> </title><title>no</title>") == "a & <b>b</b>"
    assert expected_title(b"<html><body>none</body></html>") is None
    assert expected_title(b"<title>Caf\xe9</title>") == "Caf\ufffd"
