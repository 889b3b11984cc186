"""--allow-network with ports: the entry syntax, and the policy, scope and resolver judging the
port a connection would use."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from archive_pipelines.archive_error import SettingsError
from frontier_service.fetch.failures import AddressRefused
from frontier_service.scope.address_policy import AddressPolicy, parse_entry
from frontier_service.scope.crawl_scope import Scope, port_of
from frontier_service.scope.resolver import CrawlResolver
from frontier_service.service.crawler_settings import CrawlerSettings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("entry", "shown", "ports"), [
    ("127.0.0.0/8", "127.0.0.0/8", None),
    ("127.0.0.1", "127.0.0.1", None),
    ("127.0.0.1:8080", "127.0.0.1:8080", (8080, 8080)),
    (" 127.0.0.0/8:8000-8999 ", "127.0.0.0/8:8000-8999", (8000, 8999)),
    ("10.0.0.0/8:1-65535", "10.0.0.0/8:1-65535", (1, 65535)),
    ("::1", "::1", None),
    ("[::1]", "::1", None),
    ("[::1]:8080", "[::1]:8080", (8080, 8080)),
    ("[fd00::/8]:8000-8999", "[fd00::/8]:8000-8999", (8000, 8999)),
    ("::1:8080", "::1:8080", None),  # unbracketed: an IPv6 address, no port
    ("[::ffff:127.0.0.1]:80", "127.0.0.1:80", (80, 80)),  # judged as the IPv4 it maps
    ("169.254.169.254:80", "169.254.169.254:80", (80, 80)),
])
def test_entries_parse_to_a_network_and_ports(entry: str, shown: str,
                                              ports: tuple[int, int] | None) -> None:
    parsed = parse_entry(entry)
    assert (str(parsed), parsed.ports) == (shown, ports)


@pytest.mark.parametrize(("entry", "message"), [
    ("127.0.0.1:", r"'127.0.0.1:': '' is not a port \(8080\) or port range \(8000-8999\)"),
    ("127.0.0.1:http", r"'127.0.0.1:http': 'http' is not a port"),
    ("127.0.0.1:80,443", r"'127.0.0.1:80,443': '80,443' is not a port"),
    ("127.0.0.1:8080-", r"'127.0.0.1:8080-': '8080-' is not a port"),
    ("127.0.0.1:0", r"'127.0.0.1:0': ports are 1 to 65535"),
    ("127.0.0.1:65536", r"'127.0.0.1:65536': ports are 1 to 65535"),
    ("127.0.0.1:9000-8000", r"'127.0.0.1:9000-8000': the range '9000-8000' ends before it starts"),
    ("[::1]8080", r"'\[::1\]8080' is not \[ADDRESS\] or \[ADDRESS\]:PORT"),
    ("[::1", r"'\[::1' is not \[ADDRESS\] or \[ADDRESS\]:PORT"),
    ("[::1]:", r"'\[::1\]:': '' is not a port"),
    ("localhost:8080", r"'localhost:8080' is not an IP address or network \(e\.g\. "),
    ("127.0.0.1/8:80", r"'127.0.0.1/8:80' has host bits set \(did you mean 127.0.0.0/8\?\)"),
    ("[fd00::1/8]:80", r"'\[fd00::1/8\]:80' has host bits set"),
])
def test_bad_entries_say_what_is_wrong(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_entry(entry)


def test_a_bad_entry_is_a_settings_error_naming_the_option() -> None:
    with pytest.raises(SettingsError, match=r"--allow-network / \[crawl\] allow_networks: "
                                            r"'127.0.0.1:99999': ports are 1 to 65535"):
        CrawlerSettings(data_dir=Path("/nonexistent")).with_changes(
            allowed_networks=("127.0.0.1:99999",))


TEST_WEB = AddressPolicy(["127.0.0.1:8080"])


def test_a_port_listing_opens_only_its_ports_on_its_addresses() -> None:
    assert TEST_WEB.refusal("127.0.0.1", 8080) is None
    assert TEST_WEB.refusal("127.0.0.1", 6379) == (
        "127.0.0.1 port 6379 is not among the ports listed for it (127.0.0.1:8080); "
        "list 127.0.0.1:6379 with --allow-network to crawl it")
    assert TEST_WEB.refusal("127.0.0.1", 22) is not None
    assert TEST_WEB.refusal("127.0.0.1", 80) is not None
    assert TEST_WEB.refusal("127.0.0.1", 0) is not None
    assert TEST_WEB.refusal("127.0.0.1") == (
        "127.0.0.1 is listed only with ports (127.0.0.1:8080)")  # None: every port
    assert TEST_WEB.refusal("127.0.0.2", 8080) == (
        "127.0.0.2 is loopback; list a network holding it with --allow-network to crawl it")
    assert TEST_WEB.refusal("::ffff:127.0.0.1", 8080) is None  # mapped: judged as IPv4
    assert TEST_WEB.refusal("::ffff:127.0.0.1", 6379) is not None
    assert TEST_WEB.refusal("::1", 8080) is not None
    assert TEST_WEB.refusal("8.8.8.8", 6379) is None  # public addresses: every port


def test_ranges_and_several_listings_add_up() -> None:
    policy = AddressPolicy(["127.0.0.0/8:8000-8999", "127.0.0.1:443", "[::1]:8080", "10.0.0.0/8"])
    for address, port in [("127.0.0.1", 8000), ("127.9.9.9", 8999), ("127.0.0.1", 443),
                          ("::1", 8080), ("10.1.2.3", 6379), ("10.1.2.3", None)]:
        assert policy.refusal(address, port) is None, (address, port)
    for address, port in [("127.0.0.1", 7999), ("127.0.0.1", 9000), ("127.0.0.2", 443),
                          ("::1", 8081), ("127.0.0.1", None), ("172.16.0.1", 8000)]:
        assert policy.refusal(address, port) is not None, (address, port)
    reason = policy.refusal("127.0.0.1", 6379)
    assert reason is not None and "(127.0.0.0/8:8000-8999, 127.0.0.1:443)" in reason
    assert policy.refusal("::1", 22) == (
        "::1 port 22 is not among the ports listed for it ([::1]:8080); "
        "list [::1]:22 with --allow-network to crawl it")


def test_metadata_needs_an_exact_listing_with_ports_too() -> None:
    assert AddressPolicy(["169.254.169.254:80"]).refusal("169.254.169.254", 80) is None
    assert AddressPolicy(["169.254.169.254:80"]).refusal("169.254.169.254", 8080) is not None
    assert AddressPolicy(["169.254.0.0/16:80"]).refusal("169.254.169.254", 80) == (
        "169.254.169.254 is link-local/cloud metadata; list it exactly with --allow-network "
        "to crawl it")


def test_address_refusal_asks_whether_any_port_is_open() -> None:
    assert TEST_WEB.address_refusal("127.0.0.1") is None
    assert TEST_WEB.address_refusal("127.0.0.2") is not None
    assert AddressPolicy().address_refusal("10.0.0.1") is not None


@pytest.mark.parametrize(("key", "port"), [
    ("example.com", None), ("example.com:8080", 8080), ("127.0.0.1:6379", 6379),
    ("[::1]", None), ("[::1]:8080", 8080),
])
def test_port_of_a_domain_key(key: str, port: int | None) -> None:
    assert port_of(key) == port


def test_the_scope_judges_a_literal_hosts_port() -> None:
    scope = Scope(addresses=TEST_WEB)
    assert scope.refusal("127.0.0.1:8080", 0) is None
    assert scope.refusal("127.0.0.1:6379", 0) is not None
    assert scope.refusal("127.0.0.1", 0) is not None  # 80 or 443, neither listed
    assert Scope(addresses=AddressPolicy(["127.0.0.1:443"])).refusal("127.0.0.1", 0) is None
    assert Scope(addresses=AddressPolicy(["[::1]:8080"])).refusal("[::1]:8080", 0) is None
    assert Scope(addresses=AddressPolicy(["[::1]:8080"])).refusal("[::1]:8081", 0) is not None


class FixedDNS(AbstractResolver):
    """The system resolver's stand-in: every name is 127.0.0.1, on the port asked about
    unless `port` is given (a resolver may answer with another port: that one is connected to)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        return [ResolveResult(hostname=host, host="127.0.0.1", port=self.port or port,
                              family=socket.AF_INET, proto=0, flags=socket.AI_NUMERICHOST)]

    async def close(self) -> None:
        pass


