"""The settings model. Every key has a default that needs nothing installed."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    field_validator,
    model_validator,
)

from archive_pipelines.crawls.definitions import (
    CrawlDefinition,
    check_browser_domain,
    check_cadence,
    check_host_map_target,
    check_name,
    check_network,
    check_seed,
    seed_hosts,
)
from archive_pipelines.crawls.networks import LOOPBACK_NETWORKS

ALL_VIEWS = ("by_domain", "by_date", "by_user", "by_timestamp")
ViewName = Literal["by_domain", "by_date", "by_user", "by_timestamp"]
_STORE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class _Section(BaseModel):
    # Unknown keys are errors: a typo in archive.toml must not be silently ignored.
    model_config = ConfigDict(extra="forbid", frozen=True)


class CatalogSettings(_Section):
    """Where the catalog lives. Empty url = `<data>/catalog.sqlite3`."""

    url: str = ""
    sqlite_busy_timeout_ms: int = Field(default=30_000, ge=0)


class RedisSettings(_Section):
    """Redis for the crawl frontier. `embedded` = a private redis-server under `<data>/redis`."""

    url: str = "embedded"


class StoreSettings(_Section):
    """One blob store: a local directory or an S3 bucket (+ prefix)."""

    name: str
    kind: Literal["local", "s3"] = "local"
    path: str = ""  # local: directory, relative paths are inside the data dir
    bucket: str = ""  # s3
    prefix: str = ""  # s3: key prefix inside the bucket
    endpoint_url: str = ""  # s3: empty = S3_ENDPOINT_URL or AWS default
    region: str = ""
    codec: Literal["raw", "zstd"] = "zstd"
    zstd_level: int = Field(default=3, ge=1, le=22)
    writable: bool = True

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not _STORE_NAME.match(value):
            raise ValueError(
                f"store name {value!r} must be 1-63 chars of a-z, 0-9, '_' or '-'"
            )
        return value

    @model_validator(mode="after")
    def _location_given(self) -> StoreSettings:
        if self.kind == "local" and not self.path:
            raise ValueError(f"store {self.name!r}: a local store needs `path`")
        if self.kind == "s3" and not self.bucket:
            raise ValueError(f"store {self.name!r}: an s3 store needs `bucket`")
        return self


def _default_stores() -> list[StoreSettings]:
    # The primary stays raw so the symlink views open in any tool.
    return [StoreSettings(name="primary", kind="local", path="cas", codec="raw")]


class StorageSettings(_Section):
    """The primary store and garbage collection."""

    primary: str = "primary"
    gc_grace_hours: float = Field(default=24.0, ge=0)
    verify_interval_hours: int = Field(default=24, ge=1)
    ingest_batch_size: int = Field(default=2000, ge=1)
    # Ingest hard-links a source file into a raw primary on the same filesystem instead of
    # copying it; the shared inode is made read-only. False: always copy.
    ingest_hardlink: bool = True
    # Worker processes for the file work of ingests longer than one batch; None = one per
    # CPU (at most 8); 0 or 1 = threads in the ingesting process only.
    ingest_processes: int | None = Field(default=None, ge=0, le=64)


def _all_views() -> list[ViewName]:
    return ["by_domain", "by_date", "by_user", "by_timestamp"]


class ViewSettings(_Section):
    """Which symlink views are materialized under `archive/`."""

    enabled: list[ViewName] = Field(default_factory=_all_views)
    default_user: str = "system"


class ReplicationSettings(_Section):
    """Replication: how many verified copies every blob must have, and how often to check them."""

    retention: int = Field(default=1, ge=1)
    archival_max_age_minutes: float = Field(default=60.0, gt=0)
    batch_size: int = Field(default=1000, ge=1)
    copier_width: int = Field(default=8, ge=1)
    scrub_interval_hours: int = Field(default=168, ge=1)


class MigrationSettings(_Section):
    """Lazy adoption of legacy collections: batch sizes and the sensor's pace."""

    batch_size: int = Field(default=1000, ge=1)
    max_runs_per_tick: int = Field(default=2, ge=1)
    sensor_interval_seconds: int = Field(default=30, ge=5)


