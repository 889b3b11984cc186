"""AddressPolicy: which IP addresses the crawl may connect to.

Public (global) addresses always; any other address (loopback, private, shared, link-local,
multicast, reserved, unspecified ...) only inside a network the operator listed
(`--allow-network`, `[crawl] allow_networks`). Link-local and cloud-metadata addresses open
only to an exact listing: they hand out credentials, and a broad network listed for a test
web (169.254.0.0/16, 0.0.0.0/0) must not open them by accident. An IPv6 address that embeds
an IPv4 one (mapped, compatible, NAT64, 6to4) is judged as that IPv4 address.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

# What the legacy `allow_private_addresses = true` / `--allow-private` now allows.
LOOPBACK_NETWORKS = ("127.0.0.0/8", "::1")

# Opened only by listing the address itself (a /32, a /128 or a bare address).
_LINK_LOCAL = (IPv4Network("169.254.0.0/16"), IPv6Network("fe80::/10"))
_METADATA = frozenset(ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean ...
    "fd00:ec2::254",  # AWS over IPv6
    "100.100.100.200",  # Alibaba Cloud
    "192.0.0.192",  # Oracle Cloud
    "168.63.129.16",  # Azure's wire server (a public address, reachable only inside Azure)
))

_MAPPED = IPv6Network("::ffff:0:0/96")
_COMPATIBLE = IPv6Network("::/96")  # deprecated IPv4-compatible (but :: and ::1 are not)
_NAT64 = IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = IPv6Network("2002::/16")
_SHARED = IPv4Network("100.64.0.0/10")  # carrier-grade NAT
_PRIVATE = (IPv4Network("10.0.0.0/8"), IPv4Network("172.16.0.0/12"),
            IPv4Network("192.168.0.0/16"), IPv6Network("fc00::/7"))  # RFC 1918, unique-local

_HINT_EXACT = "list it exactly with --allow-network to crawl it"
_HINT_NETWORK = "list a network holding it with --allow-network to crawl it"


def ip_literal(host: str) -> IPAddress | None:
    """The address a host names if it is an IP literal (IPv6 may be in brackets), else None."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" not in text and not text.replace(".", "").isdigit():
        return None  # a name: skip the exception ipaddress would raise
    try:
        return ip_address(text)
    except ValueError:
        return None


def parse_network(entry: str) -> IPNetwork:
    """A listed network: CIDR (`10.0.0.0/8`, `fd00::/8`) or one address; ValueError saying why not.

    An IPv4-mapped IPv6 entry (`::ffff:127.0.0.1`) becomes the IPv4 network it names, since
    mapped addresses are judged as IPv4.
    """
    text = entry.strip()
    text = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        network = ip_network(text)
    except ValueError as exc:
        if "has host bits set" in str(exc):
            raise ValueError(f"{entry!r} has host bits set (did you mean "
                             f"{ip_network(text, strict=False)}?)") from None
        raise ValueError(f"{entry!r} is not an IP address or network "
                         "(e.g. 127.0.0.0/8, 10.1.2.3, fd00::/8)") from None
    if isinstance(network, IPv6Network) and network.prefixlen >= 96 and network.subnet_of(_MAPPED):
        mapped = network.network_address.ipv4_mapped
        assert mapped is not None
        return IPv4Network((mapped, network.prefixlen - 96))
    return network


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
    """Judges addresses against the listed networks (empty: public addresses only).

    Raises ValueError naming the first entry that is not an address or network.
    """

    def __init__(self, allowed_networks: Iterable[str] = ()) -> None:
        self.networks: tuple[IPNetwork, ...] = tuple(parse_network(e) for e in allowed_networks)
        self._exact = frozenset(n.network_address for n in self.networks
                                if n.prefixlen == n.max_prefixlen)

    def allows(self, address: str | IPAddress) -> bool:
        return self.refusal(address) is None

    def refusal(self, address: str | IPAddress) -> str | None:
        """Why the crawl must not connect to this address, or None if it may."""
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
                reason = self._refusal_of(inner)
                return None if reason is None else f"{shown} (IPv4 {inner}) {reason}"
        reason = self._refusal_of(address)
        return None if reason is None else f"{shown} {reason}"

    def _refusal_of(self, address: IPAddress) -> str | None:
        """`is <kind>; <hint>` for a refused address, None for an allowed one."""
        if address in _METADATA or any(address in net for net in _LINK_LOCAL):
            if address in self._exact:
                return None
            return f"is link-local/cloud metadata; {_HINT_EXACT}"
        if _is_public(address):
            return None
        if any(address in net for net in self.networks):
            return None
        return f"is {_kind(address)}; {_HINT_NETWORK}"


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
