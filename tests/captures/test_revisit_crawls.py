"""Two crawls of one site with the same validators key: the second asks conditionally, the
pages that did not change come back 304 and become unchanged captures of the first crawl's
bodies (catalog, ref counts, `captures`, replay, WARC export and import)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit.testweb import TestWeb, TestWebConfig, host_name, serve_in_background
from archive_testkit.testweb.requestlog import RequestRecord
from archive_testkit.testweb.revisions import last_change
from frontier_service.archiving.validators import KEY_PREFIX
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.captures import ingest_all, parts_of
from tests.helpers.crawls import delete_keys

SITE = TestWebConfig(seed=31, hosts=1, pages_per_host=12, links_per_page=8,
                     cross_host_fraction=0.0, page_min_bytes=1_500, page_max_bytes=3_000,
                     robots_fraction=1.0, crawl_delay_fraction=0.0, special_fraction=0.0,
                     trap_fraction=0.0, dead_fraction=0.0, garbage_robots_fraction=0.0,
                     huge_robots_hosts=0)
CHANGED = SITE.with_changes(revision=1, changed_fraction=0.3)  # the site a day later
HOST = host_name(SITE, 0)
HOME = f"http://{HOST}/"


@dataclass
class Crawled:
    data_dir: Path
    key: str
    first: list[RequestRecord]  # the test web's log of each crawl
    second: list[RequestRecord]
    reports: list[RunReport]
    started_ms: list[int]  # when each crawl began


def crawl(data_dir: Path, web: TestWeb, *, redis_url: str, name: str, key: str) -> RunReport:
    settings = crawler_settings(data_dir, redis_url, name, web.port, max_depth=3,
                                allowed_domains=(HOST,), per_host_concurrency=4,
                                min_delay_s=0.0, response_time_factor=0.0,
                                validators_key=key)
    try:
        return asyncio.run(CrawlerService(settings, seeds=(HOME,)).run())
    finally:
        delete_keys(redis_url, name)


@pytest.fixture(scope="module")
def crawled(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    data_dir = tmp_path_factory.mktemp("revisit") / "data"
    initialize(Settings(data_dir=data_dir))
    key = f"site-{uuid.uuid4().hex[:8]}"
    logs, reports, started = [], [], []
    for number, config in enumerate((SITE, CHANGED)):
        if number:
            time.sleep(1.1)  # a later 14-digit timestamp
        with serve_in_background(config) as web:
            started.append(int(time.time() * 1000))
            reports.append(crawl(data_dir, web, redis_url=redis_url, name=f"{key}-{number}",
                                 key=key))
            logs.append(web.requests_for(HOST))
        with parts_of(data_dir) as parts:
            ingest_all(parts, data_dir)
    yield Crawled(data_dir, key, logs[0], logs[1], reports, started)
    client = redis.Redis.from_url(redis_url)
    client.delete(KEY_PREFIX + key)
    client.close()


def pages(log: list[RequestRecord]) -> list[RequestRecord]:
    return [r for r in log if r.path_qs != "/robots.txt"]


def test_the_second_crawl_asks_conditionally_and_gets_304s_for_unchanged_pages(
        crawled: Crawled) -> None:
    first, second = pages(crawled.first), pages(crawled.second)
    assert first and not any(r.conditional for r in first)
    assert {r.path_qs for r in second} == {r.path_qs for r in first}  # every page again, once
    assert len(second) == len({r.path_qs for r in second}), second
    found = {r.path_qs for r in first if r.status == 200}
    assert {r.path_qs for r in second if r.conditional} == found  # what had validators
    statuses = Counter(r.status for r in second if r.conditional)
    assert statuses[304] and statuses[200], statuses  # some changed, most did not
    assert set(statuses) == {200, 304}
    report = crawled.reports[1].as_metadata()
    assert report["conditional_requests"] == len(found)
    assert report["unchanged"] == statuses[304]
    changed = sorted(r.path_qs for r in second if r.status == 200 and r.conditional)
    assert changed == sorted(p for p in found if last_change(CHANGED, HOST, p.split("?")[0]))
    # Only the changed pages brought bodies (a page under two query strings is one body).
    assert report["new_blobs"] == len({p.split("?")[0] for p in changed})
