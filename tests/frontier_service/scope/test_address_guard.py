"""The address policy on the wire: IP-literal URLs, redirect hops and a crawl that is redirected
to the cloud metadata address. A small aiohttp server on 127.0.0.1 plays the web; names are
answered by a stub, so nothing leaves this machine."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from frontier_service.archiving import iter_records
from frontier_service.fetch import Fetcher, FetchSettings
from frontier_service.scope.address_policy import AddressPolicy
from frontier_service.scope.resolver import CrawlResolver
from frontier_service.service.service import CrawlerService
from tests.frontier_service.service.web import crawler_settings

LOOPBACK = AddressPolicy(["127.0.0.0/8"])
FAST = FetchSettings(connect_timeout_s=2.0, read_timeout_s=2.0, total_timeout_s=5.0,
                     fetch_deadline_s=8.0, retry_backoff_s=(0.02,))


class StubDNS(AbstractResolver):
    """Names resolve to fixed addresses; the port of a name is the server's."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        return [ResolveResult(hostname=host, host=self.answers[host], port=port,
                              family=socket.AF_INET, proto=0, flags=socket.AI_NUMERICHOST)]

    async def close(self) -> None:
        pass


@asynccontextmanager
async def serving(routes: dict[str, str]) -> AsyncIterator[tuple[int, list[str]]]:
    """A server on 127.0.0.1 redirecting path -> Location (302); other paths 404. Yields its
    port and the paths asked for."""
    asked: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        asked.append(request.path)
        location = routes.get(request.path)
        if location is None:
            return web.Response(status=404, text="no")
        return web.Response(status=302, headers={"Location": location})

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield port, asked
    finally:
        await runner.cleanup()


def test_an_ip_literal_url_is_judged_before_connecting() -> None:
    async def main() -> None:
        async with serving({"/": "/elsewhere"}) as (port, asked):
            async with Fetcher(FAST, resolver=CrawlResolver()) as strict:
                result = await strict.fetch(f"http://127.0.0.1:{port}/", follow_redirects=False)
            assert result.status is None and result.error is not None
            assert "127.0.0.1 is loopback; list a network holding it" in result.error
            assert asked == []  # never connected
            async with Fetcher(FAST, resolver=CrawlResolver(policy=LOOPBACK)) as listed:
                result = await listed.fetch(f"http://127.0.0.1:{port}/", follow_redirects=False)
            assert result.status == 302 and asked == ["/"]

    asyncio.run(main())


@pytest.mark.parametrize(("location", "reason"), [
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is link-local/cloud metadata"),
    ("http://[::ffff:169.254.169.254]/", "(IPv4 169.254.169.254) is link-local/cloud metadata"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254 is link-local/cloud metadata"),
    ("http://10.0.0.1/", "10.0.0.1 is private"),
    ("http://metadata.example/", "metadata.example resolves only to refused addresses "
                                 "(169.254.169.254 is link-local/cloud metadata"),
    ("http://internal.example/", "10.1.2.3 is private"),
])
def test_every_redirect_hop_inside_a_fetch_is_judged(location: str, reason: str) -> None:
    """robots.txt follows redirects inside the fetch: a hop to a refused address stops there."""
    dns = StubDNS({"metadata.example": "169.254.169.254", "internal.example": "10.1.2.3"})

    async def main() -> None:
        async with serving({"/robots.txt": location}) as (port, asked):
            resolver = CrawlResolver(policy=LOOPBACK, names=dns)
            async with Fetcher(FAST, resolver=resolver) as fetcher:
                result = await fetcher.fetch(f"http://127.0.0.1:{port}/robots.txt")
            assert asked == ["/robots.txt"]
            assert [hop.location for hop in result.redirects] == [location]
            assert result.status is None and result.error is not None
            assert reason in result.error, result.error
            assert result.elapsed_s < 1.0  # refused, not a connect attempt that timed out

    asyncio.run(main())


def test_a_redirect_to_the_metadata_address_is_recorded_but_never_followed(
        tmp_path: Path, redis_url: str, crawl_name: str, caplog: pytest.LogCaptureFixture) -> None:
    """The crawler queues a redirect's target as a link: the scope refuses it, with the reason."""
    async def main() -> tuple[int, list[str]]:
        async with serving({"/": "http://169.254.169.254/latest/meta-data/",
                            "/numeric": "http://0xa9fea9fe/"}) as (port, asked):
            settings = crawler_settings(tmp_path / "data", redis_url, crawl_name, port,
                                        allowed_domains=(), host_map=(), max_seconds=20.0)
            service = CrawlerService(settings, seeds=(f"http://127.0.0.1:{port}/",
                                                      f"http://127.0.0.1:{port}/numeric"))
            report = await service.run()
            assert report.metrics.links_out_of_scope == 2
            return port, asked

    with caplog.at_level(logging.INFO, logger="frontier_service.scope.crawl_scope"):
        port, asked = asyncio.run(main())
    assert sorted(asked) == ["/", "/numeric", "/robots.txt"]
    records = {r["page_url"]: r for r in iter_records(tmp_path / "data" / "sessions")}
    assert set(records) == {f"http://127.0.0.1:{port}/", f"http://127.0.0.1:{port}/numeric"}
    assert records[f"http://127.0.0.1:{port}/"]["redirects"] == [
        {"url": f"http://127.0.0.1:{port}/", "status": 302,
         "location": "http://169.254.169.254/latest/meta-data/"}]
    assert records[f"http://127.0.0.1:{port}/numeric"]["redirects"][0]["location"] == (
        "http://0xa9fea9fe/")
    assert ("not crawling 169.254.169.254: 169.254.169.254 is link-local/cloud metadata; "
            "list it exactly with --allow-network to crawl it") in caplog.text


def test_a_name_that_resolves_out_of_scope_is_refused_at_once_not_retried(
        tmp_path: Path, redis_url: str, crawl_name: str, caplog: pytest.LogCaptureFixture) -> None:
    """No retry can put a refused address in scope: the host is excluded after one try (its
    robots.txt), its seed recorded with the reason; a reachable host is crawled as usual."""
    async def main() -> tuple[int, list[str]]:
        async with serving({}) as (port, asked):
            settings = crawler_settings(
                tmp_path / "data", redis_url, crawl_name, port, allowed_domains=(),
                host_map=(("intranet.test", "10.0.0.1"), ("ok.test", f"127.0.0.1:{port}")),
                max_seconds=30.0)
            service = CrawlerService(settings, seeds=("http://intranet.test/wiki",
                                                      "http://ok.test/"))
            report = await service.run()
            assert report.stop_reason == "frontier exhausted"
            assert report.metrics.robots_fetches == 2 and report.metrics.hosts_retired == 1
            assert report.metrics.host_failures == 0  # refused, not failing: no backoff
            return port, asked

    with caplog.at_level(logging.WARNING, logger="frontier_service.pages.processor"):
        _, asked = asyncio.run(main())
    assert sorted(asked) == ["/", "/robots.txt"]  # ok.test only
    records = {r["page_url"]: r for r in iter_records(tmp_path / "data" / "sessions")}
    assert "address refused" in str(records["http://intranet.test/wiki"]["error"])
    assert "not crawling intranet.test: address refused" in caplog.text
