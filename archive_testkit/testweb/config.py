"""Settings of the test web and the names of its virtual hosts."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any


def _setting(default: Any, doc: str) -> Any:
    """A config field with its --help text (the CLI makes one flag per field)."""
    return field(default=default, metadata={"help": doc})


@dataclass(frozen=True)
class TestWebConfig:
    """Everything that shapes the test web; the same config always serves the same bytes.

    Fractions choose hosts by a stable hash of (seed, host), so a host keeps its traits
    when other settings change.
    """

    __test__ = False  # not a pytest test class, despite the name

    seed: int = _setting(0, "the same seed, host and path always give the same page")
    hosts: int = _setting(2000, "number of virtual hosts")
    host_pattern: str = _setting("site{n:04d}.test", "host name of host n")
    pages_per_host: int = _setting(1000, "ordinary pages per host")
    links_per_page: int = _setting(50, "<a href> links per page, junk and special included")
    cross_host_fraction: float = _setting(0.25, "share of ordinary links to other hosts")
    page_min_bytes: int = _setting(20_000, "smallest ordinary page")
    page_max_bytes: int = _setting(60_000, "largest ordinary page")
    latency_ms: float = _setting(0.0, "delay added to every response")
    robots_fraction: float = _setting(0.9, "share of hosts with a robots.txt")
    crawl_delay_fraction: float = _setting(0.05, "share of those that also set Crawl-delay")
    crawl_delay_s: float = _setting(2.0, "the Crawl-delay value")
    garbage_robots_fraction: float = _setting(0.005, "share of hosts whose robots.txt is junk")
    huge_robots_hosts: int = _setting(1, "hosts with an enormous robots.txt")
    huge_robots_bytes: int = _setting(5 * 1024 * 1024, "size of an enormous robots.txt")
    special_fraction: float = _setting(
        0.1, "share of hosts with redirects, 404/500s, PDF/PNG/JSON, bad encoding, bad HTML"
    )
    trap_fraction: float = _setting(0.01, "share of hosts linking /slow/ and /huge/ traps")
    slow_delay_s: float = _setting(30.0, "how long /slow/ pages take")
    huge_body_bytes: int = _setting(1 << 30, "length of a /huge/ body (chunked)")
    dead_fraction: float = _setting(0.01, "share of hosts that drop connections or answer 503")
    cache_pages: int = _setting(2048, "rendered pages the server keeps in its LRU")
    docs_pages: int = _setting(
        0, "pages of the single-host documentation site on docs_host (0: no such host)"
    )
    docs_links: int = _setting(300, "<a href> links per page of the documentation site")
    docs_host: str = _setting("docs.test", "host name of the documentation site")
    validators_fraction: float = _setting(
        1.0, "share of pages (200s) that send ETag/Last-Modified and answer 304 to a "
        "conditional request that matches")
    revision: int = _setting(0, "the site's edits so far: each changes changed_fraction of the "
                             "200 answers (the same seed and revision: the same pages)")
    changed_fraction: float = _setting(0.0, "share of the 200 answers each revision changes")
    script_built_fraction: float = _setting(
        0.0, "share of ordinary pages (home pages never) built by script: a shell whose script "
        "fetches the page's body as JSON (the 'mixed' web; see testweb.script_built)")

    def with_changes(self, **changes: Any) -> TestWebConfig:
        """A copy with some fields replaced."""
        return replace(self, **changes)


def host_name(config: TestWebConfig, index: int) -> str:
    """Name of virtual host number `index` (0-based)."""
    return config.host_pattern.format(n=index)


def all_hosts(config: TestWebConfig) -> list[str]:
    """Names of every virtual host, in index order."""
    return [host_name(config, n) for n in range(config.hosts)]


def normalize_host(host: str) -> str:
    """A Host header value as a bare lowercase name: port and trailing dot removed."""
    name = host.strip().lower()
    if name.startswith("["):  # IPv6 literal
        return name.split("]", 1)[0] + "]"
    return name.split(":", 1)[0].rstrip(".")


def host_index(config: TestWebConfig, host: str) -> int | None:
    """Index of a host name (case-insensitive, port ignored); None if the web has no such host."""
    return _host_table(config.host_pattern, config.hosts).get(normalize_host(host))


@functools.lru_cache(maxsize=8)
def _host_table(pattern: str, hosts: int) -> dict[str, int]:
    return {pattern.format(n=n).lower(): n for n in range(hosts)}
