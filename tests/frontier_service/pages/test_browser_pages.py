"""Browser capture in a real crawl of the test kit's JavaScript site (real Redis, real
Chromium): `always` records every request each page makes with its screenshot and DOM, `auto`
renders exactly the pages that need it and finds the links only script makes, and a Chromium
killed mid-crawl costs no page and captures none twice."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from archive_pipelines.blobstore import open_store
from archive_testkit.testweb import TestWeb, serve_in_background
from archive_testkit.testweb.js_pages import (
    BROWSER_RESOURCES,
    JS_PAGES,
    NEEDS_BROWSER,
    SCRIPT_ONLY_LINKS,
)
from frontier_service.browser.page_load import (
    OVER_ALLOWANCE,
    PageLoad,
    RecordedRequest,
    refused_result,
)
from frontier_service.browser.signals import SIGNALS
from frontier_service.fetch.result import FetchResult
from frontier_service.pages.browser_pages import RECORDED_OVER_ALLOWANCE, split_document
from frontier_service.service.crawler_parts import DEFAULT_STORE
from frontier_service.service.service import CrawlerService
from tests.frontier_service.pages.browser_crawls import WEB, BrowserCrawl, run_js_crawl
from tests.helpers.chromium import chromium_browsers

# BROWSER_RESOURCES names a fetch() "other" (the crawler's resource type); Chromium says fetch.
_CHROMIUM_TYPES = {"other": {"fetch", "xhr", "other"}}


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


@pytest.fixture(scope="module")
def always(web: TestWeb, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> BrowserCrawl:
    return run_js_crawl(web, redis_url, tmp_path_factory.mktemp("always") / "data", browser="always")


@pytest.fixture(scope="module")
def auto(web: TestWeb, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> BrowserCrawl:
    return run_js_crawl(web, redis_url, tmp_path_factory.mktemp("auto") / "data", browser="auto",
                        browser_samples=0)


def path_of(url: str) -> str:
    return urlsplit(url).path


def test_always_captures_every_resource_each_page_loads(always: BrowserCrawl) -> None:
    pages = always.by_path()
    assert set(pages) >= JS_PAGES, JS_PAGES - set(pages)
    store = open_store(DEFAULT_STORE, always.settings.data_dir)
    for path in JS_PAGES:
        (record,) = pages[path]  # captured once
        browser = record["browser"]
        assert browser["mode"] == "always" and browser["signals"] == [], path
        assert browser["error"] is None and not browser["timed_out"], (path, browser)
        for blob, body_type in ((browser["screenshot"], "image/png"),
                                (browser["dom"], "text/html; charset=utf-8")):
            assert blob["body_type"] == body_type and blob["body_size"] > 0
            assert store.exists(blob["body_hash"].removeprefix("sha256:"))
        document, *others = record["requests"]
        assert path_of(document["url"]) == path and document["resource_type"] == "document"
        assert document["response"]["status_code"] == 200 and document["redirects"] == []
        answered = {path_of(r["url"]): r for r in others if r["response"] is not None}
        expected = BROWSER_RESOURCES[path]
        assert set(expected) <= set(answered), (path, set(expected) - set(answered))
        for resource, kind in expected.items():
            entry = answered[resource]
            assert entry["response"]["status_code"] == 200
            assert entry["resource_type"] in _CHROMIUM_TYPES.get(kind, {kind}), (resource, entry)
            assert store.exists(entry["response"]["body_hash"].removeprefix("sha256:"))
            assert entry["request_id"] and entry["method"] == "GET"
        assert [r["timestamp"] for r in others] == sorted(r["timestamp"] for r in others)
        assert record["navigation_id"] and len({r["request_id"] for r in record["requests"]}) == len(
            record["requests"])
    # The web saw every resource requested (the browser's requests went through the crawler).
    asked = {path_of(r.path_qs) for r in always.requests}
    assert {res for path in JS_PAGES for res in BROWSER_RESOURCES[path]} <= asked
    m = always.report.metrics
    assert m.browser_pages == len(JS_PAGES) and m.browser_failures == 0


def test_always_fetches_each_page_document_once(always: BrowserCrawl) -> None:
    asked = [path_of(r.path_qs) for r in always.requests]
    for path in JS_PAGES:
        assert asked.count(path) == 1, (path, asked.count(path))


def test_auto_renders_exactly_the_pages_that_need_it(auto: BrowserCrawl) -> None:
    pages = auto.by_path()
    assert set(pages) >= JS_PAGES, JS_PAGES - set(pages)
    rendered = set()
    for path in JS_PAGES:
        (record,) = pages[path]
        if "browser" in record:
            rendered.add(path)
            assert record["browser"]["mode"] == "auto"
            assert record["browser"]["signals"] and set(record["browser"]["signals"]) <= set(SIGNALS)
    assert rendered == NEEDS_BROWSER
    m = auto.report.metrics
    assert m.browser_pages == len(NEEDS_BROWSER) and m.browser_failures == 0


def test_auto_discovers_the_links_only_script_makes(auto: BrowserCrawl) -> None:
    pages = auto.by_path()
    assert set(pages) >= SCRIPT_ONLY_LINKS
    for path in SCRIPT_ONLY_LINKS:
        (record,) = pages[path]
        assert record["requests"][0]["response"]["status_code"] == 200


def test_auto_fetches_each_page_document_once(auto: BrowserCrawl) -> None:
    asked = [path_of(r.path_qs) for r in auto.requests]
    for path in JS_PAGES:
        assert asked.count(path) == 1, (path, asked.count(path))


def test_chromium_killed_mid_crawl_is_restarted_and_every_page_captured_once(
        web: TestWeb, redis_url: str, tmp_path: Path) -> None:
    killed: list[int] = []

    async def kill_chromium(service: CrawlerService) -> None:
        # Once a page load is under way after the first: kill -9 the browser process.
        while service.metrics.browser_pages < 2 and not service.finished.is_set():
            await asyncio.sleep(0.01)
        while not service.finished.is_set() and not killed:
            if service.metrics.in_flight:
                for browser in chromium_browsers():
                    os.kill(browser.pid, signal.SIGKILL)
                    killed.append(browser.pid)
            await asyncio.sleep(0.005)

    crawl = run_js_crawl(web, redis_url, tmp_path / "data", during=kill_chromium, browser="always")
    assert killed, "the crawl ended before Chromium could be killed"
    pages = crawl.by_path()
    assert {path: len(records) for path, records in pages.items() if path in JS_PAGES} == dict.fromkeys(
        JS_PAGES, 1)
    assert set(pages) >= JS_PAGES
    m = crawl.report.metrics
    assert m.browser_restarts >= 1
    rendered = [path for path in JS_PAGES if pages[path][0]["browser"]["dom"] is not None]
    assert len(rendered) + m.browser_failures == len(JS_PAGES)
    assert m.browser_failures <= 1  # at most a page whose retry the same kill also cut
    # A page loaded again on the relaunched browser is answered its document from the HTTP
    # fetch in hand again: no document was asked for twice.
    asked = [path_of(r.path_qs) for r in crawl.requests]
    assert all(asked.count(path) == 1 for path in JS_PAGES), asked


@pytest.mark.unit
def test_a_record_lists_only_the_first_refusals_past_the_allowance() -> None:
    def request(n: int, refused: str | None) -> RecordedRequest:
        url = f"http://h.test/{n}"
        result = (refused_result(url, refused) if refused else
                  FetchResult(url=url, final_url=url, status=200, body=b"x"))
        return RecordedRequest(request_id=str(n), navigation_id="nav", method="GET", url=url,
                               resource_type="document" if n == 0 else "fetch",
                               is_navigation=n == 0, request_headers=(), result=result,
                               started_at=float(n), elapsed_s=0.0, refused=refused)

    over = f"{OVER_ALLOWANCE} of 2 requests"
    requests = [request(0, None), request(1, None), request(2, "out of scope: domain not allowed"),
                *(request(n, over) for n in range(3, 3 + RECORDED_OVER_ALLOWANCE + 50))]
    load = PageLoad(url="http://h.test/0", final_url="http://h.test/0", navigation_id="nav",
                    requests=tuple(reversed(requests)), dom="", screenshot=None, timed_out=False,
                    over_allowance=RECORDED_OVER_ALLOWANCE + 50)
    document, others = split_document(load)
    assert document is requests[0]
    assert others == requests[1:3 + RECORDED_OVER_ALLOWANCE]  # in the order they began