class CrawlSettings(_Section):
    """The crawler (frontier service): concurrency, politeness, limits."""

    concurrency: int = Field(default=64, ge=1)  # in all processes together
    # Requests in flight to one host at most (Scrapy's CONCURRENT_REQUESTS_PER_DOMAIN);
    # a robots.txt Crawl-delay makes it 1 for that host.
    per_host_concurrency: int = Field(default=1, ge=1, le=64)
    # Crawler processes sharing the frontier; "auto" = one per CPU (`run --processes`).
    processes: PositiveInt | Literal["auto"] = 1
    min_delay_seconds: float = Field(default=1.0, ge=0)
    max_crawl_delay_seconds: float = Field(default=30.0, ge=0)
    response_time_factor: float = Field(default=2.0, ge=0)
    max_depth: int = Field(default=3, ge=0)
    domain_page_budget: int = Field(default=10_000, ge=1)
    max_body_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)
    # Assets (images, stylesheets, fonts, scripts ...) queued from one page or stylesheet at
    # most: a page naming 50,000 images cannot flood the frontier.
    max_assets_per_page: int = Field(default=200, ge=0)
    user_agent: str = "archive-pipelines/0.1 (+https://github.com/archive-pipelines)"
    allowed_domains: list[str] = Field(default_factory=list)
    # Non-public networks the crawl may reach, e.g. ["127.0.0.1:8080"] for a local test web
    # (CIDR or one address, then optionally :PORT or :FIRST-LAST; IPv6 with ports in
    # brackets, [::1]:8080). Without ports every port is open. Public addresses are always
    # allowed; link-local and cloud metadata addresses only when listed exactly.
    allow_networks: list[str] = Field(default_factory=list)
    # Legacy: true now means loopback only (allow_networks = ["127.0.0.0/8", "::1"]).
    allow_private_addresses: bool = False
    host_map: dict[str, str] = Field(default_factory=dict)
    # Per crawler process, whatever the number of hosts: frontier files kept open (the least
    # recently used closed) and idle keep-alive connections pooled (the longest idle closed).
    max_open_files: int = Field(default=1024, ge=1)
    max_idle_connections: int = Field(default=512, ge=0)
    # URLs a new crawl's seen filter holds at 0.1% false positives (~1.9 bytes of Redis per
    # URL; fixed when the crawl starts). Past it new URLs are increasingly dropped as seen:
    # the crawler warns from 80% (progress log, /metrics `frontier_seen_filter_urls`).
    seen_capacity: int = Field(default=20_000_000, ge=1_000)
    segment_pages: int = Field(default=5_000, ge=1)
    segment_seconds: float = Field(default=300.0, gt=0)
    # A segment holding pages also closes once no page was archived this long (0: never).
    segment_idle_seconds: float = Field(default=30.0, ge=0)
    metrics_port: int = Field(default=0, ge=0, le=65535)
    # Seconds between two on-disk checkpoints of the frontier's read offsets: after a Redis
    # that lost its data is rebuilt, at most this long of fetches is repeated.
    checkpoint_seconds: float = Field(default=2.0, gt=0, le=300)
    # The views crawled pages appear in (`captures.views`). Off by default: one link per
    # page costs more than ingesting it (README, "Looking up captures").
    views: list[ViewName] = Field(default_factory=list)
    # Sessions whose last fetch is older than this are compacted (`compact-crawls`).
    compact_after_days: float = Field(default=7.0, ge=0)
    # A queued crawl (`crawl_job`, `crawls queue`) that no crawler takes for this long turns
    # the `crawl_taken` check red: no `frontier-service serve` is running.
    queued_alert_minutes: float = Field(default=10.0, gt=0)


