"""CrawlerSettings: everything one crawler process needs, from the project settings plus overrides."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archive_pipelines.archive_error import DataDirError, SettingsError
from archive_pipelines.datadir import DataDir
from archive_pipelines.settings import CrawlSettings, Settings
from frontier_service.frontier.machine_state import check_machine_name
from frontier_service.frontier.slots import MAX_SLOTS
from frontier_service.pages.browser_modes import MODES as BROWSER_MODES
from frontier_service.pages.browser_modes import BrowserModes
from frontier_service.scope.address_policy import LOOPBACK_NETWORKS, AddressPolicy, parse_entry
from frontier_service.scope.crawl_scope import Scope

log = logging.getLogger(__name__)

EMBEDDED_REDIS = "embedded"
_VALIDATORS_KEY = re.compile(r"[A-Za-z0-9_.-]{1,100}")


@dataclass(frozen=True)
class CrawlerSettings:
    """One crawl process: politeness, scope, batching, segments and where things live.

    Build it with `from_settings` (archive.toml + env, then CLI overrides).
    """

    data_dir: Path
    redis_url: str = EMBEDDED_REDIS
    crawl_name: str = "crawl"  # Redis key prefix: processes with one name share a frontier
    # The folder that holds this crawl's `frontiers/` (frontier files, offset checkpoints,
    # link journals); relative to the data dir, and inside it. None: the data dir itself.
    # Two crawl names with their own roots never see each other's files. Page journals,
    # segments and blobs are the data dir's, whatever the root.
    frontier_root: Path | None = None
    # Conditional requests: the validators (ETag, Last-Modified) of what crawls with this key
    # archived are kept in Redis, and a later crawl with the same key asks with them; a 304
    # becomes an unchanged capture of the earlier body. "" (default): off.
    validators_key: str = ""
    # Politeness and scope (archive.toml [crawl]).
    concurrency: int = 64  # concurrent fetches = worker tasks
    per_host_concurrency: int = 1  # requests in flight to one host (Crawl-delay: 1)
    min_delay_s: float = 1.0
    max_crawl_delay_s: float = 30.0  # robots.txt Crawl-delay is trusted up to this
    response_time_factor: float = 2.0
    max_depth: int = 3
    domain_page_budget: int = 10_000
    max_body_bytes: int = 20 * 1024 * 1024
    user_agent: str = "archive-pipelines/0.1 (+https://github.com/archive-pipelines)"
    allowed_domains: tuple[str, ...] = ()  # names (and their subdomains) or glob patterns
    # Non-public networks the crawl may reach (CIDR or one address, maybe with ports:
    # 127.0.0.1:8080, 127.0.0.0/8:8000-8999, [::1]:8080; public addresses always).
    allowed_networks: tuple[str, ...] = ()
    host_map: tuple[tuple[str, str], ...] = ()  # (name or glob, "ip[:port]")
    fetch_assets: bool = True  # queue <img>/<script>/stylesheet URLs at the page's depth
    max_assets_per_page: int = 200  # assets queued from one page or stylesheet at most
    # Segments and reporting.
    segment_pages: int = 5_000
    segment_seconds: float = 300.0
    # ... or once no page was archived this long, backing off up to segment_seconds when
    # idle closes follow each other (archiving/idle_close.py says why; 0: no idle closes).
    segment_idle_seconds: float = 30.0
    dagster_home: Path | None = None  # report segments to this instance (None: do not report)
    metrics_port: int = 0  # 0: any free port on 127.0.0.1; -1: no health endpoint
    progress_seconds: float = 5.0
    # Engine.
    claim_batch: int = 512  # domains leased per Redis round trip at most
    claim_poll_s: float = 0.01  # wait before asking again when fewer domains were due
    lease_seconds: float = 120.0  # a crashed process's domains come back after this
    checkpoint_seconds: float = 2.0  # on-disk checkpoint of read offsets (Redis-loss recovery)
    # Frontier file compaction: a file's consumed prefix (its checkpointed offset) is freed
    # once it grew this many bytes since the last punch (0: off), checked this often.
    compact_bytes: int = 64 << 10
    compact_seconds: float = 60.0
    audit_seconds: float = 300.0  # check Redis against the files this often (0: at the end only)
    link_flush_urls: int = 5_000  # discovered URLs buffered before add_urls ...
    link_flush_s: float = 0.2  # ... or this long
    # Discovered URLs waiting for add_urls at most (~500 B each); workers wait beyond it.
    link_max_pending: int = 100_000
    visit_flush_records: int = 1_000  # visited records buffered before a write ...
    visit_flush_s: float = 0.5  # ... or this long
    drain_timeout_s: float = 15.0  # SIGTERM: how long in-flight fetches may finish
    # URLs the seen filter holds at 0.1% false positives (~1.9 bytes of Redis each), fixed
    # when a crawl's filter is created; the crawl warns from 80% (frontier/seen_capacity.py).
    seen_capacity: int = 20_000_000
    visited_expected: int = 2_000_000
    robots_unreachable_retry_s: float = 60.0
    host_failure_backoff_s: tuple[float, ...] = (5.0, 30.0)  # then the host is retired
    fetch_overrides: dict[str, Any] = field(default_factory=dict)  # FetchSettings fields
    # Descriptors and memory per process, whatever the number of hosts: frontier files
    # kept open (least recently used closed; a miss costs one open(), ~20 us) and idle
    # keep-alive connections pooled (the longest idle closed; a miss costs a new connect).
    max_open_files: int = 1024
    max_idle_connections: int = 512
    # Stop conditions (0: none): for demos, benchmarks and tests.
    max_pages: int = 0
    max_seconds: float = 0.0
    exit_when_idle_s: float = 0.0  # stop once nothing was due or in flight for this long
    event_loop: str = "auto"  # auto (uvloop if installed) | asyncio | uvloop
    # Replay crashed runs' journals at startup; a supervisor of several processes does it
    # once itself, so that its children do not race each other over the same files.
    recover_on_start: bool = True
    # Domain affinity of several processes: this one prefers the domains of `shard`.
    shard: int = 0
    shards: int = 1
    # Several machines, one crawl (frontier_service/machines/): this machine's name ("" = the
    # crawl runs on one machine), the crawl's number of slots (fixed by its first machine)
    # and how long a machine may stay silent before others take its slots.
    machine: str = ""
    slots: int = 0  # 0: the crawl's (DEFAULT_SLOTS for a new crawl)
    machine_lease_s: float = 30.0
    # Key prefix of the host gates in Redis: every crawl with the same one (on one Redis)
    # shares its politeness towards a host ('' = none: a crawl minds only its own requests).
    host_gates: str = "hostgate:"
    # Browser capture: never | auto (render the HTML pages whose HTTP fetch shows they need
    # it) | always (render every HTML page); `browser_by_domain` ((name or glob, mode) pairs,
    # a name matching its subdomains too) overrides it per domain.
    browser: str = "never"
    browser_by_domain: tuple[tuple[str, str], ...] = ()
    browser_contexts: int = 2  # page loads at once (Chromium contexts of one browser)
    browser_samples: int = 2  # auto: HTML pages per host rendered to check the signals (0: none)
    browser_page_timeout_s: float = 30.0  # navigation, scrolling and settling of one page

    @property
    def embedded_redis(self) -> bool:
        return self.redis_url == EMBEDDED_REDIS

    @property
    def uses_browser(self) -> bool:
        """Whether any domain of the crawl may be loaded in the browser."""
        return BrowserModes(self.browser, self.browser_by_domain).any_browser

    @property
    def frontier_home(self) -> Path:
        """The folder whose `frontiers/` this crawl uses: `frontier_root`, or the data dir."""
        if self.frontier_root is None:
            return self.data_dir
        return self.data_dir / self.frontier_root

    def with_changes(self, **changes: Any) -> CrawlerSettings:
        """A copy with some fields replaced (None values are ignored), validated."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise SettingsError(f"unknown crawler setting(s): {', '.join(unknown)}")
        updated = dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})
        updated.validate()
        return updated

    def validate(self) -> None:
        """SettingsError naming the first bad value."""
        positive: dict[str, float] = {"concurrency": self.concurrency, "claim_batch": self.claim_batch,
                    "per_host_concurrency": self.per_host_concurrency,
                    "segment_pages": self.segment_pages, "link_flush_urls": self.link_flush_urls,
                    "link_max_pending": self.link_max_pending,
                    "domain_page_budget": self.domain_page_budget,
                    "seen_capacity": self.seen_capacity,
                    "max_open_files": self.max_open_files}
        for name, value in positive.items():
            if value < 1:
                raise SettingsError(f"`{name}` must be at least 1, got {value}")
        non_negative: dict[str, float] = {"min_delay_s": self.min_delay_s, "max_depth": self.max_depth,
                        "response_time_factor": self.response_time_factor,
                        "max_pages": self.max_pages, "max_seconds": self.max_seconds,
                        "exit_when_idle_s": self.exit_when_idle_s,
                        "segment_idle_seconds": self.segment_idle_seconds,
                        "max_assets_per_page": self.max_assets_per_page,
                        "compact_bytes": self.compact_bytes,
                        "max_idle_connections": self.max_idle_connections}
        for name, value in non_negative.items():
            if value < 0:
                raise SettingsError(f"`{name}` must not be negative, got {value}")
        if self.compact_seconds <= 0:
            raise SettingsError(f"`compact_seconds` must be positive, got {self.compact_seconds}")
        if self.segment_seconds <= 0 or self.lease_seconds <= 0 or self.checkpoint_seconds <= 0:
            raise SettingsError(
                "`segment_seconds`, `lease_seconds` and `checkpoint_seconds` must be positive")
        if not 0 <= self.shard < self.shards:
            raise SettingsError(f"`shard` must be in 0..{self.shards - 1}, got {self.shard}")
        if self.event_loop not in ("auto", "asyncio", "uvloop"):
            raise SettingsError(f"`event_loop` must be auto, asyncio or uvloop, got {self.event_loop!r}")
        if not self.crawl_name or any(c.isspace() for c in self.crawl_name):
            raise SettingsError(f"`crawl_name` must be a non-empty word, got {self.crawl_name!r}")
        if self.frontier_root is not None:
            try:
                DataDir(self.data_dir).inside(self.frontier_home)
            except DataDirError:
                raise SettingsError(f"`frontier_root` must lie inside the data dir "
                                    f"{self.data_dir}, got {self.frontier_root}") from None
        if self.validators_key and not _VALIDATORS_KEY.fullmatch(self.validators_key):
            raise SettingsError("--revisit-of / `validators_key` must be 1-100 letters, digits, "
                                f"`_`, `-` or `.`, got {self.validators_key[:120]!r}")
        if self.machine:
            try:
                check_machine_name(self.machine)
            except ValueError as exc:
                raise SettingsError(f"--machine: {exc}") from None
            if not 0 <= self.slots <= MAX_SLOTS:
                raise SettingsError(f"--slots must be in 1..{MAX_SLOTS}, got {self.slots}")
            if self.machine_lease_s <= 0:
                raise SettingsError(f"--machine-lease must be positive, got {self.machine_lease_s}")
        if any(c.isspace() for c in self.host_gates):
            raise SettingsError(f"`host_gates` must hold no whitespace, got {self.host_gates!r}")
        for entry in self.allowed_networks:
            try:
                parse_entry(entry)
            except ValueError as exc:
                raise SettingsError(f"--allow-network / [crawl] allow_networks: {exc}") from None
        self._validate_browser()

    def _validate_browser(self) -> None:
        modes = ", ".join(BROWSER_MODES)
        if self.browser not in BROWSER_MODES:
            raise SettingsError(f"--browser / `browser` must be one of {modes}, got {self.browser!r}")
        for name, mode in self.browser_by_domain:
            if not name.strip() or any(c.isspace() for c in name.strip()):
                raise SettingsError(f"--browser-domain / `browser_by_domain`: {name!r} is not "
                                    "a host name or glob")
            if mode not in BROWSER_MODES:
                raise SettingsError(f"--browser-domain / `browser_by_domain` {name}: the mode "
                                    f"must be one of {modes}, got {mode!r}")
        if self.browser_contexts < 1:
            raise SettingsError(f"--browser-contexts / `browser_contexts` must be at least 1, "
                                f"got {self.browser_contexts}")
        if self.browser_samples < 0:
            raise SettingsError(f"--browser-samples / `browser_samples` must not be negative, "
                                f"got {self.browser_samples}")
        if self.browser_page_timeout_s <= 0:
            raise SettingsError(f"--browser-page-timeout / `browser_page_timeout_s` must be "
                                f"positive, got {self.browser_page_timeout_s}")