def resolve(resolver: CrawlResolver, host: str, port: int) -> list[ResolveResult]:
    return asyncio.run(resolver.resolve(host, port))


def test_the_resolver_judges_the_port_it_hands_to_the_connector() -> None:
    resolver = CrawlResolver(
        [("web.test", "127.0.0.1:8080"), ("redis.test", "127.0.0.1:6379"), ("bare.test", "127.0.0.1")],
        policy=TEST_WEB, names=FixedDNS())
    [web] = resolve(resolver, "web.test", 80)  # host_map's port replaces the URL's
    assert (web["host"], web["port"]) == ("127.0.0.1", 8080)
    with pytest.raises(AddressRefused, match=r"host_map sends redis\.test to 127\.0\.0\.1, which "
                                             r"is refused: 127\.0\.0\.1 port 6379 is not among"):
        resolve(resolver, "redis.test", 80)
    assert resolve(resolver, "bare.test", 8080)[0]["port"] == 8080
    with pytest.raises(AddressRefused, match="port 22 is not among"):
        resolve(resolver, "bare.test", 22)
    assert resolve(resolver, "127.0.0.1", 8080)[0]["port"] == 8080
    with pytest.raises(AddressRefused, match="port 6379 is not among"):
        resolve(resolver, "127.0.0.1", 6379)
    assert resolve(resolver, "named.test", 8080)[0]["port"] == 8080
    with pytest.raises(AddressRefused, match=r"named.test resolves only to refused addresses "
                                             r"\(127.0.0.1 port 6379 is not among"):
        resolve(resolver, "named.test", 6379)


def test_the_resolver_judges_the_answers_port() -> None:
    resolver = CrawlResolver(policy=TEST_WEB, names=FixedDNS(port=6379))
    with pytest.raises(AddressRefused, match="port 6379"):
        resolve(resolver, "sneaky.test", 8080)


def test_a_host_map_target_on_an_unlisted_port_is_warned_about(
        caplog: pytest.LogCaptureFixture) -> None:
    CrawlResolver([("a.test", "127.0.0.1:8080"), ("b.test", "127.0.0.1")], policy=TEST_WEB)
    assert "will be refused" not in caplog.text
    CrawlResolver([("c.test", "127.0.0.1:6379")], policy=TEST_WEB)
    assert "host_map sends c.test to 127.0.0.1:6379, which will be refused" in caplog.text
