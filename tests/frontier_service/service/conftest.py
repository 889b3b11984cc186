"""A crawl of the test web, run once per module, that the tests then examine."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from archive_testkit.testweb import RequestRecord, TestWeb, serve_in_background
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.web import SEEDS, WEB, crawler_settings


@dataclass
class Crawl:
    web: TestWeb
    settings: CrawlerSettings
    report: RunReport
    requests: list[RequestRecord]
    dagster_home: Path


def delete_keys(redis_url: str, name: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(match=f"{name}:*", count=1000):
            client.unlink(key)
    finally:
        client.close()


@pytest.fixture(scope="package")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


@pytest.fixture
def crawl_name(redis_url: str) -> Iterator[str]:
    name = f"svc-{uuid.uuid4().hex[:10]}"
    yield name
    delete_keys(redis_url, name)


@pytest.fixture(scope="package", params=[1, 8], ids=["per-host-1", "per-host-8"])
def crawl(web: TestWeb, redis_url: str, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[Crawl]:
    """Crawl from SEEDS until the frontier is empty, with segments reported to Dagster;
    once with one request in flight per host, once with up to eight."""
    root = tmp_path_factory.mktemp("crawl")
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    name = f"svc-{uuid.uuid4().hex[:10]}"
    settings = crawler_settings(root / "data", redis_url, name, web.port, dagster_home=home,
                                per_host_concurrency=request.param)
    web.log.clear()
    report = asyncio.run(CrawlerService(settings, seeds=SEEDS).run())
    try:
        yield Crawl(web, settings, report, web.log.records(), home)
    finally:
        delete_keys(redis_url, name)
