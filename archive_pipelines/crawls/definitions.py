"""CrawlDefinition: what one crawl of a site (or a few) fetches, and how often.

Defined in archive.toml as `[[crawls]]` tables (`settings.model.CrawlDefinitionSettings`
reads them, filling what a table leaves out from `[crawl]`); a queued crawl stores the
definition as it was then (`as_dict`), and the crawler reads it back (`from_dict`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from archive_pipelines.crawls.cadence import cadence_problem
from archive_pipelines.crawls.networks import parse_entry, parse_target

_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}", re.ASCII)
# The crawler's browser modes (frontier_service.pages.browser_modes; a copy: the crawler is
# never imported here).
BROWSER_MODES = ("never", "auto", "always")


@dataclass(frozen=True)
class CrawlDefinition:
    """A named crawl: seeds, scope, politeness and cadence.

    Args:
        allowed_domains: host names (and their subdomains) or globs the crawl may follow
            links to; settings fill in the seeds' hosts when a definition names none.
        allowed_networks: non-public networks it may reach ([crawl] allow_networks syntax).
        host_map: (name or glob, "IP[:PORT]") pairs resolved without DNS (test webs).
        page_budget: pages per domain at most; max_pages: pages in all (0: no limit).
        per_host_concurrency, min_delay_seconds: None = the [crawl] value when it runs.
        cadence: cron ("0 3 * * 1") or @hourly/@daily/@weekly/@monthly; None: by hand only.
        conditional: revisit with If-None-Match / If-Modified-Since (the previous crawl's
            validators), so an unchanged page costs a 304.
        browser: load pages in headless Chromium too: never, auto (the pages that need it)
            or always; browser_by_domain: (name or glob, mode) pairs overriding it per domain.
    """

    name: str
    seeds: tuple[str, ...]
    allowed_domains: tuple[str, ...] = ()
    allowed_networks: tuple[str, ...] = ()
    host_map: tuple[tuple[str, str], ...] = ()
    max_depth: int = 3
    page_budget: int = 10_000
    max_pages: int = 0
    per_host_concurrency: int | None = None
    min_delay_seconds: float | None = None
    cadence: str | None = None
    conditional: bool = True
    browser: str = "never"
    browser_by_domain: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        problem = definition_problem(self)
        if problem is not None:
            raise ValueError(f"crawl definition {self.name!r}: {problem}")

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe: lists for tuples, host_map as an object."""
        data = asdict(self)
        for key in ("seeds", "allowed_domains", "allowed_networks"):
            data[key] = list(data[key])
        data["host_map"] = dict(self.host_map)
        data["browser_by_domain"] = dict(self.browser_by_domain)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CrawlDefinition:
        """The definition `as_dict` wrote; ValueError naming an unknown or missing key."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"crawl definition: unknown key(s) {', '.join(unknown)}")
        missing = [key for key in ("name", "seeds") if key not in data]
        if missing:
            raise ValueError(f"crawl definition: missing {', '.join(missing)}")
        values = dict(data)
        for key in ("seeds", "allowed_domains", "allowed_networks"):
            if key in values:
                values[key] = tuple(values[key])
        for key in ("host_map", "browser_by_domain"):
            if key in values:
                values[key] = tuple(sorted(dict(values[key]).items()))
        return cls(**values)


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ValueError(f"{name!r} must be 1-40 characters of A-Z, a-z, 0-9, '_' or '-'")
    return name


def check_seed(seed: str) -> str:
    """An absolute http(s) URL with a host."""
    parts = urlsplit(seed.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{seed!r} is not an http:// or https:// URL with a host")
    if any(c.isspace() for c in seed.strip()):
        raise ValueError(f"{seed!r} holds white space")
    return seed.strip()


def check_network(entry: str) -> str:
    parse_entry(entry)
    return entry


def check_host_map_target(target: str) -> str:
    parse_target(target)
    return target


def check_cadence(cadence: str) -> str:
    problem = cadence_problem(cadence)
    if problem is not None:
        raise ValueError(problem)
    return cadence.strip()


def check_browser_mode(mode: str) -> str:
    if mode not in BROWSER_MODES:
        raise ValueError(f"{mode!r} is not one of {', '.join(BROWSER_MODES)}")
    return mode


def check_browser_domain(name: str) -> str:
    if not name.strip() or any(c.isspace() for c in name.strip()):
        raise ValueError(f"{name!r} is not a host name or glob")
    return name


def seed_hosts(seeds: Iterable[str]) -> tuple[str, ...]:
    """The seeds' host names, lower case, once each, in order."""
    hosts = (urlsplit(seed).hostname or "" for seed in seeds)
    return tuple(dict.fromkeys(host for host in hosts if host))


def definition_problem(definition: CrawlDefinition) -> str | None:
    """What is wrong with a definition ("field: why"), or None."""
    checks: list[tuple[str, Iterable[Any], Callable[[Any], object]]] = [
        ("name", [definition.name], check_name),
        ("seeds", definition.seeds, check_seed),
        ("allowed_networks", definition.allowed_networks, check_network),
        ("host_map", [target for _, target in definition.host_map], check_host_map_target),
        ("cadence", [] if definition.cadence is None else [definition.cadence], check_cadence),
        ("browser", [definition.browser], check_browser_mode),
        ("browser_by_domain", [name for name, _ in definition.browser_by_domain],
         check_browser_domain),
        ("browser_by_domain", [mode for _, mode in definition.browser_by_domain],
         check_browser_mode),
    ]
    for field, values, check in checks:
        for value in values:
            try:
                check(value)
            except ValueError as exc:
                return f"{field}: {exc}"
    if not definition.seeds:
        return "seeds: at least one seed URL is needed"
    numbers: list[tuple[str, float | None, float]] = [
        ("max_depth", definition.max_depth, 0), ("page_budget", definition.page_budget, 1),
        ("max_pages", definition.max_pages, 0),
        ("per_host_concurrency", definition.per_host_concurrency, 1),
        ("min_delay_seconds", definition.min_delay_seconds, 0)]
    for field, number, lowest in numbers:
        if number is not None and number < lowest:
            return f"{field}: must be at least {lowest}, got {number}"
    return None
