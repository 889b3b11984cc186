"""AddressPolicy: which IP addresses (and ports) the crawl may connect to.

Public (global) addresses always, on any port; any other address (loopback, private, shared,
link-local, multicast, reserved, unspecified ...) only inside a network the operator listed
(`--allow-network`, `[crawl] allow_networks`), and only on the ports listed with it, if any
(`127.0.0.1:8080`, `127.0.0.0/8:8000-8999`, `[::1]:8080`: see `parse_entry`). Link-local
and cloud-metadata addresses open only to an exact listing: they hand out credentials, and a
broad network listed for a test web (169.254.0.0/16, 0.0.0.0/0) must not open them by
accident. An IPv6 address that embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is
judged as that IPv4 address.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

# The entries' syntax is the settings' (a crawl definition's networks are validated there).
from archive_pipelines.crawls.networks import (
    LOOPBACK_NETWORKS,
    AllowedNetwork,
    IPAddress,
    IPNetwork,
    ip_literal,
    parse_entry,
    parse_network,
)

__all__ = ["LOOPBACK_NETWORKS", "AddressPolicy", "AllowedNetwork", "IPAddress", "IPNetwork",
           "embedded_ipv4", "ip_literal", "parse_entry", "parse_network"]

# Opened only by listing the address itself (a /32, a /128 or a bare address).
_LINK_LOCAL = (IPv4Network("169.254.0.0/16"), IPv6Network("fe80::/10"))
_METADATA = frozenset(ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean ...
    "fd00:ec2::254",  # AWS over IPv6
    "100.100.100.200",  # Alibaba Cloud
    "192.0.0.192",  # Oracle Cloud
    "168.63.129.16",  # Azure's wire server (a public address, reachable only inside Azure)
))

_COMPATIBLE = IPv6Network("::/96")  # deprecated IPv4-compatible (but :: and ::1 are not)
_NAT64 = IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = IPv6Network("2002::/16")
_SHARED = IPv4Network("100.64.0.0/10")  # carrier-grade NAT
_PRIVATE = (IPv4Network("10.0.0.0/8"), IPv4Network("172.16.0.0/12"),
            IPv4Network("192.168.0.0/16"), IPv6Network("fc00::/7"))  # RFC 1918, unique-local

_HINT_EXACT = "list it exactly with --allow-network to crawl it"
_HINT_NETWORK = "list a network holding it with --allow-network to crawl it"


def embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    value = int(address)
    if value in (0, 1):  # :: and ::1 are themselves, not IPv4-compatible 0.0.0.0 / 0.0.0.1
        return None
    if address in _COMPATIBLE or address in _NAT64:
        return IPv4Address(value & 0xFFFF_FFFF)
    return None


class AddressPolicy:
    """Judges addresses and ports against the listed networks (none: public addresses only).

    Raises ValueError naming the first entry that is not a network with optional ports.
    """

    def __init__(self, allowed_networks: Iterable[str] = ()) -> None:
        self.entries: tuple[AllowedNetwork, ...] = tuple(parse_entry(e) for e in allowed_networks)

    def allows(self, address: str | IPAddress, port: int | None = None) -> bool:
        return self.refusal(address, port) is None

    def refusal(self, address: str | IPAddress, port: int | None = None) -> str | None:
        """Why the crawl must not connect to this address and port, or None if it may.

        Pass the port the connection will use: None stands for every port, so only a listing
        without ports opens the address then.
        """
        shown = str(address)  # as given; an IPv6 zone (fe80::1%eth0) is shown, not judged
        if isinstance(address, str):
            parsed = ip_literal(address)
            if parsed is None:
                return f"{address!r} is not an IP address"
            address = parsed
        if isinstance(address, IPv6Address):
            address = IPv6Address(int(address)) if address.scope_id else address
            inner = embedded_ipv4(address)
            if inner is not None:
                reason = self._refusal_of(inner, port)
                return None if reason is None else f"{shown} (IPv4 {inner}) {reason}"
        reason = self._refusal_of(address, port)
        return None if reason is None else f"{shown} {reason}"

    def address_refusal(self, address: str | IPAddress) -> str | None:
        """Why the crawl may connect to this address on no port at all, or None."""
        for entry in self.entries:
            if entry.ports is not None and self.refusal(address, entry.ports[0]) is None:
                return None
        return self.refusal(address)

    def _refusal_of(self, address: IPAddress, port: int | None) -> str | None:
        """`is <kind>; <hint>` for a refused address or port, None for an allowed one."""
        metadata = address in _METADATA or any(address in net for net in _LINK_LOCAL)
        if not metadata and _is_public(address):
            return None
        holding = [e for e in self.entries if address in e.network and (e.exact or not metadata)]
        if not holding:
            if metadata:
                return f"is link-local/cloud metadata; {_HINT_EXACT}"
            return f"is {_kind(address)}; {_HINT_NETWORK}"
        if any(entry.opens(port) for entry in holding):
            return None
        listed = ", ".join(dict.fromkeys(str(entry) for entry in holding))
        if port is None:
            return f"is listed only with ports ({listed})"
        where = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"
        return (f"port {port} is not among the ports listed for it ({listed}); "
                f"list {where} with --allow-network to crawl it")


def _is_public(address: IPAddress) -> bool:
    return address.is_global and not address.is_multicast and not address.is_reserved


def _kind(address: IPAddress) -> str:
    """What sort of non-public address this is, for a message."""
    if address.is_loopback:
        return "loopback"
    if address.is_unspecified:
        return "unspecified"
    if address.is_multicast:
        return "multicast"
    if address in _SHARED:
        return "shared address space (carrier-grade NAT)"
    if address.is_reserved:
        return "reserved"
    if any(address in net for net in _PRIVATE):
        return "private"
    return "not a public address"
