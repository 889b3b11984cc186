"""Replay, the calendar, TimeMaps and the CDX server never answer a page's URL with its
screenshot or DOM: they bear the page's URL and time (and the later ids, so a lookup of the
latest capture would find them first), yet the page's HTML is what comes back."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pytest

from archive_pipelines.catalog import Catalog
from archive_pipelines.replay.timestamps import timestamp_of
from tests.helpers.browser_records import (
    AT_S,
    DATA_URL,
    IMAGE_URL,
    PAGE_URL,
    SITE,
    BrowserCrawl,
    ingested_browser_crawl,
)
from tests.helpers.replay import (
    RunningReplay,
    fetch,
    make_replayer,
    opened_catalog,
    running_replay,
)


@pytest.fixture(scope="module")
def browser_crawl(tmp_path_factory: pytest.TempPathFactory) -> BrowserCrawl:
    return ingested_browser_crawl(tmp_path_factory.mktemp("browser") / "data", records=2)


@pytest.fixture(scope="module")
def browser_catalog(browser_crawl: BrowserCrawl) -> Iterator[Catalog]:
    with opened_catalog(browser_crawl.data_dir) as catalog:
        yield catalog


@pytest.fixture(scope="module")
def replay(browser_crawl: BrowserCrawl, browser_catalog: Catalog) -> Iterator[RunningReplay]:
    with running_replay(make_replayer(browser_crawl.data_dir, browser_catalog)) as running:
        yield running


def _sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def test_the_latest_capture_of_the_page_replays_its_html(replay: RunningReplay,
                                                        browser_crawl: BrowserCrawl) -> None:
    gate = fetch(replay.port, f"/web/{PAGE_URL}")
    assert gate.status == 302
    latest = timestamp_of(round((AT_S + 1) * 1000))
    assert f"/web/{latest}/" in (gate.header("Location") or "")
    answer = fetch(replay.port, f"/web/{latest}id_/{PAGE_URL}")
    assert answer.status == 200
    assert (answer.header("Content-Type") or "").startswith("text/html")
    assert _sha(answer.body) == _sha(browser_crawl.bodies.html)


def test_every_moment_of_the_page_replays_html(replay: RunningReplay,
                                               browser_crawl: BrowserCrawl) -> None:
    for second in (0, 1):
        at = timestamp_of(round((AT_S + second) * 1000))
        answer = fetch(replay.port, f"/web/{at}id_/{PAGE_URL}")
        assert answer.status == 200, answer.text
        assert _sha(answer.body) == _sha(browser_crawl.bodies.html)


def test_the_calendar_and_timemap_list_the_two_page_captures(replay: RunningReplay) -> None:
    calendar = json.loads(fetch(replay.port, f"/web/*/{PAGE_URL}?output=json").body)
    assert [(c["status"], c["mime"]) for c in calendar["captures"]] == [
        (200, "text/html; charset=utf-8")] * 2
    timemap = json.loads(fetch(replay.port, f"/timemap/json/{PAGE_URL}").body)
    assert len(timemap["mementos"]["list"]) == 2


def test_the_cdx_server_lists_http_exchanges_only(replay: RunningReplay) -> None:
    pywb = [json.loads(line) for line in fetch(
        replay.port, f"/cdx?url={SITE}/*&output=json").text.splitlines()]
    header, *lists = json.loads(fetch(replay.port, f"/cdx/search/cdx?url={SITE}/*&output=json").body)
    ia = [dict(zip(header, row, strict=True)) for row in lists]
    for rows, url_field, mime_field in ((pywb, "url", "mime"), (ia, "original", "mimetype")):
        assert sorted(row[url_field] for row in rows) == sorted([PAGE_URL, DATA_URL, IMAGE_URL] * 2)
        assert {row[mime_field] for row in rows if row[url_field] == PAGE_URL} == {"text/html"}