class CrawlDefinitionSettings(_Section):
    """One `[[crawls]]` table: a named crawl (`crawl_job`, its schedule, `crawls queue`).

    What a table leaves out comes from `[crawl]` when the settings load (allowed_domains: the
    seeds' hosts; per_host_concurrency and min_delay_seconds: when the crawl runs).
    """

    name: str
    seeds: list[str] = Field(min_length=1)
    allowed_domains: list[str] | None = None
    allowed_networks: list[str] | None = None
    host_map: dict[str, str] | None = None
    max_depth: int | None = Field(default=None, ge=0)
    page_budget: int | None = Field(default=None, ge=1)
    max_pages: int = Field(default=0, ge=0)
    per_host_concurrency: int | None = Field(default=None, ge=1, le=64)
    min_delay_seconds: float | None = Field(default=None, ge=0)
    cadence: str | None = None
    conditional: bool = True
    browser: Literal["never", "auto", "always"] = "never"
    browser_by_domain: dict[str, Literal["never", "auto", "always"]] = Field(default_factory=dict)

    # The checks are the definition's own (crawls.definitions); here they name the field.
    @field_validator("name")
    @classmethod
    def _name_is_a_word(cls, value: str) -> str:
        return check_name(value)

    @field_validator("seeds")
    @classmethod
    def _seeds_are_urls(cls, value: list[str]) -> list[str]:
        return [check_seed(seed) for seed in value]

    @field_validator("allowed_networks")
    @classmethod
    def _networks_parse(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [check_network(entry) for entry in value]

    @field_validator("host_map")
    @classmethod
    def _targets_are_addresses(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for target in (value or {}).values():
            check_host_map_target(target)
        return value

    @field_validator("browser_by_domain")
    @classmethod
    def _browser_domains_are_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            check_browser_domain(name)
        return value

    @field_validator("cadence")
    @classmethod
    def _cadence_runs(cls, value: str | None) -> str | None:
        return None if value is None else check_cadence(value)

    def definition(self, crawl: CrawlSettings) -> CrawlDefinition:
        """The definition, with `[crawl]`'s values where this table has none."""
        networks = (self.allowed_networks if self.allowed_networks is not None
                    else _crawl_networks(crawl))
        host_map = self.host_map if self.host_map is not None else crawl.host_map
        return CrawlDefinition(
            name=self.name, seeds=tuple(self.seeds),
            allowed_domains=tuple(self.allowed_domains if self.allowed_domains is not None
                                  else seed_hosts(self.seeds)),
            allowed_networks=tuple(networks), host_map=tuple(sorted(host_map.items())),
            max_depth=crawl.max_depth if self.max_depth is None else self.max_depth,
            page_budget=(crawl.domain_page_budget if self.page_budget is None
                         else self.page_budget),
            max_pages=self.max_pages, per_host_concurrency=self.per_host_concurrency,
            min_delay_seconds=self.min_delay_seconds, cadence=self.cadence,
            conditional=self.conditional, browser=self.browser,
            browser_by_domain=tuple(sorted(self.browser_by_domain.items())))


def _crawl_networks(crawl: CrawlSettings) -> list[str]:
    """[crawl] allow_networks, plus loopback for the legacy `allow_private_addresses`."""
    networks = list(crawl.allow_networks)
    if crawl.allow_private_addresses:
        networks += [n for n in LOOPBACK_NETWORKS if n not in networks]
    return networks


class ExportSettings(_Section):
    """WARC and WACZ exports (`export-warc`, the `export_warc` job)."""

    @property
    def worker_processes(self) -> int:
        """`processes`, "auto" resolved to the CPUs this process may use."""
        if self.processes == "auto":
            return max(1, len(os.sched_getaffinity(0)))
        return self.processes

    # Who made the archive: the warcinfo record's `operator` (a person or an institution).
    operator: str = ""
    # Where the `export_warc` job writes (relative paths are inside the data dir).
    directory: str = "exports"
    # gzip level of each record (1 fastest .. 9 smallest); 6 as gzip(1). Records that do
    # not compress (images, video, archives) are stored in their gzip member uncompressed.
    gzip_level: int = Field(default=6, ge=1, le=9)
    # Worker processes of a large export (its parts are appended in order); "auto": one per
    # CPU. Exports of fewer than 20,000 captures run in the calling process.
    processes: PositiveInt | Literal["auto"] = "auto"


class ImportSettings(_Section):
    """WARC and WACZ imports (`import-warc`, `import_warc_job` and `warc_inbox_sensor`).

    The section is `[import]` in archive.toml; `import` being a Python keyword, the attribute
    is `Settings.imports`.
    """

    # The folder the `warc_inbox_sensor` watches (relative paths are inside the data dir).
    # Files are imported where they lie and never moved or deleted: they are originals.
    inbox: str = "inbox"
    # A file is imported once it has not changed for this long, so a file still being
    # copied in is not imported half-written.
    inbox_settle_seconds: float = Field(default=60.0, ge=0)
    # Worker processes reading a large WARC (64 MB or more, gzip per record or plain: its
    # records read, checked and their bodies stored in parallel); "auto": one per CPU.
    processes: PositiveInt | Literal["auto"] = "auto"

    @property
    def worker_processes(self) -> int:
        """`processes`, "auto" resolved to the CPUs this process may use."""
        if self.processes == "auto":
            return max(1, len(os.sched_getaffinity(0)))
        return self.processes


class ReplaySettings(_Section):
    """The replay server (`archive-pipelines replay`): where it listens, what it shows, what
    it withdraws, and its memory caches."""

    host: str = "127.0.0.1"  # loopback unless told otherwise
    port: int = Field(default=8080, ge=0, le=65535)
    banner: bool = True  # the small bar over replayed pages (time, URL, neighbouring captures)
    # URL prefixes an operator withdraws: not replayed, not listed by the CDX server,
    # calendars or TimeMaps (e.g. ["http://example.com/private/"]).
    exclusions: list[str] = Field(default_factory=list)
    body_cache_bytes: int = Field(default=64 * 1024 * 1024, ge=0)  # hot bodies kept in memory
    body_cache_item_bytes: int = Field(default=1024 * 1024, ge=0)  # larger bodies: streamed
    header_cache_records: int = Field(default=10_000, ge=1)  # capture records whose headers are kept
    # Lookups (a URL at a time -> its nearest capture and neighbours) kept this long (0: off).
    lookup_cache_seconds: float = Field(default=5.0, ge=0)
    lookup_cache_entries: int = Field(default=10_000, ge=1)
    worker_threads: int = Field(default=8, ge=1, le=256)  # catalog and store reads
    # A response whose client takes longer than this to accept one chunk is abandoned.
    send_timeout_seconds: float = Field(default=60.0, gt=0)
    keepalive_seconds: float = Field(default=15.0, ge=0)


class QaSettings(_Section):
    """Checks of browser captures against their replay (`archive-pipelines captures qa`, and a
    sample of each `captures` materialization's new browser captures)."""

    sample_pages: int = Field(default=5, ge=0, le=1000)  # per materialization; 0: no sampling
    threshold: float = Field(default=0.9, ge=0, le=1)  # a capture scoring under it fails the check
    chromium: str = ""  # the browser; "" = $CHROMIUM, else `chromium` on the PATH
    page_timeout_seconds: float = Field(default=30.0, gt=0, le=600)  # one replay's load and settle
    replay_url: str = ""  # check against this running replay server; "" = one started for the check

    @field_validator("replay_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not re.match(r"^http://[^/\s]+/?$", value):
            raise ValueError(f"replay_url must be http://host:port (or empty), not {value!r}")
        return value


class Settings(_Section):
    """All settings. `data_dir` is absolute once loaded."""

    # `imports` is read from `[import]` (its alias) and, in Python, set by its own name.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    data_dir: Path
    catalog: CatalogSettings = Field(default_factory=CatalogSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    stores: list[StoreSettings] = Field(default_factory=_default_stores)
    views: ViewSettings = Field(default_factory=ViewSettings)
    replication: ReplicationSettings = Field(default_factory=ReplicationSettings)
    migration: MigrationSettings = Field(default_factory=MigrationSettings)
    crawl: CrawlSettings = Field(default_factory=CrawlSettings)
    export: ExportSettings = Field(default_factory=ExportSettings)
    imports: ImportSettings = Field(default_factory=ImportSettings, validation_alias="import")
    replay: ReplaySettings = Field(default_factory=ReplaySettings)
    qa: QaSettings = Field(default_factory=QaSettings)
    # `[[crawls]]` tables: the crawl definitions (`crawl_definitions` resolves them).
    crawls: list[CrawlDefinitionSettings] = Field(default_factory=list)

    @model_validator(mode="after")
    def _crawl_names_unique(self) -> Settings:
        names = [c.name for c in self.crawls]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"crawls: two [[crawls]] tables are named {', '.join(dupes)}")
        # Dagster names are words: "a-b" and "a_b" would share one schedule.
        words: dict[str, str] = {}
        for name in names:
            other = words.setdefault(name.replace("-", "_"), name)
            if other != name:
                raise ValueError(f"crawls: {other!r} and {name!r} differ only in '-' and '_', "
                                 "which their Dagster schedule names cannot tell apart")
        return self

    @property
    def crawl_definitions(self) -> tuple[CrawlDefinition, ...]:
        """The `[[crawls]]` definitions, in file order, `[crawl]` filling what they omit."""
        return tuple(table.definition(self.crawl) for table in self.crawls)

    def crawl_definition(self, name: str) -> CrawlDefinition:
        """The definition named `name`; KeyError if archive.toml defines none by that name."""
        for table in self.crawls:
            if table.name == name:
                return table.definition(self.crawl)
        raise KeyError(name)

    @model_validator(mode="after")
    def _stores_consistent(self) -> Settings:
        names = [s.name for s in self.stores]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"stores: duplicate store name(s) {', '.join(dupes)}")
        if self.storage.primary not in names:
            raise ValueError(
                f"storage.primary = {self.storage.primary!r} names no configured store"
            )
        primary = self.store(self.storage.primary)
        if primary.codec != "raw":
            raise ValueError("storage.primary must have codec raw: views open its files as "
                             "they are, and a record inside a stored WARC is read as a byte "
                             "range (replicas may be zstd)")
        if primary.kind == "s3":
            self._no_views_on_object_store()
        return self

    def _no_views_on_object_store(self) -> None:
        """An S3 primary has no files to link to: no symlink views (browse through the
        replay server). Left unset, `[views] enabled` becomes empty; asked for, an error."""
        if "enabled" in self.views.model_fields_set and self.views.enabled:
            raise ValueError("[views] enabled must be empty with an S3 primary store: the "
                             "symlink views link to files on a local disk (browse through "
                             "`archive-pipelines replay` instead)")
        if self.crawl.views:
            raise ValueError("[crawl] views must be empty with an S3 primary store (no "
                             "symlink views)")
        if self.views.enabled:
            object.__setattr__(self, "views", self.views.model_copy(update={"enabled": []}))

    def store_location(self, config: StoreSettings) -> str:
        """How the catalog names a store's place: its folder, or `s3://bucket[/prefix]`."""
        if config.kind == "local":
            return str(self.local_path(config.path))
        return f"s3://{config.bucket}/{config.prefix}".rstrip("/")

    @property
    def primary_is_local(self) -> bool:
        """Whether the primary is a folder on this machine (symlink views, hard links)."""
        return self.primary_store.kind == "local"

    def store(self, name: str) -> StoreSettings:
        for store in self.stores:
            if store.name == name:
                return store
        raise KeyError(name)

    @property
    def primary_store(self) -> StoreSettings:
        return self.store(self.storage.primary)

    @property
    def catalog_url(self) -> str:
        """The SQLAlchemy URL of the catalog (psycopg2 driver for PostgreSQL)."""
        from archive_pipelines.catalog import normalize_catalog_url

        if self.catalog.url:
            return normalize_catalog_url(self.catalog.url)
        return f"sqlite:///{self.data_dir / 'catalog.sqlite3'}"

    def local_path(self, relative: str) -> Path:
        """A settings path: absolute as given, relative ones inside the data dir."""
        path = Path(relative).expanduser()
        return path if path.is_absolute() else self.data_dir / path
