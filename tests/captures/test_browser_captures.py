"""A browser page load ingested: its screenshot and DOM are captures of their own, shown with
their page and found by their hash, never an answer to a lookup of the page's URL."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.captures.lookup import find_body, find_session, find_url
from archive_pipelines.captures.renderings import newest_rendering, renderings_of
from archive_pipelines.catalog import Catalog
from archive_pipelines.surt import urlkey
from tests.helpers.browser_records import (
    AT_S,
    PAGE_URL,
    SITE,
    BrowserCrawl,
    ingested_browser_crawl,
)
from tests.helpers.replay import opened_catalog


@pytest.fixture(scope="module")
def browser_crawl(tmp_path_factory: pytest.TempPathFactory) -> BrowserCrawl:
    return ingested_browser_crawl(tmp_path_factory.mktemp("browser") / "data", records=2)


@pytest.fixture(scope="module")
def browser_catalog(browser_crawl: BrowserCrawl) -> Iterator[Catalog]:
    with opened_catalog(browser_crawl.data_dir) as catalog:
        yield catalog


def test_the_ingest_counts_renderings_as_captures_but_not_as_failed_fetches(
        browser_crawl: BrowserCrawl) -> None:
    report = browser_crawl.report
    assert (report["pages"], report["captures"], report["rejected"]) == (2, 10, 0)
    assert report["stored_bodies"] == 10 and report["missing_bodies"] == 0
    assert report["status_classes"] == {"2xx": 6}


def test_a_lookup_of_the_pages_url_lists_its_page_captures_only(browser_catalog: Catalog) -> None:
    _canonical, found = find_url(browser_catalog, PAGE_URL)
    assert [c.kind for c in found] == ["page", "page"]
    _canonical, under = find_url(browser_catalog, SITE, prefix=True)
    assert len(under) == 6 and {c.kind for c in under} == {"page", "request"}


def test_each_page_capture_comes_with_its_own_screenshot_and_dom(
        browser_catalog: Catalog, browser_crawl: BrowserCrawl) -> None:
    _canonical, pages = find_url(browser_catalog, PAGE_URL)
    found = renderings_of(browser_catalog, pages)
    bodies = browser_crawl.bodies
    for page in pages:
        shot, dom = found[page.id]
        assert (shot.kind, dom.kind) == ("screenshot", "dom")
        assert shot.body_sha256 == hashlib.sha256(bodies.screenshot).hexdigest()
        assert dom.body_sha256 == hashlib.sha256(bodies.dom).hexdigest()
        assert shot.stored and dom.stored and shot.body_size == len(bodies.screenshot)
        assert shot.fetched_ms == dom.fetched_ms == page.fetched_ms
        assert (shot.index_path, shot.record_offset) == (page.index_path, page.record_offset)
    newest_page, newest_shot = newest_rendering(browser_catalog, PAGE_URL, kind="screenshot")
    assert newest_page == pages[0] and newest_shot == found[pages[0].id][0]


def test_a_session_listing_and_a_hash_lookup_show_renderings_as_such(
        browser_catalog: Catalog, browser_crawl: BrowserCrawl) -> None:
    every = find_session(browser_catalog, browser_crawl.session_id, every_request=True)
    assert sorted(c.kind for c in every).count("screenshot") == 2
    pages = find_session(browser_catalog, browser_crawl.session_id)
    assert {c.kind for c in pages} == {"page"}
    by_hash = find_body(browser_catalog, hashlib.sha256(browser_crawl.bodies.screenshot).hexdigest())
    assert [c.kind for c in by_hash] == ["screenshot", "screenshot"]


def test_both_databases_keep_renderings_out_of_url_lookups(tmp_path: Path,
                                                          catalog_url: str) -> None:
    crawl = ingested_browser_crawl(tmp_path / "data", records=2, catalog_url=catalog_url)
    catalog = Catalog.open(catalog_url)
    try:
        _canonical, pages = find_url(catalog, PAGE_URL)
        assert [c.kind for c in pages] == ["page", "page"]
        found = renderings_of(catalog, pages)
        assert [[c.kind for c in found[page.id]] for page in pages] == [["screenshot", "dom"]] * 2
        with catalog.reading() as tx:
            timeline = tx.replay.timeline(urlkey(PAGE_URL))
            nearest = tx.replay.nearest(urlkey(PAGE_URL), at_ms=round((AT_S + 1) * 1000))
        assert [c.kind for c in timeline] == ["page", "page"]
        assert nearest is not None and nearest.capture.kind == "page"
        assert nearest.capture.body_sha256 == hashlib.sha256(crawl.bodies.html).hexdigest()
    finally:
        catalog.close()


def test_renderings_of_pages_without_a_browser_load_are_none(browser_catalog: Catalog) -> None:
    _canonical, requests = find_url(browser_catalog, SITE, prefix=True)
    assert renderings_of(browser_catalog, [c for c in requests if c.kind == "request"]) == {}
