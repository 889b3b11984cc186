"""A `--browser always` crawl of the test kit's JavaScript site, ingested into an initialized
data dir, for the capture QA tests; and a page's browser capture found by its path."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import uuid
from pathlib import Path

from archive_pipelines.canonical_urls import canonicalize
from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.qa_repository import BrowserPage
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit.testweb import TestWeb
from archive_testkit.testweb.js_pages import ESCAPE, INDEX
from frontier_service.service.service import CrawlerService
from tests.frontier_service.pages.browser_crawls import HOST, js_crawl_settings
from tests.helpers.captures import ingest_all, parts_of
from tests.helpers.crawls import delete_keys


def crawled_with_browser(web: TestWeb, redis_url: str, data_dir: Path) -> Path:
    """`data_dir` initialized, the JavaScript site crawled into it with `--browser always`
    (the escape page seeded too); nothing ingested yet."""
    initialize(Settings(data_dir=data_dir))
    name = f"qa-{uuid.uuid4().hex[:10]}"
    settings = js_crawl_settings(data_dir, redis_url, name, web.port, browser="always")
    try:
        asyncio.run(CrawlerService(settings, seeds=(page_url(INDEX), page_url(ESCAPE))).run())
    finally:
        delete_keys(redis_url, name)
    return data_dir


def ingested_copy(source: Path, target: Path) -> Path:
    """A copy of the crawled data dir `source` at `target`, every segment ingested."""
    shutil.copytree(source, target, symlinks=True)
    with parts_of(target) as parts:
        ingest_all(parts, target)
    return target


def page_url(path: str) -> str:
    return f"http://{HOST}{path}"


def browser_page(catalog: Catalog, path: str) -> BrowserPage:
    """The newest browser capture of HOST's `path`."""
    url_hash = hashlib.sha256(canonicalize(page_url(path)).encode()).hexdigest()
    pages = catalog.qa.browser_pages_of_url(url_hash)
    assert pages, f"no browser capture of {path}"
    return pages[-1]
