"""Network entries of a crawl's scope: `[crawl] allow_networks`, `--allow-network` and a crawl
definition's `allowed_networks` (CIDR or one address, then optionally :PORT or :FIRST-LAST;
IPv6 with ports in brackets), and `host_map` targets (`IP[:PORT]`). Parsed here, where the
settings are validated; the crawler's `frontier_service.scope` judges addresses against them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

# What the legacy `allow_private_addresses = true` / `--allow-private` now allows.
LOOPBACK_NETWORKS = ("127.0.0.0/8", "::1")

_MAPPED = IPv6Network("::ffff:0:0/96")
_ENTRY_FORMS = "e.g. 127.0.0.0/8, 10.1.2.3, fd00::/8, 127.0.0.1:8080, 127.0.0.0/8:8000-8999, [::1]:8080"
_PORTS = re.compile(r"([0-9]{1,5})(?:-([0-9]{1,5}))?", re.ASCII)


def ip_literal(host: str) -> IPAddress | None:
    """The address a host names if it is an IP literal (IPv6 may be in brackets), else None."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" not in text and not text.replace(".", "").isdigit():
        return None  # a name: skip the exception ipaddress would raise
    try:
        return ip_address(text)
    except ValueError:
        return None


def parse_target(target: str) -> tuple[str, int | None]:
    """`ip` or `ip:port` (IPv6 as `[ip]:port`) as (ip, port or None); ValueError if malformed."""
    text = target.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":") if rest else ""
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ValueError(f"host_map target {target!r} has no address")
    if ip_literal(host) is None:  # a name would be looked up again when connecting, unchecked
        raise ValueError(f"host_map target {target!r} is not an IP address")
    if port_text and not port_text.isdigit():
        raise ValueError(f"host_map target {target!r}: {port_text!r} is not a port")
    port = int(port_text) if port_text else None
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"host_map target {target!r}: port out of range")
    return host, port


@dataclass(frozen=True)
class AllowedNetwork:
    """One listed network, and the ports it opens (None: every port)."""

    network: IPNetwork
    ports: tuple[int, int] | None = None  # first and last port, inclusive

    @property
    def exact(self) -> bool:
        """One address (a /32 or /128), as link-local and metadata addresses need."""
        return self.network.prefixlen == self.network.max_prefixlen

    def opens(self, port: int | None) -> bool:
        """Whether this listing opens `port` (None: every port, which only a listing without
        ports does)."""
        if self.ports is None:
            return True
        return port is not None and self.ports[0] <= port <= self.ports[1]

    def __str__(self) -> str:
        network = str(self.network.network_address) if self.exact else str(self.network)
        if self.ports is None:
            return network
        host = f"[{network}]" if self.network.version == 6 else network
        return f"{host}:{_ports_text(self.ports)}"


def _ports_text(ports: tuple[int, int]) -> str:
    return str(ports[0]) if ports[0] == ports[1] else f"{ports[0]}-{ports[1]}"


def parse_entry(entry: str) -> AllowedNetwork:
    """A listed network with its ports, if any; ValueError saying why not.

    `NETWORK` opens every port, `NETWORK:PORT` or `NETWORK:FIRST-LAST` only those. NETWORK is
    CIDR or one address; an IPv6 one takes ports only inside brackets (`[::1]:8080`,
    `[fd00::/8]:8000-8999`), since `::1:8080` is itself an IPv6 address.
    """
    text = entry.strip()
    port_text: str | None = None
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"{entry!r} is not [ADDRESS] or [ADDRESS]:PORT ({_ENTRY_FORMS})")
        text, port_text = inside, (rest[1:] if rest else None)
    elif text.count(":") == 1:  # IPv4 and a port (an IPv6 address holds two colons or more)
        text, port_text = text.split(":")
    network = parse_network(text, shown=entry)
    if port_text is None:
        return AllowedNetwork(network)
    return AllowedNetwork(network, _parse_ports(port_text, entry))


def _parse_ports(text: str, entry: str) -> tuple[int, int]:
    match = _PORTS.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{entry!r}: {text!r} is not a port (8080) or port range (8000-8999)")
    first = int(match.group(1))
    last = first if match.group(2) is None else int(match.group(2))
    if not 1 <= first <= 65535 or not 1 <= last <= 65535:
        raise ValueError(f"{entry!r}: ports are 1 to 65535")
    if first > last:
        raise ValueError(f"{entry!r}: the range {text!r} ends before it starts")
    return first, last


def parse_network(entry: str, *, shown: str | None = None) -> IPNetwork:
    """One network without ports: CIDR (`10.0.0.0/8`, `fd00::/8`) or one address; ValueError
    saying why not (naming `shown`, default `entry`).

    An IPv4-mapped IPv6 entry (`::ffff:127.0.0.1`) becomes the IPv4 network it names, since
    mapped addresses are judged as IPv4.
    """
    shown = entry if shown is None else shown
    text = entry.strip()
    text = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        network = ip_network(text)
    except ValueError as exc:
        if "has host bits set" in str(exc):
            raise ValueError(f"{shown!r} has host bits set (did you mean "
                             f"{ip_network(text, strict=False)}?)") from None
        raise ValueError(f"{shown!r} is not an IP address or network ({_ENTRY_FORMS})") from None
    if isinstance(network, IPv6Network) and network.prefixlen >= 96 and network.subnet_of(_MAPPED):
        mapped = network.network_address.ipv4_mapped
        assert mapped is not None
        return IPv4Network((mapped, network.prefixlen - 96))
    return network
