"""The real server on a free loopback port, reached with an aiohttp client."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import aiohttp
import pytest

from archive_testkit.testweb import (
    DeadMode,
    RobotsKind,
    TestWeb,
    ThreadedTestWeb,
    hosts_where,
    page_path,
    read_jsonl,
    render_page,
    run_in_thread,
    serve_in_background,
)
from archive_testkit.testweb.assets import SHARED_ASSETS
from tests.testkit.testweb.web_client import SMALL, Fetched, fetch, get, session

PLAIN = hosts_where(SMALL, lambda t: t.alive and not t.special and not t.traps)[0]
SPECIAL = hosts_where(SMALL, lambda t: t.alive and t.special)[0]
TRAPS = hosts_where(SMALL, lambda t: t.alive and t.traps)[0]


def test_virtual_host_is_chosen_by_the_host_header_with_or_without_port(web: TestWeb) -> None:
    expected = render_page(SMALL, "site0003.test", "/s1/p1.html")
    raw = f"{web.base_url}/s1/p1.html"
    for host in ("site0003.test", "site0003.test:8080", "SITE0003.TEST"):
        assert fetch(web.port, raw, headers={"Host": host}).body == expected
    by_name = fetch(web.port, "http://site0003.test/s1/p1.html")
    assert (by_name.status, by_name.body) == (200, expected)
    assert fetch(web.port, raw, headers={"Host": "site0004.test"}).body != expected
    assert fetch(web.port, raw, headers={"Host": "example.com"}).status == 404


def test_shared_assets_are_byte_identical_on_every_host(web: TestWeb) -> None:
    async def main() -> dict[str, set[bytes]]:
        bodies: dict[str, set[bytes]] = {path: set() for path in SHARED_ASSETS}
        async with session(web.port) as client:
            for host in ("site0001.test", "site0002.test", "site0017.test"):
                for path in SHARED_ASSETS:
                    fetched = await get(client, f"http://{host}{path}")
                    assert fetched.status == 200
                    bodies[path].add(fetched.body)
        return bodies

    bodies = asyncio.run(main())
    assert {path: len(found) for path, found in bodies.items()} == dict.fromkeys(SHARED_ASSETS, 1)
    logo = fetch(web.port, "http://site0001.test/img/logo.png")
    assert logo.headers["Content-Type"] == "image/png"


def test_robots_txt_over_http(web: TestWeb) -> None:
    delayed = hosts_where(SMALL, lambda t: t.robots is RobotsKind.CRAWL_DELAY)[0]
    robots = fetch(web.port, f"http://{delayed}/robots.txt")
    assert robots.status == 200
    assert robots.headers["Content-Type"].startswith("text/plain")
    assert b"Disallow: /private/\nCrawl-delay: 2\n" in robots.body


def test_redirect_chain_loop_and_offsite(web: TestWeb) -> None:
    chain = fetch(web.port, f"http://{SPECIAL}/redirect/3", follow=True)
    assert (chain.status, chain.history) == (200, [301, 302, 301])
    assert chain.body == render_page(SMALL, SPECIAL, "/")
    with pytest.raises(aiohttp.TooManyRedirects):
        fetch(web.port, f"http://{SPECIAL}/loop/a", follow=True)
    offsite = fetch(web.port, f"http://{SPECIAL}/offsite", follow=True)
    assert offsite.history == [301] and offsite.status in (200, 503)


@pytest.mark.parametrize(
    ("path", "status", "content_type"),
    [
        ("/missing/0.html", 404, "text/html"),
        ("/error/0.html", 500, "text/html"),
        ("/doc/report-0.pdf", 200, "application/pdf"),
        ("/img/photo-0.png", 200, "image/png"),
        ("/api/item-0.json", 200, "application/json"),
    ],
)
def test_status_codes_and_content_types(
    web: TestWeb, path: str, status: int, content_type: str
) -> None:
    fetched = fetch(web.port, f"http://{SPECIAL}{path}")
    assert fetched.status == status
    assert fetched.headers["Content-Type"].split(";")[0] == content_type


def test_invalid_encoding_page_over_http(web: TestWeb) -> None:
    fetched = fetch(web.port, f"http://{SPECIAL}/enc/latin1.html")
    assert fetched.headers["Content-Type"] == "text/html; charset=utf-8"
    with pytest.raises(UnicodeDecodeError):
        fetched.body.decode("utf-8")


def test_request_log_records_every_request(web: TestWeb) -> None:
    fetch(web.port, f"http://{PLAIN}/")
    fetch(web.port, f"{web.base_url}/s1/p1.html?x=1", headers={"Host": f"{PLAIN}:80"})
    fetch(web.port, f"http://{PLAIN}/nothing-here")
    fetch(web.port, f"http://{PLAIN}/")
    records = web.requests_for(PLAIN)
    assert [(r.host, r.path_qs, r.status) for r in records] == [
        (PLAIN, "/", 200),
        (PLAIN, "/s1/p1.html?x=1", 200),
        (PLAIN, "/nothing-here", 404),
        (PLAIN, "/", 200),
    ]
    assert all(a.time <= b.time for a, b in itertools.pairwise(records))
    assert web.fetch_counts()[(PLAIN, "/")] == 2
    assert web.log.total == len(web.log.records()) == 4


def test_dead_hosts_drop_the_connection_or_answer_503(web: TestWeb) -> None:
    closing = hosts_where(SMALL, lambda t: t.dead is DeadMode.CLOSE)[0]
    with pytest.raises(aiohttp.ServerDisconnectedError):
        fetch(web.port, f"http://{closing}/")
    assert {r.status for r in web.requests_for(closing)} == {0}
    unavailable = hosts_where(SMALL, lambda t: t.dead is DeadMode.UNAVAILABLE)[0]
    assert fetch(web.port, f"http://{unavailable}/robots.txt").status == 503


def test_huge_body_streams_until_the_client_gives_up(web: TestWeb) -> None:
    async def main() -> int:
        async with session(web.port) as client:
            async with client.get(f"http://{TRAPS}/huge/0.html") as response:
                assert response.headers["Transfer-Encoding"] == "chunked"
                received = 0
                async for chunk in response.content.iter_chunked(1 << 16):
                    received += len(chunk)
                    if received >= 2_000_000:
                        break
            page = await get(client, f"http://{TRAPS}/")  # the server carries on
            assert page.status == 200
            return received

    assert asyncio.run(main()) >= 2_000_000


def test_slow_pages_take_their_time_and_do_not_hold_up_stop() -> None:
    with serve_in_background(SMALL) as running:
        started = time.monotonic()
        slow = fetch(running.port, f"http://{TRAPS}/slow/0.html")
        assert slow.status == 200 and time.monotonic() - started >= SMALL.slow_delay_s
    threaded = ThreadedTestWeb(SMALL.with_changes(slow_delay_s=60.0))
    port = threaded.start()

    async def stop_while_slow() -> tuple[Fetched, float]:
        async with session(port) as client:
            pending = asyncio.ensure_future(get(client, f"http://{TRAPS}/slow/1.html"))
            await asyncio.sleep(0.2)
            started = time.monotonic()
            await asyncio.to_thread(threaded.stop)
            return await pending, time.monotonic() - started

    answered, stop_took = asyncio.run(stop_while_slow())
    assert answered.status == 503 and stop_took < 3


def test_latency_is_added_to_every_response() -> None:
    port, stop = run_in_thread(SMALL.with_changes(latency_ms=150))
    try:
        started = time.monotonic()
        assert fetch(port, "http://site0000.test/robots.txt").status == 200
        assert time.monotonic() - started >= 0.15
    finally:
        stop()


def test_ten_kilobyte_url_is_served(web: TestWeb) -> None:
    long_url = f"http://{PLAIN}/s1/p1.html?q=" + "x" * 10_000
    assert fetch(web.port, long_url).body == render_page(SMALL, PLAIN, "/s1/p1.html")


def test_many_concurrent_pages(web: TestWeb) -> None:
    alive = hosts_where(SMALL, lambda t: t.alive)[:5]
    wanted = [(alive[n % 5], page_path(n)) for n in range(1, 60)]

    async def main() -> list[Fetched]:
        async with session(web.port) as client:
            return await asyncio.gather(*(get(client, f"http://{h}{p}") for h, p in wanted))

    results = asyncio.run(main())
    assert [r.body for r in results] == [render_page(SMALL, h, p) for h, p in wanted]


def test_json_lines_log(tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    with serve_in_background(SMALL, log_path=log_path) as running:
        fetch(running.port, f"http://{PLAIN}/")
        fetch(running.port, f"http://{PLAIN}/missing/x")
    assert [(r.host, r.path_qs, r.status) for r in read_jsonl(log_path)] == [
        (PLAIN, "/", 200),
        (PLAIN, "/missing/x", 404),
    ]
