"""The browser pool in real headless Chromium against the test web: many loads at once share
two contexts, each page loaded whole; kill -9 of Chromium mid-load relaunches it once and the
pages it was loading are loaded again on the new one (none lost); close drains the loads in
flight, then closes the browser and refuses new loads."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import psutil  # type: ignore[import-untyped]
import pytest
from playwright.async_api import async_playwright

from archive_testkit.testweb import TestWeb, hosts_where, serve_in_background
from archive_testkit.testweb.asset_pages import SCRIPTED, SCRIPTED_IMAGES
from archive_testkit.testweb.js_pages import (
    FETCHED,
    FETCHED_IMAGES,
    FETCHED_TEXT,
    FONT_FILES,
    FONTS,
    LAZY,
    LAZY_IMAGES,
    PLAIN,
    PLAIN_IMAGE,
)
from frontier_service.browser import (
    BrowserPool,
    BrowserRequest,
    BrowserSettings,
    CrawlFetch,
    Fetch,
    HeaderHasher,
    PageLoad,
    PoolClosed,
)
from frontier_service.fetch import Fetcher
from frontier_service.fetch.result import FetchResult
from frontier_service.scope.address_policy import AddressPolicy
from frontier_service.scope.crawl_scope import Scope
from frontier_service.scope.resolver import CrawlResolver
from tests.frontier_service.browser.pages import FAST, WEB
from tests.helpers.chromium import chromium_browsers

SETTINGS = BrowserSettings(page_timeout_s=20.0, idle_s=0.3, scroll_pause_s=0.1)
HASHER = HeaderHasher(b"p" * 32)
HOSTS = hosts_where(WEB, lambda t: t.alive)[:2]
# Each page and what of it only a whole load (script run, scrolled) requests.
PAGES: dict[str, tuple[str, ...]] = {
    SCRIPTED: SCRIPTED_IMAGES, FETCHED: FETCHED_IMAGES, LAZY: LAZY_IMAGES, FONTS: FONT_FILES,
    PLAIN: (PLAIN_IMAGE,)}


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


@asynccontextmanager
async def crawl_pool(web_port: int, *, contexts: int = 2) -> AsyncIterator[tuple[BrowserPool, CrawlFetch]]:
    """A pool and the crawl's real fetch: *.test is the test web, the only address listed."""
    policy = AddressPolicy([f"127.0.0.1:{web_port}"])
    resolver = CrawlResolver([("*.test", f"127.0.0.1:{web_port}")], policy=policy)
    async with (async_playwright() as playwright,
                BrowserPool(playwright, contexts=contexts) as pool,
                Fetcher(FAST, resolver=resolver) as fetcher):
        yield pool, CrawlFetch(fetcher, Scope(addresses=policy))


def on_request(fetch: CrawlFetch, hook: Callable[[BrowserRequest], None]) -> Fetch:
    """The crawl's fetch, `hook` called first with each request."""
    async def fetched(request: BrowserRequest) -> FetchResult:
        hook(request)
        return await fetch(request)
    return fetched


def assert_whole(load_url: str, path: str, load: PageLoad) -> None:
    assert load.error is None and not load.timed_out and load.refused == [], (load_url, load.error)
    host = load_url.removesuffix(path)
    answered = {r.url.removeprefix(host) for r in load.answered if r.status == 200}
    assert {path, *PAGES[path]} <= answered, (path, answered)
    assert load.dom is not None and load.screenshot is not None


def test_many_loads_at_once_share_two_contexts_and_every_page_loads_whole(web: TestWeb) -> None:
    urls = [(f"http://{host}{path}", path) for host in HOSTS for path in PAGES]
    seen: list[tuple[int, int]] = []  # (busy, waiting) whenever the page asked for something

    async def main() -> list[PageLoad]:
        async with crawl_pool(web.port) as (pool, fetch):
            def note(_request: BrowserRequest) -> None:
                stats = pool.stats()
                seen.append((stats.busy, stats.waiting))
            hooked = on_request(fetch, note)
            loads = await asyncio.gather(*(
                pool.load(url, fetch=hooked, settings=SETTINGS, hasher=HASHER)
                for url, _path in urls))
            stats = pool.stats()
            assert (stats.pages, stats.failures, stats.restarts, stats.retried) == (len(urls), 0, 0, 0)
            assert (stats.busy, stats.waiting, stats.contexts) == (0, 0, 2)
            return list(loads)

    loads = asyncio.run(main())
    for (url, path), load in zip(urls, loads, strict=True):
        assert_whole(url, path, load)
    assert FETCHED_TEXT in str(next(load.dom for load, (_u, p) in zip(loads, urls, strict=True)
                                    if p == FETCHED))
    # Two pages loaded side by side, never more; the rest waited for a free context.
    assert max(busy for busy, _waiting in seen) == 2
    assert max(waiting for _busy, waiting in seen) > 0


