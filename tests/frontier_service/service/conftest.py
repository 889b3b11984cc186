"""A crawl of the test web, run once per module, that the tests then examine."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from archive_testkit.testweb import TestWeb, serve_in_background
from frontier_service.service.service import CrawlerService
from tests.frontier_service.service.web import SEEDS, WEB, crawler_settings
from tests.helpers.crawls import Crawl, delete_keys


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
