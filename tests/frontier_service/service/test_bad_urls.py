"""Bad URLs as links and as seeds: junk is refused with a reason, odd-but-valid URLs survive."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.link_buffer import LinkBuffer
from frontier_service.scope.crawl_scope import Scope
from frontier_service.service.crawler_parts import open_frontier
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.seeding import BadSeed, add_seeds, check_seeds

ACCEPTED = {
    "http://site0001.test/search?q=red|green|blue": "http://site0001.test/search?q=red%7Cgreen%7Cblue",
    "http://site0001.test/a\nb": "http://site0001.test/ab",
    "  http://site0001.test/padded  ": "http://site0001.test/padded",
    "http://bücher.test/katalog/1.html": "http://xn--bcher-kva.test/katalog/1.html",
    "HTTP://SITE0001.TEST:80/x?b=2&a=1#frag": "http://site0001.test/x?a=1&b=2",
}
REFUSED = [
    "http://site0001.test/?q=" + "x" * 10_000,
    "ftp://site0001.test/pub/file.tar.gz",
    "mailto:someone@site0001.test",
    "javascript:void(0)",
    "data:text/html;base64,PGgxPg==",
    "../../relative/junk.html",
    "//",
    "http://",
    "http:///nohost",
    "http://[::1",
    "http://exa mple.test/",
    "",
]


def settings(tmp_path: Path, redis_url: str, crawl_name: str) -> CrawlerSettings:
    return CrawlerSettings(data_dir=tmp_path / "data", redis_url=redis_url, crawl_name=crawl_name,
                           allowed_domains=("*.test",), seen_capacity=10_000,
                           visited_expected=1_000)


def test_links_are_canonical_lines_or_refused(tmp_path: Path, redis_url: str,
                                              crawl_name: str) -> None:
    metrics = CrawlMetrics()

    async def main() -> None:
        async with open_frontier(settings(tmp_path, redis_url, crawl_name)) as (frontier, _):
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


@pytest.mark.unit
@pytest.mark.parametrize("bad", REFUSED)
def test_a_bad_seed_is_refused_with_a_reason(bad: str) -> None:
    checked = check_seeds([bad, "http://site0001.test/"], Scope(("*.test",)))
    assert checked.urls == ["http://site0001.test/"]
    ((shown, reason),) = checked.rejected
    assert len(shown) <= 100 and reason and "\n" not in reason


def test_out_of_scope_seeds_are_refused_and_nothing_is_queued(tmp_path: Path, redis_url: str,
                                                              crawl_name: str) -> None:
    async def main() -> None:
        async with open_frontier(settings(tmp_path, redis_url, crawl_name)) as (frontier, _):
            with pytest.raises(BadSeed, match=r"out of scope .*127\.0\.0\.1"):
                await add_seeds(frontier, frontier_settings, ["http://site0001.test/",
                                                              "http://127.0.0.1/"])
            assert (await frontier.stats()).ready_domains == 0

    frontier_settings = settings(tmp_path, redis_url, crawl_name)
    asyncio.run(main())
