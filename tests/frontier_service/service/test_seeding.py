"""Seeds: junk and out-of-scope seeds are refused with a reason, and nothing is queued."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from frontier_service.scope.crawl_scope import Scope
from frontier_service.service.crawler_parts import open_frontier
from frontier_service.service.seeding import BadSeed, add_seeds, check_seeds
from tests.frontier_service.bad_urls import REFUSED, bad_url_settings


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
        async with open_frontier(bad_url_settings(tmp_path, redis_url, crawl_name)) as (frontier, _):
            with pytest.raises(BadSeed, match=r"out of scope .*127\.0\.0\.1"):
                await add_seeds(frontier, frontier_settings, ["http://site0001.test/",
                                                              "http://127.0.0.1/"])
            assert (await frontier.stats()).ready_domains == 0

    frontier_settings = bad_url_settings(tmp_path, redis_url, crawl_name)
    asyncio.run(main())
