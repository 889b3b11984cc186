"""Scope, IP-literal hosts and the host-map resolver: pure rules, parametrized."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from pathlib import Path

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from archive_pipelines.canonical_urls import domain_key
from archive_pipelines.settings import CrawlSettings, Settings, load_settings
from frontier_service.scope.address_policy import AddressPolicy
from frontier_service.scope.crawl_scope import Scope, host_of
from frontier_service.scope.resolver import CrawlResolver, parse_target
from frontier_service.service.crawler_settings import CrawlerSettings, SettingsError, from_settings, scope_for

pytestmark = pytest.mark.unit

LOOPBACK = AddressPolicy(["127.0.0.0/8"])


@pytest.mark.parametrize(("host", "refused"), [
    ("127.0.0.1", True), ("10.1.2.3", True), ("192.168.0.9", True), ("169.254.1.1", True),
    ("0.0.0.0", True), ("[::1]", True), ("[fe80::1]", True), ("224.0.0.1", True),
    ("100.64.0.1", True), ("[fd00::1]", True), ("[::ffff:169.254.169.254]", True),
    ("8.8.8.8", False), ("[2606:4700::1111]", False), ("example.com", False), ("localhost", False),
])
def test_non_public_ip_literals_are_out_of_scope(host: str, refused: bool) -> None:
    assert (Scope().refusal(host, 0) is not None) is refused


@pytest.mark.parametrize(("key", "host"), [
    ("example.com", "example.com"), ("example.com:8080", "example.com"),
    ("[::1]:8080", "[::1]"), ("[::1]", "[::1]"),
])
def test_host_of_a_domain_key(key: str, host: str) -> None:
    assert host_of(key) == host


@pytest.mark.parametrize(("allowed", "domain", "ok"), [
    ((), "anything.example", True),
    (("example.com",), "example.com", True),
    (("example.com",), "www.example.com:8443", True),
    (("example.com",), "badexample.com", False),
    (("*.test",), "site0001.test", True),
    (("*.test",), "site0001.test.evil.com", False),
    (("site00??.test",), "site0042.test", True),
    (("site00??.test",), "site0142.test", False),
    (("EXAMPLE.com.",), "example.com", True),
])
def test_allowed_domains_and_patterns(allowed: tuple[str, ...], domain: str, ok: bool) -> None:
    assert Scope(allowed).allows_domain(domain) is ok


def test_depth_and_listed_networks() -> None:
    scope = Scope(max_depth=2)
    assert scope.refusal("example.com", 2) is None
    assert scope.refusal("example.com", 3) == "too deep"
    assert scope.refusal("127.0.0.1:8080", 0) == (
        "127.0.0.1 is loopback; list a network holding it with --allow-network to crawl it")
    loopback = Scope(max_depth=2, addresses=LOOPBACK)
    assert loopback.refusal("127.0.0.1:8080", 0) is None
    assert loopback.refusal("[::1]:8080", 0) is not None
    assert loopback.refusal("10.0.0.1", 0) is not None
    assert loopback.refusal("169.254.169.254", 0) is not None


def test_a_listed_address_must_still_be_an_allowed_domain() -> None:
    scope = Scope(("*.test",), addresses=LOOPBACK)
    assert scope.refusal("127.0.0.1:8080", 0) == "domain not allowed"
    assert Scope(("*.test", "127.0.0.1"), addresses=LOOPBACK).refusal("127.0.0.1:8080", 0) is None


AWS_METADATA = ["http://169.254.169.254/latest/meta-data/", "http://0xa9fea9fe/",
                "http://2852039166/", "http://169.254.43518/", "http://[::ffff:169.254.169.254]/",
                "http://[::ffff:a9fe:a9fe]/"]
OTHER_METADATA = ["http://[fe80::1]/", "http://100.100.100.200/", "http://[fd00:ec2::254]/"]


@pytest.mark.parametrize("url", AWS_METADATA + OTHER_METADATA)
def test_metadata_spellings_are_refused_even_with_broad_networks(url: str) -> None:
    scope = Scope(addresses=AddressPolicy(["0.0.0.0/0", "::/0"]))
    reason = scope.refusal(domain_key(url), 0)
    assert reason is not None and "link-local/cloud metadata; list it exactly" in reason


def test_listing_the_metadata_address_exactly_opens_its_spellings_only() -> None:
    exact = Scope(addresses=AddressPolicy(["169.254.169.254"]))
    assert [exact.refusal(domain_key(url), 0) for url in AWS_METADATA] == [None] * len(AWS_METADATA)
    assert None not in [exact.refusal(domain_key(url), 0) for url in OTHER_METADATA]


@pytest.mark.parametrize("url", ["http://0x7f000001/", "http://2130706433/", "http://0177.0.0.1/",
                                 "http://127.1/", "http://0x7f.1/"])
def test_numeric_loopback_spellings_are_judged_as_loopback(url: str) -> None:
    assert domain_key(url) == "127.0.0.1"
    assert Scope().refusal(domain_key(url), 0) is not None
    assert Scope(addresses=LOOPBACK).refusal(domain_key(url), 0) is None


def test_a_refused_address_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    scope = Scope()
    with caplog.at_level(logging.INFO, logger="frontier_service.scope.crawl_scope"):
        for _ in range(3):
            scope.refusal("10.0.0.1", 1)
    (record,) = caplog.records
    assert record.getMessage() == ("not crawling 10.0.0.1: 10.0.0.1 is private; list a network "
                                   "holding it with --allow-network to crawl it")


@pytest.mark.parametrize(("target", "parsed"), [
    ("127.0.0.1", ("127.0.0.1", None)), ("127.0.0.1:8080", ("127.0.0.1", 8080)),
    ("[::1]:80", ("::1", 80)), ("::1", ("::1", None)),
])
def test_host_map_targets(target: str, parsed: tuple[str, int | None]) -> None:
    assert parse_target(target) == parsed


@pytest.mark.parametrize("target", ["", ":80", "127.0.0.1:0", "127.0.0.1:99999", "localhost:80",
                                    "example.com"])
def test_bad_host_map_targets(target: str) -> None:
    with pytest.raises(ValueError):
        parse_target(target)


def test_resolver_maps_names_and_globs_when_their_targets_are_listed() -> None:
    async def main() -> None:
        mapped = CrawlResolver([("*.test", "127.0.0.1:8080"), ("one.example", "10.0.0.5")],
                               policy=AddressPolicy(["127.0.0.0/8", "10.0.0.0/8"]))
        (hit,) = await mapped.resolve("Site0001.TEST", 80, socket.AF_INET)
        assert (hit["host"], hit["port"], hit["hostname"]) == ("127.0.0.1", 8080, "Site0001.TEST")
        (exact,) = await mapped.resolve("one.example", 443)
        assert (exact["host"], exact["port"]) == ("10.0.0.5", 443)

    asyncio.run(main())


def test_a_host_map_target_meets_the_policy_too(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        strict = CrawlResolver([("*.test", "127.0.0.1:8080")])
        with pytest.raises(OSError, match=r"host_map sends site0001.test to 127.0.0.1, which is "
                                          r"refused: 127.0.0.1 is loopback; list a network"):
            await strict.resolve("site0001.test", 80)
        with pytest.raises(OSError, match="loopback"):
            await strict.resolve("localhost", 80)  # the system resolver's answer is judged too
        await strict.close()

    with caplog.at_level(logging.WARNING):
        asyncio.run(main())
    assert "host_map sends *.test to 127.0.0.1:8080, which will be refused" in caplog.text


class StubDNS(AbstractResolver):
    """Fixed answers for names: what a hostile or careless DNS could say (no real lookup)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        self.asked.append(host)
        return [ResolveResult(hostname=host, host=a, port=port,
                              family=socket.AF_INET6 if ":" in a else socket.AF_INET, proto=0,
                              flags=socket.AI_NUMERICHOST) for a in self.answers[host]]

    async def close(self) -> None:
        pass