def from_settings(settings: Settings, **overrides: Any) -> CrawlerSettings:
    """CrawlerSettings from the project's Settings ([crawl], [redis]), then `overrides`.

    DAGSTER_HOME from the environment is used when no dagster_home override is given.
    """
    crawl = settings.crawl
    env_home = os.environ.get("DAGSTER_HOME")
    base = CrawlerSettings(
        data_dir=settings.data_dir,
        redis_url=settings.redis.url,
        concurrency=crawl.concurrency,
        per_host_concurrency=crawl.per_host_concurrency,
        checkpoint_seconds=crawl.checkpoint_seconds,
        min_delay_s=crawl.min_delay_seconds,
        max_crawl_delay_s=crawl.max_crawl_delay_seconds,
        response_time_factor=crawl.response_time_factor,
        max_depth=crawl.max_depth,
        domain_page_budget=crawl.domain_page_budget,
        max_body_bytes=crawl.max_body_bytes,
        max_assets_per_page=crawl.max_assets_per_page,
        max_open_files=crawl.max_open_files,
        max_idle_connections=crawl.max_idle_connections,
        seen_capacity=crawl.seen_capacity,
        user_agent=crawl.user_agent,
        allowed_domains=tuple(crawl.allowed_domains),
        allowed_networks=allowed_networks(crawl),
        host_map=tuple(sorted(crawl.host_map.items())),
        segment_pages=crawl.segment_pages,
        segment_seconds=crawl.segment_seconds,
        segment_idle_seconds=crawl.segment_idle_seconds,
        metrics_port=crawl.metrics_port,
        dagster_home=Path(env_home) if env_home else None,
    )
    return base.with_changes(**overrides)


def allowed_networks(crawl: CrawlSettings) -> tuple[str, ...]:
    """[crawl] allow_networks, plus loopback for the legacy `allow_private_addresses = true`."""
    networks = tuple(crawl.allow_networks)
    if not crawl.allow_private_addresses:
        return networks
    warn_legacy_private("allow_private_addresses = true in archive.toml",
                        'allow_networks = ["127.0.0.0/8"] in [crawl]')
    return with_loopback(networks)


def with_loopback(networks: tuple[str, ...]) -> tuple[str, ...]:
    return networks + tuple(n for n in LOOPBACK_NETWORKS if n not in networks)


_warned: set[str] = set()


def warn_legacy_private(used: str, instead: str) -> None:
    """Say once per process what the old switch now means and what replaces it."""
    if used in _warned:
        return
    _warned.add(used)
    log.warning("%s now allows loopback only (127.0.0.0/8 and ::1), no longer private, "
                "link-local or cloud metadata addresses; use %s instead", used, instead)


def scope_for(settings: CrawlerSettings) -> Scope:
    """The scope a crawl's settings describe (allowed domains, depth, allowed networks)."""
    return Scope(settings.allowed_domains, max_depth=settings.max_depth,
                 addresses=AddressPolicy(settings.allowed_networks))
