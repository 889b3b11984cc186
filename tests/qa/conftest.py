"""The capture QA tests' crawl: the test kit's JavaScript site crawled once per run with
`--browser always` (pristine: segments not ingested), and per-test copies."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_testkit.testweb import serve_in_background
from tests.frontier_service.pages.browser_crawls import WEB
from tests.qa.qa_crawls import crawled_with_browser, ingested_copy


@pytest.fixture(scope="session")
def browser_crawl(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with serve_in_background(WEB) as web:
        yield crawled_with_browser(web, redis_url, tmp_path_factory.mktemp("qa") / "data")


@pytest.fixture(scope="session")
def browser_captures(browser_crawl: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The crawl ingested (shared: tests that record checks use `qa_data`)."""
    return ingested_copy(browser_crawl, tmp_path_factory.mktemp("qa-ingested") / "data")


@pytest.fixture
def qa_data(browser_captures: Path, tmp_path: Path) -> Path:
    """A copy of the ingested crawl for one test."""
    target = tmp_path / "data"
    shutil.copytree(browser_captures, target, symlinks=True)
    return target
