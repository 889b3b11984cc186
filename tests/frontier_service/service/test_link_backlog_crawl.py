"""A crawl whose discovered links outrun the frontier waits for it instead of piling them up.

With `link_max_pending` at 1 every page's links fill the cap: the workers wait for the
link flush before each next URL (the cap is wired to them), and the crawl still fetches
every page of the site and drains to its end (a stopping crawl holds no worker back).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from frontier_service.pages.link_buffer import LinkBuffer
from frontier_service.service import service as service_module
from frontier_service.service.service import CrawlerService
from frontier_service.service.stop_report import NOTHING_LEFT_TO_FETCH
from tests.frontier_service.service.tree_site import HOST, serve_tree
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys


class CountingLinks(LinkBuffer):
    """The crawl's LinkBuffer, counting the workers' waits for room."""

    waits = 0

    async def room(self) -> None:
        if self.backlog >= self.max_pending:
            CountingLinks.waits += 1
        await super().room()


def test_workers_wait_for_the_link_backlog_and_fetch_every_page(
        redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_module, "LinkBuffer", CountingLinks)
    name = f"svc-{uuid.uuid4().hex[:10]}"
    with serve_tree(wide=4, deep=3) as site:
        settings = crawler_settings(tmp_path / "data", redis_url, name, site.port, max_depth=3,
                                    concurrency=8, per_host_concurrency=4, min_delay_s=0.0,
                                    link_max_pending=1, link_flush_urls=10_000)
        try:
            report = asyncio.run(CrawlerService(settings, seeds=(f"http://{HOST}/",)).run())
        finally:
            delete_keys(redis_url, name)
    assert report.stop.run_reason == NOTHING_LEFT_TO_FETCH
    assert report.pages == site.pages_to_depth(3)
    assert CountingLinks.waits > 0
