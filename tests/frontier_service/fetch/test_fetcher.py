"""The fetcher against the real test web: pages, redirects, errors, caps, timeouts, retries."""

from __future__ import annotations

import asyncio

import pytest

from archive_testkit.testweb import TestWeb, render_page
from frontier_service.fetch import FetchErrorKind, FetchResult, RedirectHop
from tests.frontier_service.fetch.web import CLOSING, PLAIN, SPECIAL, TRAPS, UNAVAILABLE, WEB, make_fetcher


def fetch(port: int, url: str, **overrides: object) -> FetchResult:
    """Fetch one URL with a fresh fetcher; `overrides` go to FetchSettings."""

    async def main() -> FetchResult:
        async with make_fetcher(port, **overrides) as fetcher:
            return await fetcher.fetch(url)

    return asyncio.run(main())


def test_normal_page(web: TestWeb) -> None:
    host = PLAIN[0]
    result = fetch(web.port, f"http://{host}/s1/p1.html")
    assert result.ok and result.error is None and result.error_kind is None
    assert (result.status, result.final_url, result.redirects) == (200, result.url, [])
    assert result.body == render_page(WEB, host, "/s1/p1.html")
    assert not result.truncated
    assert (result.content_type, result.charset, result.is_html) == ("text/html", "utf-8", True)
    assert ("Content-Type", "text/html; charset=utf-8") in result.response_headers
    request_headers = dict(result.request_headers)
    assert request_headers["User-Agent"].startswith("archive-pipelines-frontier/")
    assert request_headers["Host"] == host
    assert 0 < result.response_time_s <= result.elapsed_s < 5
    assert result.attempts == 1 and result.started_at > 1e9


def test_many_pages_of_one_host_share_the_session(web: TestWeb) -> None:
    host = PLAIN[1]
    paths = [f"/s{n % 10}/p{n}.html" for n in range(1, 21)]

    async def main() -> list[FetchResult]:
        async with make_fetcher(web.port) as fetcher:
            return await asyncio.gather(*(fetcher.fetch(f"http://{host}{path}") for path in paths))

    results = asyncio.run(main())
    assert [r.status for r in results] == [200] * len(paths)
    assert sorted(r.path_qs for r in web.requests_for(host)) == sorted(paths)


def test_redirect_chain_is_recorded_hop_by_hop(web: TestWeb) -> None:
    base = f"http://{SPECIAL}"
    result = fetch(web.port, f"{base}/redirect/3")
    assert (result.status, result.final_url, result.error) == (200, f"{base}/", None)
    assert result.redirects == [
        RedirectHop(f"{base}/redirect/3", 301, f"{base}/redirect/2"),  # relative Location, resolved
        RedirectHop(f"{base}/redirect/2", 302, f"{base}/redirect/1"),
        RedirectHop(f"{base}/redirect/1", 301, f"{base}/"),
    ]
    assert result.body == render_page(WEB, SPECIAL, "/")
    assert [r.path_qs for r in web.requests_for(SPECIAL)] == [
        "/redirect/3",
        "/redirect/2",
        "/redirect/1",
        "/",
    ]


def test_redirect_loop_is_an_error_not_a_hang(web: TestWeb) -> None:
    result = fetch(web.port, f"http://{SPECIAL}/loop/a")
    assert result.error_kind is FetchErrorKind.REDIRECT_LOOP
    assert result.error is not None and "loop" in result.error and "\n" not in result.error
    assert [hop.status for hop in result.redirects] == [302, 301]
    assert result.body is None and result.elapsed_s < 2
    assert len(web.requests_for(SPECIAL)) == 2


def test_too_many_redirects(web: TestWeb) -> None:
    result = fetch(web.port, f"http://{SPECIAL}/redirect/12", max_redirects=5)
    assert result.error_kind is FetchErrorKind.TOO_MANY_REDIRECTS
    assert len(result.redirects) == 6 and result.status is None
    assert len(web.requests_for(SPECIAL)) == 6


@pytest.mark.parametrize(("path", "status"), [("/missing/1.html", 404), ("/error/2.html", 500)])
def test_error_statuses_are_answers(web: TestWeb, path: str, status: int) -> None:
    result = fetch(web.port, f"http://{SPECIAL}{path}")
    assert (result.status, result.error, result.ok) == (status, None, False)
    assert result.body and not result.host_failure
    assert result.attempts == 1  # 404 and 500 are not retried


def test_huge_body_is_cut_at_the_cap_quickly(web: TestWeb) -> None:
    result = fetch(web.port, f"http://{TRAPS}/huge/1.html", max_body_bytes=1_000_000)
    assert result.status == 200 and result.truncated and result.error is None
    assert result.body is not None and len(result.body) == 1_000_000
    assert result.elapsed_s < 5  # the server would send 500 MB


def test_slow_response_times_out(web: TestWeb) -> None:
    result = fetch(web.port, f"http://{TRAPS}/slow/1.html", read_timeout_s=0.3, max_attempts=1)
    assert result.error_kind is FetchErrorKind.TIMEOUT and result.status is None
    assert result.host_failure and result.elapsed_s < 2  # the page takes 5 s


def test_whole_fetch_deadline_bounds_retries(web: TestWeb) -> None:
    result = fetch(
        web.port, f"http://{TRAPS}/slow/2.html", read_timeout_s=0.3, max_attempts=10, fetch_deadline_s=0.8
    )
    assert result.error_kind is FetchErrorKind.TIMEOUT
    assert result.elapsed_s < 1.5


def test_dropped_connections_are_retried_then_reported(web: TestWeb) -> None:
    result = fetch(web.port, f"http://{CLOSING}/", max_attempts=3)
    assert result.error_kind is FetchErrorKind.CONNECT and result.host_failure
    assert result.attempts == 3
    # aiohttp resends once by itself when a server hangs up (aio-libs/aiohttp#10790).
    assert 3 <= len(web.requests_for(CLOSING)) <= 6


def test_503_with_a_long_retry_after_is_not_waited_for(web: TestWeb) -> None:
    result = fetch(web.port, f"http://{UNAVAILABLE}/")
    assert (result.status, result.attempts, result.error) == (503, 1, None)  # Retry-After: 3600
    assert result.host_failure


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/doc/report-1.pdf", "application/pdf"),
        ("/img/photo-2.png", "image/png"),
        ("/api/item-3.json", "application/json"),
        ("/static/site.css", "text/css"),
    ],
)
def test_non_html_is_fetched_as_is(web: TestWeb, path: str, content_type: str) -> None:
    result = fetch(web.port, f"http://{SPECIAL}{path}")
    assert result.ok and result.content_type == content_type
    assert result.body and not result.is_html


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("ftp://site0001.test/file", FetchErrorKind.INVALID_URL),
        ("http://", FetchErrorKind.INVALID_URL),
        ("http://no-such-host.invalid/", FetchErrorKind.CONNECT),
    ],
)
def test_unfetchable_urls_are_errors_not_exceptions(web: TestWeb, url: str, kind: FetchErrorKind) -> None:
    result = fetch(web.port, url, max_attempts=1)
    assert result.error_kind is kind and result.error and result.status is None


def test_fetch_before_start_is_a_programming_error(web: TestWeb) -> None:
    async def main() -> None:
        await make_fetcher(web.port).fetch(f"http://{PLAIN[0]}/")

    with pytest.raises(RuntimeError, match="not started"):
        asyncio.run(main())
