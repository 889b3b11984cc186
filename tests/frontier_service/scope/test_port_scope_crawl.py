"""A crawl allowed one loopback port reaches no other: links, names mapped to another port,
redirects and robots.txt are refused before any connect (a listener counts connections)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from archive_testkit.recording_servers import ConnectionCounter, Page, RecordingSite
from frontier_service.archiving import iter_records
from frontier_service.fetch import Fetcher, FetchSettings
from frontier_service.fetch.result import FetchErrorKind, FetchResult
from frontier_service.scope.address_policy import AddressPolicy
from frontier_service.scope.resolver import CrawlResolver
from frontier_service.service.seeding import BadSeed, checked_seeds
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.web import crawler_settings


def site_linking_to(other: int) -> dict[str, Page]:
    """A site whose start page links to another loopback port: directly, by a name that
    host_map sends there, by its port-80 twin, and through a redirect."""
    links = [f"http://127.0.0.1:{other}/direct", "http://other.test/by-name",
             f"http://[::ffff:127.0.0.1]:{other}/mapped", "http://127.0.0.1/port-80",
             "/redirect", "/ok"]
    body = "".join(f'<a href="{link}">x</a>' for link in links)
    return {"/": Page(f"<html><body>{body}</body></html>".encode()),
            "/ok": Page(b"<html>fine</html>"),
            "/redirect": Page(status=302, headers=(("Location", f"http://127.0.0.1:{other}/moved"),))}


def crawl(tmp_path: Path, redis_url: str, crawl_name: str, *, site: RecordingSite, other: int,
          allowed: tuple[str, ...]) -> RunReport:
    settings = crawler_settings(
        tmp_path / "data", redis_url, crawl_name, site.port, allowed_domains=(),
        allowed_networks=allowed, host_map=(("other.test", f"127.0.0.1:{other}"),),
        max_seconds=30.0)
    seeds = (f"http://127.0.0.1:{site.port}/", "http://other.test/seeded")
    return asyncio.run(CrawlerService(settings, seeds=seeds).run())


def test_only_the_listed_port_is_reached(tmp_path: Path, redis_url: str, crawl_name: str,
                                         caplog: pytest.LogCaptureFixture) -> None:
    with ConnectionCounter() as listener, RecordingSite(site_linking_to(listener.port)) as site:
        with caplog.at_level(logging.INFO):
            report = crawl(tmp_path, redis_url, crawl_name, site=site, other=listener.port,
                           allowed=(f"127.0.0.1:{site.port}",))
        assert listener.connections == 0
    assert site.paths() == {"/robots.txt", "/", "/ok", "/redirect"}
    # Links to the other port (direct, mapped IPv6, redirect target) and to port 80: never queued.
    assert report.metrics.links_out_of_scope == 4
    refused = f"127.0.0.1 port {listener.port} is not among the ports listed for it"
    assert f"not crawling 127.0.0.1:{listener.port}: {refused}" in caplog.text
    # The name is judged where it resolves, with host_map's port: its robots.txt is refused.
    records = {r["page_url"]: r for r in iter_records(tmp_path / "data" / "sessions")}
    seeded = records["http://other.test/seeded"]
    assert seeded["requests"] == [] and seeded["error"].startswith("address refused")


def test_without_ports_every_port_of_the_network_is_reached(
        tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    """The same crawl with the network listed without ports (as before): the listener is
    reached, so the test above would see a connection if one were made."""
    with ConnectionCounter() as listener, RecordingSite(site_linking_to(listener.port)) as site:
        crawl(tmp_path, redis_url, crawl_name, site=site, other=listener.port,
              allowed=("127.0.0.0/8",))
        assert listener.connections > 0


@pytest.mark.unit
def test_a_seed_on_an_unlisted_port_is_refused(tmp_path: Path) -> None:
    settings = crawler_settings(tmp_path / "data", "redis://unused", "c", 8080,
                                allowed_domains=(), allowed_networks=("127.0.0.1:8080",))
    assert checked_seeds(settings, ["http://127.0.0.1:8080/"]) == ["http://127.0.0.1:8080/"]
    with pytest.raises(BadSeed, match=r"bad seed URL 'http://127.0.0.1:6379/': out of scope "
                                      r"\(127.0.0.1 port 6379 is not among the ports listed"):
        checked_seeds(settings, ["http://127.0.0.1:8080/", "http://127.0.0.1:6379/"])


def test_a_robots_txt_redirect_to_another_port_is_refused_before_connecting() -> None:
    """robots.txt follows redirects inside one fetch: each hop's port is judged."""
    async def fetch_robots(port: int) -> FetchResult:
        resolver = CrawlResolver(policy=AddressPolicy([f"127.0.0.1:{port}"]))
        async with Fetcher(FetchSettings(retry_backoff_s=(0.01,)), resolver=resolver) as fetcher:
            return await fetcher.fetch(f"http://127.0.0.1:{port}/robots.txt")

    with ConnectionCounter() as listener, RecordingSite({"/robots.txt": Page(status=302, headers=(
            ("Location", f"http://127.0.0.1:{listener.port}/robots.txt"),))}) as site:
        result = asyncio.run(fetch_robots(site.port))
        assert listener.connections == 0
    assert site.paths() == {"/robots.txt"}
    assert result.error_kind is FetchErrorKind.REFUSED and result.error is not None
    assert f"127.0.0.1 port {listener.port} is not among the ports listed" in result.error
