"""Load settings from `<data>/archive.toml` and the environment, with one-line errors."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from archive_pipelines.archive_error import SettingsError
from archive_pipelines.settings.model import Settings

SETTINGS_FILE = "archive.toml"
DEFAULT_DATA_DIR = "data"

# Environment variables that override archive.toml (after it is read).
ENV_DATA_DIR = "ARCHIVE_DATA_DIR"
ENV_DATABASE_URL = "DATABASE_URL"
ENV_REDIS_URL = "REDIS_URL"
ENV_S3_ENDPOINT_URL = "S3_ENDPOINT_URL"


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None,
                     environ: Mapping[str, str] | None = None) -> Path:
    """The data directory: the argument, else `ARCHIVE_DATA_DIR`, else `./data`."""
    env = os.environ if environ is None else environ
    raw = data_dir if data_dir not in (None, "") else env.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR
    return Path(os.fspath(raw)).expanduser().resolve()


def load_settings(data_dir: str | os.PathLike[str] | None = None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    """Read `<data>/archive.toml` (absent = all defaults) and apply environment overrides."""
    env = os.environ if environ is None else environ
    root = resolve_data_dir(data_dir, env)
    path = root / SETTINGS_FILE
    raw: dict[str, Any] = {}
    if path.exists():
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{path}: not valid TOML: {exc}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"{path}: cannot read: {exc}") from None
    if "data_dir" in raw:
        raise SettingsError(
            f"{path}: `data_dir` cannot be set in the file; use --data-dir or {ENV_DATA_DIR}"
        )
    _apply_environment(raw, env)
    raw["data_dir"] = root
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise SettingsError(f"{path}: {_first_error(exc, raw)}") from None


def _apply_environment(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    if env.get(ENV_DATABASE_URL):
        raw.setdefault("catalog", {})["url"] = env[ENV_DATABASE_URL]
    if env.get(ENV_REDIS_URL):
        raw.setdefault("redis", {})["url"] = env[ENV_REDIS_URL]
    endpoint = env.get(ENV_S3_ENDPOINT_URL)
    if endpoint:
        for store in raw.get("stores", []):
            if isinstance(store, dict) and store.get("kind") == "s3" and not store.get("endpoint_url"):
                store["endpoint_url"] = endpoint


def _first_error(exc: ValidationError, raw: Mapping[str, Any]) -> str:
    """One line: the dotted setting name and what is wrong with it (a `[[crawls]]` table's
    by its name: `crawls.docs.seeds.0`)."""
    err = exc.errors()[0]
    loc = list(err["loc"])
    if len(loc) > 1 and loc[0] == "crawls" and isinstance(loc[1], int):
        loc[1] = _crawl_name(raw, loc[1])
    where = ".".join(str(part) for part in loc) or "settings"
    if err["type"] == "extra_forbidden":
        return f"unknown setting `{where}`"
    message = err["msg"].removeprefix("Value error, ")
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"`{where}`: {message}{more}"


def _crawl_name(raw: Mapping[str, Any], index: int) -> str:
    """The name of the index-th `[[crawls]]` table, quoted, or `#N` (1-based) without one."""
    tables = raw.get("crawls")
    table = tables[index] if isinstance(tables, list) and index < len(tables) else None
    name = table.get("name") if isinstance(table, dict) else None
    return repr(name) if isinstance(name, str) and name else f"#{index + 1}"


def render_default_toml() -> str:
    """The commented archive.toml that `init` writes when none exists."""
    return _DEFAULT_TOML


_DEFAULT_TOML = """\
# archive-pipelines settings. Every key is optional; shown here with its default.
# Environment variables override: DATABASE_URL (catalog.url), REDIS_URL (redis.url),
# S3_ENDPOINT_URL (endpoint_url of s3 stores that set none), ARCHIVE_DATA_DIR (this folder).

[catalog]
# Empty = <data>/catalog.sqlite3. PostgreSQL: "postgresql+psycopg2://user@host/db".
url = ""

[redis]
# "embedded" starts a private redis-server under <data>/redis; or "redis://host:6379/0".
url = "embedded"

[storage]
primary = "primary"          # the store views point into (must be local)
gc_grace_hours = 24.0        # unreferenced blobs older than this are removed by gc
verify_interval_hours = 24   # schedule of verify_storage_job
ingest_batch_size = 2000     # files per catalog transaction
ingest_hardlink = true       # same filesystem: hard-link sources (made read-only), don't copy
# ingest_processes = 2       # worker processes for ingests over one batch (default: 1 per CPU)

[[stores]]
name = "primary"
kind = "local"               # local | s3
path = "cas"                 # relative paths are inside the data dir
codec = "raw"                # raw | zstd (the primary stays raw so views open in any tool)

# A local replica (zstd) and an S3 replica:
# [[stores]]
# name = "replica1"
# kind = "local"
# path = "replicas/replica1"
# codec = "zstd"
#
# [[stores]]
# name = "s3"
# kind = "s3"
# bucket = "my-archive"
# prefix = "blobs"
# codec = "zstd"             # credentials: the standard AWS chain only

