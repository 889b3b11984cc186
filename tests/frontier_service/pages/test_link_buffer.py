"""LinkBuffer: junk links are refused with a reason, odd-but-valid URLs are queued canonical."""

from __future__ import annotations

import asyncio
from pathlib import Path

from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.link_buffer import LinkBuffer
from frontier_service.scope.crawl_scope import Scope
from frontier_service.service.crawler_parts import open_frontier
from tests.frontier_service.bad_urls import ACCEPTED, REFUSED, bad_url_settings


def test_links_are_canonical_lines_or_refused(tmp_path: Path, redis_url: str,
                                              crawl_name: str) -> None:
    metrics = CrawlMetrics()

    async def main() -> None:
        async with open_frontier(bad_url_settings(tmp_path, redis_url, crawl_name)) as (frontier, _):
            buffer = LinkBuffer(frontier, Scope(("*.test",)), metrics)
            assert buffer.add([*ACCEPTED, *REFUSED], depth=1) == len(ACCEPTED)
            assert await buffer.flush() == len(ACCEPTED)

    asyncio.run(main())
    assert metrics.links_invalid + metrics.links_out_of_scope == len(REFUSED)
    files = FrontierFiles(tmp_path / "data")
    lines = []
    for path in (tmp_path / "data" / "frontiers").rglob("*.frontier"):
        lines += path.read_bytes().split(b"\n")
    urls = {line.rsplit(b"|", 3)[0].decode() for line in lines if line}
    assert urls == set(ACCEPTED.values())
    assert files.corrupt_lines == 0
