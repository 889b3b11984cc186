"""A real crawl of the test web into an initialized data dir, done once per test run (the
root conftest loads these fixtures for every package: tests/storage, tests/cli and
tests/wiring use them too), copied per test.

`crawled` is the pristine result (segments under sessions/, bodies in cas/, nothing
ingested); `crawl_data` is a fresh copy of it for one test to ingest, damage or kill. The
helpers the capture tests share are in tests/helpers/captures.py and tests/helpers/crawls.py."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit.testweb import TestWeb, serve_in_background
from frontier_service.service.service import CrawlerService
from tests.frontier_service.service.web import SEEDS, WEB, crawler_settings
from tests.helpers.crawls import Crawled, delete_keys


@pytest.fixture(scope="session")
def captures_web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


@pytest.fixture(scope="session")
def crawled(captures_web: TestWeb, redis_url: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    """Crawl from SEEDS into a data dir `init` made, until the frontier is empty."""
    root = tmp_path_factory.mktemp("crawled")
    data_dir = root / "data"
    initialize(Settings(data_dir=data_dir))
    home = root / "dagster_home"  # where the crawler reports its segments (read it, do not write)
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    name = f"cap-{uuid.uuid4().hex[:10]}"
    # Segments of 150 pages: a crawl of a few hundred pages leaves several.
    settings = crawler_settings(data_dir, redis_url, name, captures_web.port, dagster_home=home)
    captures_web.log.clear()
    report = asyncio.run(CrawlerService(settings, seeds=SEEDS).run())
    try:
        yield Crawled(data_dir, captures_web, report, captures_web.log.records(), home)
    finally:
        delete_keys(redis_url, name)


@pytest.fixture
def crawl_data(crawled: Crawled, tmp_path: Path) -> Path:
    """A copy of the crawled data dir for one test (symlinks copied as symlinks)."""
    target = tmp_path / "data"
    shutil.copytree(crawled.data_dir, target, symlinks=True)
    return target