def resolver_with(dns: StubDNS, policy: AddressPolicy | None = None) -> CrawlResolver:
    return CrawlResolver(policy=policy or AddressPolicy(), names=dns)


ANSWERS = {
    "metadata.example": ["169.254.169.254"],
    "internal.example": ["10.0.0.1"],
    "local.example": ["127.0.0.1"],
    "mapped.example": ["::ffff:169.254.169.254"],
    "mixed.example": ["10.0.0.1", "93.184.216.34", "fe80::1%eth0"],
    "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
}


@pytest.mark.parametrize(("name", "reason"), [
    ("metadata.example", "169.254.169.254 is link-local/cloud metadata; list it exactly"),
    ("internal.example", "10.0.0.1 is private"),
    ("local.example", "127.0.0.1 is loopback"),
    ("mapped.example", "(IPv4 169.254.169.254) is link-local/cloud metadata"),
])
def test_a_name_resolving_only_to_refused_addresses_fails(name: str, reason: str) -> None:
    async def main() -> None:
        with pytest.raises(OSError, match=re.escape(name) + r" resolves only to refused "
                                          r"addresses \(.*" + re.escape(reason)):
            await resolver_with(StubDNS(ANSWERS)).resolve(name, 80)

    asyncio.run(main())


def test_refused_addresses_are_dropped_and_the_rest_kept() -> None:
    async def main() -> None:
        resolver = resolver_with(StubDNS(ANSWERS))
        assert [r["host"] for r in await resolver.resolve("mixed.example", 80)] == ["93.184.216.34"]
        assert len(await resolver.resolve("public.example", 80)) == 2

    asyncio.run(main())


