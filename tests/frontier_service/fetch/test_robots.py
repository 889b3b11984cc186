"""robots.txt: every flavour the test web serves, RFC 9309 error handling, caching and expiry."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from archive_testkit.testweb import RobotsKind, TestWeb
from frontier_service.fetch import (
    FetchErrorKind,
    FetchResult,
    InMemoryRobotsStore,
    RobotsCache,
    RobotsRules,
    RobotsSource,
    origin_of,
)
from frontier_service.fetch.robots import MAX_ROBOTS_BYTES
from frontier_service.fetch.robots_rules import entry_from_fetch, is_garbage
from tests.frontier_service.fetch.web import CLOSING, UNAVAILABLE, make_fetcher, robots_host

T = TypeVar("T")


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def with_cache(port: int, use: Callable[[RobotsCache], Awaitable[T]], **options: Any) -> T:
    """Run `use(cache)` with a RobotsCache over a fresh fetcher."""

    async def main() -> T:
        async with make_fetcher(port) as fetcher:
            return await use(RobotsCache(fetcher, **options))

    return asyncio.run(main())


def rules_of(port: int, host: str, **options: Any) -> RobotsRules:
    async def use(cache: RobotsCache) -> RobotsRules:
        return await cache.rules_for(f"http://{host}/s1/p1.html")

    return with_cache(port, use, **options)


def test_standard_robots_disallows_private(web: TestWeb) -> None:
    host = robots_host(RobotsKind.STANDARD)
    rules = rules_of(web.port, host)
    assert rules.source is RobotsSource.PARSED and rules.origin == f"http://{host}"
    assert not rules.can_fetch(f"http://{host}/private/p1.html")
    assert rules.can_fetch(f"http://{host}/s1/p1.html")
    assert not rules.can_fetch(f"http://{host}/s1/p1.html", "BadBot/2.0")  # its own group
    assert rules.crawl_delay() is None


def test_crawl_delay(web: TestWeb) -> None:
    host = robots_host(RobotsKind.CRAWL_DELAY)

    async def use(cache: RobotsCache) -> tuple[float | None, bool]:
        return await cache.crawl_delay(f"http://{host}/"), await cache.can_fetch(
            f"http://{host}/private/p2.html"
        )

    assert with_cache(web.port, use) == (2.0, False)


def test_garbage_robots_allows_all_and_says_so(web: TestWeb) -> None:
    host = robots_host(RobotsKind.GARBAGE)
    rules = rules_of(web.port, host)
    assert rules.source is RobotsSource.GARBAGE
    assert rules.can_fetch(f"http://{host}/private/p1.html")
    assert rules.crawl_delay() is None


def test_huge_robots_is_truncated_fast_and_keeps_its_first_rules(web: TestWeb) -> None:
    host = robots_host(RobotsKind.HUGE)
    store = InMemoryRobotsStore()
    began = time.monotonic()
    rules = rules_of(web.port, host, store=store)
    assert time.monotonic() - began < 3  # 3 MB served; 512 KB read
    assert rules.source is RobotsSource.PARSED and rules.truncated
    assert not rules.can_fetch(f"http://{host}/private/p1.html")
    stored = asyncio.run(store.get(f"http://{host}"))
    assert stored is not None and 0 < len(stored.body) <= MAX_ROBOTS_BYTES
    assert stored.body.endswith(b"\n")  # cut on a line boundary


def test_missing_robots_allows_all(web: TestWeb) -> None:
    host = robots_host(RobotsKind.NONE)
    rules = rules_of(web.port, host)
    assert rules.source is RobotsSource.MISSING
    assert rules.can_fetch(f"http://{host}/private/p1.html")


@pytest.mark.parametrize("host", [UNAVAILABLE, CLOSING], ids=["503", "connection-dropped"])
def test_unreachable_robots_disallows_all_for_the_retry_period(web: TestWeb, host: str) -> None:
    clock = FakeClock()

    async def use(cache: RobotsCache) -> list[bool]:
        url = f"http://{host}/"
        seen = [await cache.can_fetch(url)]
        clock.now += 599
        seen.append(await cache.can_fetch(url))  # still inside the retry period: no refetch
        assert cache.fetches == 1
        clock.now += 2
        seen.append(await cache.can_fetch(url))  # retried (and still unreachable)
        assert cache.fetches == 2
        return seen

    assert with_cache(web.port, use, clock=clock, unreachable_retry_s=600.0) == [False, False, False]


def test_fetched_once_per_origin_even_when_asked_concurrently(web: TestWeb) -> None:
    host = robots_host(RobotsKind.STANDARD)

    async def use(cache: RobotsCache) -> int:
        urls = [f"http://{host}/s{n % 10}/p{n}.html" for n in range(1, 30)]
        await asyncio.gather(*(cache.can_fetch(url) for url in urls))
        await cache.can_fetch(f"http://{host.upper()}:80/other")  # same origin, other spelling
        return cache.fetches

    assert with_cache(web.port, use) == 1
    assert [r.path_qs for r in web.requests_for(host)] == ["/robots.txt"]


def test_shared_store_spares_other_processes_the_fetch_until_expiry(web: TestWeb) -> None:
    host = robots_host(RobotsKind.CRAWL_DELAY)
    store = InMemoryRobotsStore()
    clock = FakeClock()

    async def use(cache: RobotsCache) -> tuple[int, int, int]:
        await cache.rules_for(f"http://{host}/")
        other = RobotsCache(cache.fetcher, store, clock=clock)  # another worker, same store
        assert (await other.rules_for(f"http://{host}/")).crawl_delay() == 2.0
        before_expiry = other.fetches
        clock.now += 24 * 3600
        await other.rules_for(f"http://{host}/")
        return cache.fetches, before_expiry, other.fetches

    assert with_cache(web.port, use, store=store, clock=clock) == (1, 0, 1)



def test_load_says_whether_the_host_was_asked(web: TestWeb) -> None:
    # Rules dropped from a full parsed cache come back from the store without a request:
    # the crawler fetches the page at once then (no delay owed), not after another turn.
    first, second = robots_host(RobotsKind.STANDARD), robots_host(RobotsKind.CRAWL_DELAY)

    async def use(cache: RobotsCache) -> list[tuple[bool, int]]:
        seen = []
        for host in (first, first, second, first):
            loaded = await cache.load(f"http://{host}/")
            assert loaded.rules.origin == f"http://{host}"
            seen.append((loaded.requested, cache.fetches))
        return seen

    # first: fetched; then parsed; second: fetched, dropping first; first again: from the store
    assert with_cache(web.port, use, parsed_entries=1) == [(True, 1), (False, 1), (True, 2),
                                                           (False, 2)]


def _result(status: int | None = 200, body: bytes | None = b"", **fields: Any) -> FetchResult:
    return FetchResult(
        url="http://r.test/robots.txt",
        final_url="http://r.test/robots.txt",
        status=status,
        body=body,
        **fields,
    )


@pytest.mark.unit
@pytest.mark.parametrize(
    ("result", "source", "lifetime"),
    [
        (_result(200, b"User-agent: *\nDisallow: /x\n"), RobotsSource.PARSED, 86400),
        (_result(200, b"\x00\x01\x02binary"), RobotsSource.GARBAGE, 86400),
        (_result(404), RobotsSource.MISSING, 86400),
        (_result(403), RobotsSource.MISSING, 86400),  # RFC 9309: any 4xx allows all
        (_result(429), RobotsSource.UNREACHABLE, 600),
        (_result(500), RobotsSource.UNREACHABLE, 600),
        (_result(503), RobotsSource.UNREACHABLE, 600),
        (
            _result(None, None, error="TimeoutError", error_kind=FetchErrorKind.TIMEOUT),
            RobotsSource.UNREACHABLE,
            600,
        ),
        (
            _result(None, None, error="refused", error_kind=FetchErrorKind.CONNECT),
            RobotsSource.UNREACHABLE,
            600,
        ),
        (
            _result(301, None, error="loop", error_kind=FetchErrorKind.REDIRECT_LOOP),
            RobotsSource.MISSING,
            86400,
        ),
    ],
)
def test_entry_from_fetch(result: FetchResult, source: RobotsSource, lifetime: float) -> None:
    entry = entry_from_fetch(result, 1000.0, ttl_s=86400, unreachable_retry_s=600)
    assert (entry.source, entry.expires_at) == (source, 1000.0 + lifetime)


@pytest.mark.unit
def test_truncated_body_drops_the_partial_last_line() -> None:
    entry = entry_from_fetch(_result(200, b"User-agent: *\nDisallow: /a\nDisallow: /b", truncated=True), 0.0)
    assert entry.body == b"User-agent: *\nDisallow: /a\n" and entry.truncated


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "garbage"),
    [
        (b"", False),
        (b"User-agent: *\nDisallow: /\n", False),
        ("# r\u00e9sum\u00e9 caf\u00e9\nUser-agent: *\n".encode(), False),
        (b"\xef\xbb\xbfUser-agent: *\n", False),  # BOM
        (b"User-agent: *\x00\nDisallow: /", True),
        (bytes(range(1, 32)) * 10, True),
        (b"\xff\xfe\xfd" * 100, True),
    ],
)
def test_is_garbage(body: bytes, garbage: bool) -> None:
    assert is_garbage(body) is garbage


@pytest.mark.unit
@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://Site0001.TEST:80/a/b?c#d", "http://site0001.test"),
        ("https://user:pw@h.test:8443/x", "https://h.test:8443"),
        ("http://h.test", "http://h.test"),
    ],
)
def test_origin_of(url: str, origin: str) -> None:
    assert origin_of(url) == origin
