"""Crawl scope: allowed domains or glob patterns, maximum depth, and IP-literal hosts."""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Sequence
from functools import lru_cache

from frontier_service.scope.address_policy import AddressPolicy, ip_literal

log = logging.getLogger(__name__)

_PUBLIC_ONLY = AddressPolicy()
TOO_DEEP = "too deep"
DOMAIN_NOT_ALLOWED = "domain not allowed"


def host_of(domain_key: str) -> str:
    """The host of a domain key (`host` or `host:port`, IPv6 in brackets)."""
    if domain_key.startswith("["):
        return domain_key[: domain_key.index("]") + 1]
    return domain_key.rsplit(":", 1)[0] if ":" in domain_key else domain_key


def port_of(domain_key: str) -> int | None:
    """The port of a domain key, None when it has none (the scheme's default: 80 or 443)."""
    _, colon, port = domain_key[len(host_of(domain_key)):].partition(":")
    return int(port) if colon and port.isdigit() else None


class Scope:
    """Which canonical URLs the crawl may queue.

    Args:
        allowed: host names (matching themselves and their subdomains) or glob patterns
            (`*.test`, `site00??.test`); empty allows every host.
        max_depth: links deeper than this (seeds are depth 0) are not queued.
        addresses: which IP-literal hosts may be queued (names are judged by the
            resolver, once resolved); default: public addresses only.
    """

    def __init__(self, allowed: Sequence[str] = (), *, max_depth: int = 3,
                 addresses: AddressPolicy = _PUBLIC_ONLY) -> None:
        self.max_depth = max_depth
        self.addresses = addresses
        names = [entry.strip().lower().rstrip(".") for entry in allowed if entry.strip()]
        self._patterns = tuple(n for n in names if any(c in n for c in "*?["))
        self._names = frozenset(n.removeprefix(".") for n in names if n not in self._patterns)
        self.domain_refusal = lru_cache(maxsize=1 << 16)(self._domain_refusal)

    def refusal(self, domain_key: str, depth: int) -> str | None:
        """Why a URL of this domain at this depth is out of scope, or None if it is in."""
        if depth > self.max_depth:
            return TOO_DEEP
        return self.domain_refusal(domain_key)

    def allows_domain(self, domain_key: str) -> bool:
        return self.domain_refusal(domain_key) is None

    def _domain_refusal(self, domain_key: str) -> str | None:
        host = host_of(domain_key)
        if ip_literal(host) is not None:
            reason = self._address_refusal(host.strip("[]"), port_of(domain_key))
            if reason is not None:
                # Once per host (the result is cached): the only trace of a refused link.
                log.info("not crawling %s: %s", domain_key, reason)
                return reason
        if not self._names and not self._patterns:
            return None
        if host in self._names:
            return None
        labels = host.split(".")
        if any(".".join(labels[i:]) in self._names for i in range(1, len(labels))):
            return None
        if any(fnmatch.fnmatchcase(host, pattern) for pattern in self._patterns):
            return None
        return DOMAIN_NOT_ALLOWED

    def _address_refusal(self, address: str, port: int | None) -> str | None:
        if port is not None:
            return self.addresses.refusal(address, port)
        # No port in the key: 80 (http) or 443 (https), which the key does not tell apart.
        # Either opens the host here; the fetch checks the very port before connecting.
        reason = self.addresses.refusal(address, 80)
        if reason is None or self.addresses.refusal(address, 443) is None:
            return None
        return reason
