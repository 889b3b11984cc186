"""UrlDrops: every URL the crawl will not fetch, counted by reason and logged once per host.

A page can hold thousands of links that the crawl drops (too deep, out of scope, too long
to queue): a line per URL would drown the log, no line at all hides why a site was not
crawled. Here each drop is counted (the process's metrics, and the crawl's counters in
Redis that `frontier-service stats` shows) and the first drop of a reason on a host (the
host whose page held the link) is logged, naming the reason and an example URL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from archive_pipelines.canonical_urls import MAX_URL_BYTES, canonical_url_and_domain
from frontier_service.metrics import CrawlMetrics
from frontier_service.scope.crawl_scope import DOMAIN_NOT_ALLOWED, TOO_DEEP

log = logging.getLogger(__name__)

TOO_LONG = "too_long"
INVALID = "invalid"
OUT_OF_SCOPE = "out_of_scope"
ADDRESS_REFUSED = "address_refused"
BEYOND_MAX_DEPTH = "beyond_max_depth"
ROBOTS_DISALLOWED = "robots_disallowed"

# What the log says of each reason.
DESCRIPTIONS = {
    TOO_LONG: f"URLs longer than {MAX_URL_BYTES:,} bytes are not queued",
    INVALID: "invalid URLs are not queued",
    OUT_OF_SCOPE: "links to hosts outside the allowed domains are not followed",
    ADDRESS_REFUSED: "links to addresses outside the allowed networks are not followed",
    BEYOND_MAX_DEPTH: "links beyond the maximum depth are not followed",
    ROBOTS_DISALLOWED: "URLs that robots.txt disallows are recorded, not fetched",
}

COUNTER_PREFIX = "urls_dropped:"  # the crawl's counters in Redis: `urls_dropped:too_long`

_MAX_LOGGED = 100_000  # (host, reason) pairs remembered; past that, drops are only counted


def invalid_reason(url: str) -> str:
    """TOO_LONG or INVALID for a URL that did not canonicalize (the rare path: one more parse)."""
    if len(url) > MAX_URL_BYTES:
        return TOO_LONG
    try:
        canonical_url_and_domain(url)
    except ValueError as exc:
        return TOO_LONG if "longer than" in str(exc) else INVALID
    return INVALID


def scope_reason(refusal: str) -> str:
    """The drop reason of a Scope refusal."""
    if refusal == TOO_DEEP:
        return BEYOND_MAX_DEPTH
    return OUT_OF_SCOPE if refusal == DOMAIN_NOT_ALLOWED else ADDRESS_REFUSED


class UrlDrops:
    """Counts drops in `metrics.urls_dropped` and, through `persist`, the crawl's counters."""

    def __init__(self, metrics: CrawlMetrics,
                 persist: Callable[[str, int], None] | None = None) -> None:
        self.metrics = metrics
        self.persist = persist
        self._logged: set[tuple[str, str]] = set()

    def drop(self, reason: str, host: str, url: str, *, count: int = 1) -> None:
        """`count` URLs found on `host` (the first of them `url`) are dropped for `reason`."""
        if count <= 0:
            return
        dropped = self.metrics.urls_dropped
        dropped[reason] = dropped.get(reason, 0) + count
        if self.persist is not None:
            self.persist(COUNTER_PREFIX + reason, count)
        key = (host, reason)
        if key in self._logged or len(self._logged) >= _MAX_LOGGED:
            return
        self._logged.add(key)
        shown = url if len(url) <= 200 else f"{url[:120]}... ({len(url):,} bytes)"
        log.info("%s: %s (e.g. %s); further ones are counted in urls_dropped, not logged",
                 host or "seeds", DESCRIPTIONS.get(reason, reason), shown)


def dropped_counters(counters: dict[str, int]) -> dict[str, int]:
    """The drop counts by reason among a crawl's Redis counters."""
    return {name.removeprefix(COUNTER_PREFIX): value for name, value in sorted(counters.items())
            if name.startswith(COUNTER_PREFIX)}