def test_chromium_killed_mid_load_is_relaunched_once_and_its_pages_load_again(web: TestWeb) -> None:
    trigger = FETCHED_IMAGES[0]  # asked for after the page's script fetched its JSON: mid-load
    killed: list[int] = []

    def kill_on_trigger(request: BrowserRequest) -> None:
        if request.url.endswith(trigger) and not killed:
            (browser,) = chromium_browsers()
            os.kill(browser.pid, signal.SIGKILL)
            killed.append(browser.pid)

    async def main() -> tuple[list[PageLoad], list[int]]:
        async with crawl_pool(web.port) as (pool, fetch):
            hooked = on_request(fetch, kill_on_trigger)
            loads = await asyncio.gather(
                pool.load(f"http://{HOSTS[0]}{FETCHED}", fetch=hooked, settings=SETTINGS,
                          hasher=HASHER),
                pool.load(f"http://{HOSTS[1]}{LAZY}", fetch=hooked, settings=SETTINGS,
                          hasher=HASHER))
            stats = pool.stats()
            assert stats.restarts == 1 and stats.retried >= 1, stats
            assert (stats.pages, stats.failures) == (2, 0), stats
            # The relaunched browser serves the next page as any other.
            after = await pool.load(f"http://{HOSTS[0]}{PLAIN}", fetch=fetch, settings=SETTINGS,
                                    hasher=HASHER)
            assert_whole(f"http://{HOSTS[0]}{PLAIN}", PLAIN, after)
            assert pool.stats().restarts == 1
            return list(loads), [p.pid for p in chromium_browsers()]

    loads, running = asyncio.run(main())
    assert len(killed) == 1 and running and killed[0] not in running
    assert not psutil.pid_exists(killed[0]) or psutil.Process(killed[0]).status() == psutil.STATUS_ZOMBIE
    assert_whole(f"http://{HOSTS[0]}{FETCHED}", FETCHED, loads[0])
    assert_whole(f"http://{HOSTS[1]}{LAZY}", LAZY, loads[1])
    assert FETCHED_TEXT in str(loads[0].dom)
    assert chromium_browsers() == []  # the pool closed its relaunched browser


def test_close_drains_the_loads_in_flight_then_refuses_new_ones(web: TestWeb) -> None:
    urls = [(f"http://{HOSTS[0]}{path}", path) for path in (SCRIPTED, FETCHED, LAZY)]

    async def main() -> tuple[list[PageLoad], bool]:
        async with crawl_pool(web.port) as (pool, fetch):
            loading = [asyncio.create_task(pool.load(url, fetch=fetch, settings=SETTINGS,
                                                     hasher=HASHER)) for url, _path in urls]
            while pool.stats().busy < 2:
                await asyncio.sleep(0.01)
            drained = await pool.close(timeout_s=60)
            assert all(task.done() for task in loading)
            with pytest.raises(PoolClosed):
                await pool.load(urls[0][0], fetch=fetch, settings=SETTINGS, hasher=HASHER)
            assert chromium_browsers() == []
            assert pool.stats().pages == len(urls)
            return [task.result() for task in loading], drained

    loads, drained = asyncio.run(main())
    assert drained
    for (url, path), load in zip(urls, loads, strict=True):
        assert_whole(url, path, load)


def test_close_gives_up_on_loads_past_its_timeout_and_they_return_an_error(web: TestWeb) -> None:
    async def main() -> tuple[PageLoad, bool]:
        async with crawl_pool(web.port, contexts=1) as (pool, fetch):
            async def slow(request: BrowserRequest) -> FetchResult:
                if request.url.endswith(SCRIPTED_IMAGES[0]):
                    await asyncio.sleep(5)
                return await fetch(request)
            loading = asyncio.create_task(pool.load(
                f"http://{HOSTS[0]}{SCRIPTED}", fetch=slow, settings=SETTINGS, hasher=HASHER))
            while pool.stats().busy < 1:
                await asyncio.sleep(0.01)
            drained = await pool.close(timeout_s=0.2)
            return await asyncio.wait_for(loading, 10), drained

    load, drained = asyncio.run(main())
    assert not drained
    assert load.error is not None and load.dom is None
