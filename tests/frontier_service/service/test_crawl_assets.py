"""A crawl of the test web's asset gallery: every asset a browser would load (srcset, CSS
@import, @font-face fonts, background images relative to their stylesheet ...) is fetched
once and recorded with what it was for; a page over the asset budget is cut and counted."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from archive_pipelines.canonical_urls import canonical_url_and_domain
from archive_pipelines.captures.record_parser import parse_record
from archive_testkit.testweb import RequestRecord, TestWeb, host_name
from archive_testkit.testweb.asset_pages import (
    GALLERY,
    GALLERY_ASSETS,
    GALLERY_REDIRECTS,
    MANY,
    MANY_IMAGES,
)
from frontier_service.archiving import iter_records
from frontier_service.service.service import CrawlerService, RunReport
from frontier_service.service.stats import crawl_stats
from tests.frontier_service.service.web import WEB, crawler_settings
from tests.helpers.crawls import delete_keys

HOST = host_name(WEB, 0)  # alive, with a plain robots.txt
BUDGET = 30  # above the gallery's 21 assets, below the 40 images of MANY


@dataclass
class AssetCrawl:
    report: RunReport
    records: list[dict[str, Any]]
    requests: list[RequestRecord]
    counters: dict[str, int]


@pytest.fixture(scope="module")
def asset_crawl(web: TestWeb, redis_url: str, tmp_path_factory: pytest.TempPathFactory,
                ) -> Iterator[AssetCrawl]:
    name = f"assets-{tmp_path_factory.getbasetemp().name[-8:]}"
    settings = crawler_settings(tmp_path_factory.mktemp("assets") / "data", redis_url, name,
                                web.port, max_depth=0, per_host_concurrency=8, min_delay_s=0.0,
                                response_time_factor=0.0, max_assets_per_page=BUDGET)
    web.log.clear()
    report = asyncio.run(CrawlerService(settings, seeds=(f"http://{HOST}{GALLERY}",
                                                         f"http://{HOST}{MANY}")).run())
    counters = asyncio.run(crawl_stats(settings))["counters"]
    records = list(iter_records(settings.data_dir / "sessions"))
    try:
        yield AssetCrawl(report, records, [r for r in web.log.records() if r.host == HOST],
                         counters)
    finally:
        delete_keys(redis_url, name)


def fetched(crawl: AssetCrawl) -> dict[str, tuple[int | None, str]]:
    """Canonical URL -> (status, resource type) of every fetch the page records hold."""
    out: dict[str, tuple[int | None, str]] = {}
    for record in crawl.records:
        for request in record["requests"]:
            response = request["response"]
            url = canonical_url_and_domain(request["url"])[0]
            assert url not in out, f"{url} fetched twice"
            out[url] = (response and response["status_code"], request["resource_type"])
    return out


def canonical(path: str) -> str:
    return canonical_url_and_domain(f"http://{HOST}{path}")[0]


def test_every_gallery_asset_is_fetched_and_recorded_with_its_kind(asset_crawl: AssetCrawl) -> None:
    got = fetched(asset_crawl)
    for path, kind in GALLERY_ASSETS.items():
        assert got.get(canonical(path)) == (301 if path in GALLERY_REDIRECTS else 200, kind), path
    for source, target in GALLERY_REDIRECTS.items():  # fetched as what its source was for
        assert got.get(canonical(target)) == (200, GALLERY_ASSETS[source]), target
    assert got[canonical(GALLERY)] == got[canonical(MANY)] == (200, "document")


def test_nothing_else_is_requested_and_nothing_twice(asset_crawl: AssetCrawl) -> None:
    paths = Counter(urlsplit(r.path_qs).path for r in asset_crawl.requests)
    many = {p for p in paths if p.startswith("/assets/many/")}
    expected = ({urlsplit(p).path for p in GALLERY_ASSETS} | set(GALLERY_REDIRECTS.values())
                | {GALLERY, MANY, "/robots.txt"})
    assert set(paths) - many == expected  # no commented-out, data: or type=text URL; no 404s
    assert all(count == 1 for count in paths.values()), paths.most_common(3)


def test_a_page_over_the_asset_budget_is_cut_and_counted(asset_crawl: AssetCrawl) -> None:
    got = fetched(asset_crawl)
    images = [canonical(f"/assets/many/img-{n}.png") for n in range(MANY_IMAGES)]
    assert [url in got for url in images] == [True] * BUDGET + [False] * (MANY_IMAGES - BUDGET)
    assert all(got[url] == (200, "image") for url in images[:BUDGET])
    over = MANY_IMAGES - BUDGET
    assert asset_crawl.report.metrics.assets_over_budget == over
    assert asset_crawl.counters["assets_over_budget"] == over  # what `stats` shows


def test_records_with_resource_types_are_ingested_as_captures(asset_crawl: AssetCrawl) -> None:
    """The catalog has no column for the kind: it stays in the segment's record, and the
    captures ingest takes the records as they are."""
    captures = 0
    for record in asset_crawl.records:
        parsed = parse_record(json.dumps(record).encode(), session_id=record["session_id"])
        captures += len(parsed.captures)
    assert captures == len(fetched(asset_crawl)) + sum(
        len(r["redirects"]) for r in asset_crawl.records)


def test_the_crawl_was_small(asset_crawl: AssetCrawl) -> None:
    assert asset_crawl.report.pages == len(GALLERY_ASSETS) + len(GALLERY_REDIRECTS) + 2 + BUDGET
