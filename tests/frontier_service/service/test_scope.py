"""Scope, private addresses and the host-map resolver: pure rules, parametrized."""

from __future__ import annotations

import asyncio
import socket

import pytest

from frontier_service.service.resolver import CrawlResolver, parse_target
from frontier_service.service.scope import Scope, host_of, is_private_address


@pytest.mark.parametrize(("host", "private"), [
    ("127.0.0.1", True), ("10.1.2.3", True), ("192.168.0.9", True), ("169.254.1.1", True),
    ("0.0.0.0", True), ("[::1]", True), ("[fe80::1]", True), ("224.0.0.1", True),
    ("8.8.8.8", False), ("[2606:4700::1111]", False), ("example.com", False), ("localhost", False),
])
def test_private_addresses(host: str, private: bool) -> None:
    assert is_private_address(host) is private


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


def test_depth_and_private_hosts() -> None:
    scope = Scope(max_depth=2)
    assert scope.refusal("example.com", 2) is None
    assert scope.refusal("example.com", 3) == "too deep"
    assert scope.refusal("127.0.0.1:8080", 0) == "domain not allowed"
    assert Scope(max_depth=2, allow_private=True).refusal("127.0.0.1:8080", 0) is None


@pytest.mark.parametrize(("target", "parsed"), [
    ("127.0.0.1", ("127.0.0.1", None)), ("127.0.0.1:8080", ("127.0.0.1", 8080)),
    ("[::1]:80", ("::1", 80)), ("::1", ("::1", None)),
])
def test_host_map_targets(target: str, parsed: tuple[str, int | None]) -> None:
    assert parse_target(target) == parsed


@pytest.mark.parametrize("target", ["", ":80", "127.0.0.1:0", "127.0.0.1:99999"])
def test_bad_host_map_targets(target: str) -> None:
    with pytest.raises(ValueError):
        parse_target(target)


def test_resolver_maps_names_and_globs_and_refuses_private_results() -> None:
    async def main() -> None:
        mapped = CrawlResolver([("*.test", "127.0.0.1:8080"), ("one.example", "10.0.0.5")],
                               allow_private=True)
        (hit,) = await mapped.resolve("Site0001.TEST", 80, socket.AF_INET)
        assert (hit["host"], hit["port"], hit["hostname"]) == ("127.0.0.1", 8080, "Site0001.TEST")
        (exact,) = await mapped.resolve("one.example", 443)
        assert (exact["host"], exact["port"]) == ("10.0.0.5", 443)
        strict = CrawlResolver([("*.test", "127.0.0.1:8080")], allow_private=False)
        with pytest.raises(OSError, match="private"):
            await strict.resolve("site0001.test", 80)
        with pytest.raises(OSError, match="private"):
            await strict.resolve("localhost", 80)
        await strict.close()

    asyncio.run(main())
