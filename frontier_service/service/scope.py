"""Crawl scope: allowed domains or glob patterns, maximum depth, private and loopback addresses."""

from __future__ import annotations

import fnmatch
import ipaddress
from collections.abc import Sequence
from functools import lru_cache


def is_private_address(host: str) -> bool:
    """True for an IP literal that is loopback, private, link-local, reserved or unspecified.

    Names are not resolved here (the resolver checks what they resolve to).
    """
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(literal)
    except ValueError:
        return False
    return not address.is_global or address.is_multicast


def host_of(domain_key: str) -> str:
    """The host of a domain key (`host` or `host:port`, IPv6 in brackets)."""
    if domain_key.startswith("["):
        return domain_key[: domain_key.index("]") + 1]
    return domain_key.rsplit(":", 1)[0] if ":" in domain_key else domain_key


class Scope:
    """Which canonical URLs the crawl may queue.

    Args:
        allowed: host names (matching themselves and their subdomains) or glob patterns
            (`*.test`, `site00??.test`); empty allows every host.
        max_depth: links deeper than this (seeds are depth 0) are not queued.
        allow_private: allow IP-literal hosts in private, loopback and reserved ranges.
    """

    def __init__(self, allowed: Sequence[str] = (), *, max_depth: int = 3,
                 allow_private: bool = False) -> None:
        self.max_depth = max_depth
        self.allow_private = allow_private
        names = [entry.strip().lower().rstrip(".") for entry in allowed if entry.strip()]
        self._patterns = tuple(n for n in names if any(c in n for c in "*?["))
        self._names = frozenset(n.removeprefix(".") for n in names if n not in self._patterns)
        self.allows_domain = lru_cache(maxsize=1 << 16)(self._allows_domain)

    def refusal(self, domain_key: str, depth: int) -> str | None:
        """Why a URL of this domain at this depth is out of scope, or None if it is in."""
        if depth > self.max_depth:
            return "too deep"
        if not self.allows_domain(domain_key):
            return "domain not allowed"
        return None

    def _allows_domain(self, domain_key: str) -> bool:
        host = host_of(domain_key)
        if not self.allow_private and is_private_address(host):
            return False
        if not self._names and not self._patterns:
            return True
        if host in self._names:
            return True
        labels = host.split(".")
        if any(".".join(labels[i:]) in self._names for i in range(1, len(labels))):
            return True
        return any(fnmatch.fnmatchcase(host, pattern) for pattern in self._patterns)