[views]
enabled = ["by_domain", "by_date", "by_user", "by_timestamp"]
default_user = "system"

[replication]
retention = 1                # copies of every blob across stores
archival_max_age_minutes = 60.0
batch_size = 1000
copier_width = 8
scrub_interval_hours = 168

[migration]
batch_size = 1000           # snapshots per migration run
max_runs_per_tick = 2
sensor_interval_seconds = 30

[crawl]
concurrency = 64             # concurrent fetches, all processes together
processes = 1                # crawler processes sharing the frontier ("auto": one per CPU)
per_host_concurrency = 1     # requests in flight to one host (a robots Crawl-delay makes it 1)
min_delay_seconds = 1.0
max_crawl_delay_seconds = 30.0
response_time_factor = 2.0
max_depth = 3
domain_page_budget = 10000
max_assets_per_page = 200    # images, stylesheets, fonts, scripts queued from one page at most
allowed_domains = []
allow_networks = []          # non-public networks to crawl, e.g. ["127.0.0.1:8080"] for a local web
max_open_files = 1024        # frontier files each crawler process keeps open
max_idle_connections = 512   # idle keep-alive connections each crawler process keeps
seen_capacity = 20000000     # URLs a new crawl's seen filter holds (~1.9 B of Redis each; fixed)
segment_pages = 5000
segment_seconds = 300.0
segment_idle_seconds = 30.0  # ... or once no page was archived this long (captures flow sooner)
checkpoint_seconds = 2.0     # on-disk frontier checkpoint: a lost Redis repeats at most this long
compact_after_days = 7.0     # compact-crawls: sessions older than this -> one zstd file each
views = []                   # views crawled pages appear in, e.g. ["by_domain"] (one link per page)
queued_alert_minutes = 10.0  # a queued crawl no crawler takes this long turns crawl_taken red

# Crawl definitions: each [[crawls]] table is a named crawl, queued by the crawl_job in Dagit,
# by its schedule (with a cadence) or by `archive-pipelines crawls queue NAME`, and taken by
# `frontier-service serve`. Every crawl of a definition fetches its pages again: new captures.
# Keys left out take the [crawl] value (allowed_domains: the seeds' hosts).
# [[crawls]]
# name = "docs-weekly"         # 1-40 characters of A-Z a-z 0-9 _ -
# seeds = ["https://docs.example.org/"]
# allowed_domains = ["docs.example.org"]
# allowed_networks = []        # as [crawl] allow_networks
# host_map = {}                # e.g. { "docs.test" = "127.0.0.1:8080" }
# max_depth = 3
# page_budget = 10000          # pages per domain
# max_pages = 0                # pages in all (0: no limit)
# per_host_concurrency = 1
# min_delay_seconds = 1.0
# cadence = "0 3 * * 1"        # cron in UTC (Mondays 03:00) or @hourly, @daily, @weekly, @monthly
# conditional = true           # revisit with If-None-Match / If-Modified-Since (304: unchanged)
# browser = "never"            # load pages in headless Chromium too: never, auto (those that need it), always
# browser_by_domain = {}       # per host (and its subdomains) or glob, e.g. { "app.example.org" = "always" }

[export]
operator = ""                # who made the archive: the warcinfo record's operator
directory = "exports"        # where the export_warc job writes (inside the data dir)
gzip_level = 6               # per-record gzip level of exported WARCs (1 fastest .. 9 smallest)
processes = "auto"           # worker processes of a large export ("auto": one per CPU)

[import]
inbox = "inbox"              # the folder warc_inbox_sensor watches (inside the data dir); files stay
inbox_settle_seconds = 60.0  # a file is imported once unchanged this long (not while copied in)
processes = "auto"           # workers reading a WARC of 64 MB or more in parallel ("auto": 1 per CPU)

[replay]
host = "127.0.0.1"           # `archive-pipelines replay` listens here (loopback unless told otherwise)
port = 8080
banner = true                # the bar over replayed pages: capture time, URL, neighbouring captures
exclusions = []              # URL prefixes withdrawn from replay, CDX and TimeMaps
body_cache_bytes = 67108864  # hot bodies kept in memory (64 MiB)
body_cache_item_bytes = 1048576  # bodies up to this size are cached; larger ones are streamed
header_cache_records = 10000 # capture records whose response headers are kept in memory
lookup_cache_seconds = 5.0   # a URL's nearest capture is looked up again after this (0: always)
lookup_cache_entries = 10000
worker_threads = 8           # threads reading the catalog and the store
send_timeout_seconds = 60.0  # a client that accepts no chunk for this long is cut off
keepalive_seconds = 15.0

[qa]
sample_pages = 5             # new browser captures checked against their replay per `captures` run (0: none)
threshold = 0.9              # a capture scoring under this fails the `capture_qa` check
chromium = ""                # the browser for the checks ("": $CHROMIUM, else `chromium` on the PATH)
page_timeout_seconds = 30.0  # one replayed page's load, scrolling and settling
replay_url = ""              # check against this running replay server ("": one started for the check)
"""
