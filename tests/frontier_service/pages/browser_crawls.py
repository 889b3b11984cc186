"""Crawls of the test kit's JavaScript site (`/js/` on one host) with the browser, and what
the tests read from them: the page records by page path and the test web's request log."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from archive_testkit.testweb import RequestRecord, TestWeb, TestWebConfig, hosts_where
from archive_testkit.testweb.js_pages import INDEX
from frontier_service.archiving import iter_records
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys

# Four small hosts; the crawls seed and allow only the first live one's JavaScript site.
WEB = TestWebConfig(seed=32, hosts=4, pages_per_host=5, special_fraction=0.0, trap_fraction=0.0,
                    dead_fraction=0.0, robots_fraction=0.0)
HOST = hosts_where(WEB, lambda t: t.alive)[0]


@dataclass
class BrowserCrawl:
    settings: CrawlerSettings
    report: RunReport
    records: list[dict[str, Any]]
    requests: list[RequestRecord]  # the test web's log of the crawl's host

    def by_path(self) -> dict[str, list[dict[str, Any]]]:
        """Page path -> the records of that page (a page captured once has one)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for record in self.records:
            out.setdefault(urlsplit(record["page_url"]).path, []).append(record)
        return out


def js_crawl_settings(data_dir: Path, redis_url: str, name: str, port: int,
                      **changes: Any) -> CrawlerSettings:
    """The JavaScript site of HOST, every page reachable (script-only ones two links deep)."""
    return crawler_settings(data_dir, redis_url, name, port, allowed_domains=(HOST,),
                            max_depth=3, min_delay_s=0.0, response_time_factor=0.0,
                            per_host_concurrency=2, browser_contexts=2, exit_when_idle_s=1.0,
                            max_seconds=240.0, **changes)


def run_js_crawl(web: TestWeb, redis_url: str, data_dir: Path, *,
                 during: Callable[[CrawlerService], Coroutine[Any, Any, None]] | None = None,
                 **changes: Any) -> BrowserCrawl:
    """Crawl HOST's JavaScript site from its index to the end; `during(service)` runs beside
    the crawl (a fault to inject)."""
    name = f"browser-{uuid.uuid4().hex[:10]}"
    settings = js_crawl_settings(data_dir, redis_url, name, web.port, **changes)
    web.log.clear()

    async def main() -> RunReport:
        service = CrawlerService(settings, seeds=(f"http://{HOST}{INDEX}",))
        if during is None:
            return await service.run()
        beside = asyncio.create_task(during(service))
        try:
            return await service.run()
        finally:
            await beside

    try:
        report = asyncio.run(main())
    finally:
        delete_keys(redis_url, name)
    records = list(iter_records(data_dir / "sessions"))
    return BrowserCrawl(settings, report, records,
                        [r for r in web.log.records() if r.host == HOST])
