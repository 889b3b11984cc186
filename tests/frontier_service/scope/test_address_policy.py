"""AddressPolicy: public addresses pass, others need a listed network, metadata an exact one."""

from __future__ import annotations

from ipaddress import IPv6Address

import pytest

from frontier_service.scope.address_policy import (
    AddressPolicy,
    embedded_ipv4,
    ip_literal,
    parse_network,
)

pytestmark = pytest.mark.unit

PUBLIC_ONLY = AddressPolicy()
CGNAT = "shared address space (carrier-grade NAT)"


@pytest.mark.parametrize("address", [
    "8.8.8.8", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8", "2002:808:808::1",
    "64:ff9b::808:808",
])
def test_public_addresses_are_always_allowed(address: str) -> None:
    assert PUBLIC_ONLY.refusal(address) is None


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
    ("10.0.0.1", "private"), ("172.16.5.4", "private"), ("192.168.1.1", "private"),
    ("fd12:3456::1", "private"), ("fc00::1", "private"),
    ("100.64.0.1", CGNAT), ("100.127.255.254", CGNAT),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"), ("240.0.0.1", "reserved"), ("255.255.255.255", "reserved"),
    ("192.0.2.7", "not a public address"), ("2001:db8::1", "not a public address"),
])
def test_non_public_addresses_are_refused_by_default(address: str, kind: str) -> None:
    assert PUBLIC_ONLY.refusal(address) == (
        f"{address} is {kind}; list a network holding it with --allow-network to crawl it")


@pytest.mark.parametrize("address", [
    "169.254.169.254", "169.254.0.1", "fe80::1", "fe80::1%eth0", "fd00:ec2::254",
    "100.100.100.200", "192.0.0.192", "168.63.129.16",
])
def test_link_local_and_metadata_are_refused_by_default(address: str) -> None:
    assert PUBLIC_ONLY.refusal(address) == (
        f"{address} is link-local/cloud metadata; list it exactly with --allow-network to crawl it")


@pytest.mark.parametrize(("address", "inner"), [
    ("::ffff:169.254.169.254", "169.254.169.254"), ("::ffff:127.0.0.1", "127.0.0.1"),
    ("::ffff:10.0.0.1", "10.0.0.1"), ("::127.0.0.1", "127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "169.254.169.254"), ("2002:a9fe:a9fe::1", "169.254.169.254"),
    ("2002:0a00:0001::", "10.0.0.1"),
])
def test_an_ipv6_address_embedding_ipv4_is_judged_as_that_ipv4(address: str, inner: str) -> None:
    reason = PUBLIC_ONLY.refusal(address)
    assert reason is not None and reason.startswith(f"{address} (IPv4 {inner}) is ")
    assert AddressPolicy([inner]).refusal(address) is None  # listing the IPv4 opens it


@pytest.mark.parametrize("listed", ["169.254.0.0/16", "169.254.169.0/24", "0.0.0.0/0", "::/0",
                                    "::ffff:0:0/96", "fd00:ec2::/32", "100.64.0.0/10"])
def test_a_network_listing_does_not_open_metadata_addresses(listed: str) -> None:
    policy = AddressPolicy([listed])
    for address in ("169.254.169.254", "::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200"):
        assert policy.refusal(address) is not None, (listed, address)


@pytest.mark.parametrize("listed", ["169.254.169.254", "169.254.169.254/32", " 169.254.169.254 ",
                                    "::ffff:169.254.169.254"])
def test_an_exact_listing_opens_a_metadata_address_and_nothing_near_it(listed: str) -> None:
    policy = AddressPolicy([listed])
    assert policy.refusal("169.254.169.254") is None
    assert policy.refusal("::ffff:169.254.169.254") is None
    assert policy.refusal("169.254.169.253") is not None
    assert policy.refusal("10.0.0.1") is not None


def test_link_local_ipv6_opens_only_to_its_exact_address() -> None:
    assert AddressPolicy(["fe80::/10"]).refusal("fe80::1") is not None
    assert AddressPolicy(["fe80::1/128"]).refusal("fe80::1%eth0") is None
    assert AddressPolicy(["fd00:ec2::254"]).refusal("fd00:ec2::254") is None


def test_a_broad_listing_opens_ordinary_non_public_addresses() -> None:
    everything = AddressPolicy(["0.0.0.0/0", "::/0"])
    for address in ("10.0.0.1", "127.0.0.1", "::1", "fd00::1", "100.64.0.1", "0.0.0.0"):
        assert everything.refusal(address) is None, address


def test_loopback_only_when_listed() -> None:
    loopback = AddressPolicy(["127.0.0.0/8"])
    assert loopback.refusal("127.0.0.1") is None and loopback.refusal("127.255.0.9") is None
    assert loopback.refusal("::1") is not None  # IPv6 loopback is its own entry
    assert loopback.refusal("10.0.0.1") is not None
    assert loopback.refusal("0.0.0.0") is not None  # "this host" is not loopback's to open
    assert loopback.refusal("169.254.169.254") is not None
    assert AddressPolicy(["::1"]).refusal("::1") is None
    assert AddressPolicy(["10.0.0.0/8"]).refusal("10.20.30.40") is None
    assert AddressPolicy(["10.0.0.0/8"]).refusal("11.0.0.1") is None  # public anyway
    assert AddressPolicy(["10.0.0.0/8"]).refusal("172.16.0.1") is not None


def test_something_that_is_no_address_is_refused() -> None:
    assert PUBLIC_ONLY.refusal("example.com") == "'example.com' is not an IP address"
    assert PUBLIC_ONLY.refusal("127.1") == "'127.1' is not an IP address"


@pytest.mark.parametrize(("entry", "message"), [
    ("127.0.0.1/8", r"'127.0.0.1/8' has host bits set \(did you mean 127.0.0.0/8\?\)"),
    ("localhost", "'localhost' is not an IP address or network"),
    ("10.0.0.0/33", "'10.0.0.0/33' is not an IP address or network"),
    ("", "'' is not an IP address or network"),
])
def test_bad_entries_are_refused_naming_the_entry(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AddressPolicy(["127.0.0.0/8", entry])


@pytest.mark.parametrize(("entry", "network"), [
    ("127.0.0.0/8", "127.0.0.0/8"), ("10.1.2.3", "10.1.2.3/32"), ("[::1]", "::1/128"),
    ("fd00::/8", "fd00::/8"), ("::ffff:127.0.0.0/104", "127.0.0.0/8"),
])
def test_entries_parse_to_networks(entry: str, network: str) -> None:
    assert str(parse_network(entry)) == network


@pytest.mark.parametrize(("host", "literal"), [
    ("127.0.0.1", "127.0.0.1"), ("[::1]", "::1"), ("::1", "::1"), ("example.com", None),
    ("127.1", None), ("0x7f000001", None), ("", None), ("1.2.3.4.5", None),
])
def test_ip_literal(host: str, literal: str | None) -> None:
    found = ip_literal(host)
    assert (None if found is None else str(found)) == literal


def test_plain_ipv6_embeds_nothing() -> None:
    assert embedded_ipv4(IPv6Address("::1")) is None
    assert embedded_ipv4(IPv6Address("2606:4700::1111")) is None