def test_a_name_resolving_to_loopback_needs_loopback_listed() -> None:
    async def main() -> None:
        listed = resolver_with(StubDNS(ANSWERS), LOOPBACK)
        assert [r["host"] for r in await listed.resolve("local.example", 80)] == ["127.0.0.1"]
        with pytest.raises(OSError, match=r"10\.0\.0\.1 is private"):
            await listed.resolve("internal.example", 80)
        with pytest.raises(OSError, match=r"169\.254\.169\.254 is link-local"):
            await resolver_with(StubDNS(ANSWERS), AddressPolicy(["169.254.0.0/16"])).resolve(
                "metadata.example", 80)

    asyncio.run(main())


def test_ip_literals_are_judged_without_a_lookup() -> None:
    async def main() -> None:
        dns = StubDNS({})
        resolver = resolver_with(dns, LOOPBACK)
        (hit,) = await resolver.resolve("127.0.0.1", 8080)
        assert (hit["host"], hit["port"]) == ("127.0.0.1", 8080)
        for literal in ("169.254.169.254", "10.0.0.1", "::1", "::ffff:169.254.169.254"):
            with pytest.raises(OSError, match=f"{literal} .*list"):
                await resolver.resolve(literal, 80)
        assert dns.asked == []

    asyncio.run(main())


def test_settings_list_networks_and_refuse_bad_entries(tmp_path: Path) -> None:
    settings = CrawlerSettings(data_dir=tmp_path, allowed_networks=("127.0.0.0/8", "fd00::/8"))
    settings.validate()
    assert scope_for(settings).refusal("127.0.0.1:8080", 0) is None
    with pytest.raises(SettingsError, match=r"^--allow-network / \[crawl\] allow_networks: "
                                            r"'localhost' is not an IP address or network"):
        settings.with_changes(allowed_networks=("127.0.0.0/8", "localhost"))
    with pytest.raises(SettingsError, match=r"'10.0.0.1/8' has host bits set"):
        settings.with_changes(allowed_networks=("10.0.0.1/8",))


def test_archive_toml_allow_networks_reach_the_crawler(tmp_path: Path) -> None:
    (tmp_path / "archive.toml").write_text('[crawl]\nallow_networks = ["10.0.0.0/8", "fd00::/8"]\n')
    assert from_settings(load_settings(tmp_path, environ={})).allowed_networks == (
        "10.0.0.0/8", "fd00::/8")
    assert from_settings(Settings(data_dir=tmp_path)).allowed_networks == ()
    (tmp_path / "archive.toml").write_text('[crawl]\nallow_networks = ["intranet"]\n')
    with pytest.raises(SettingsError, match="allow_networks: 'intranet' is not an IP address"):
        from_settings(load_settings(tmp_path, environ={}))


def test_legacy_allow_private_addresses_means_loopback_only_and_warns_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("frontier_service.service.crawler_settings._warned", set())
    (tmp_path / "archive.toml").write_text("[crawl]\nallow_private_addresses = true\n")
    legacy = load_settings(tmp_path, environ={})  # an old file still loads
    with caplog.at_level(logging.WARNING):
        first = from_settings(legacy)
        again = from_settings(legacy)
    assert first.allowed_networks == again.allowed_networks == ("127.0.0.0/8", "::1")
    scope = scope_for(first)
    assert scope.refusal("127.0.0.1:8080", 0) is None and scope.refusal("[::1]", 0) is None
    assert scope.refusal("10.0.0.1", 0) is not None
    assert scope.refusal("169.254.169.254", 0) is not None
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "allow_private_addresses = true in archive.toml now allows loopback only" in (
        warning.getMessage())
    assert 'allow_networks = ["127.0.0.0/8"]' in warning.getMessage()
    off = Settings(data_dir=tmp_path, crawl=CrawlSettings(allow_private_addresses=False))
    assert from_settings(off).allowed_networks == ()
