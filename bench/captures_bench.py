"""Crawled pages as captures (issue 16): segment ingest, `captures URL` lookups, compaction.

1. `ingest`: a generated crawl that looks like the crawler's output (default 50,000 pages in
   segments of 1,000 records, one session, ~200 hosts with realistic URLs; ~10% of pages with
   1-5 sub-requests, ~4% with 3xx hops, ~2% failed fetches, ~1% not fetched (robots), 4xx and
   5xx answers, bodies of 2-60 KB of which ~30% of the references are duplicates, request
   and response headers like aiohttp's) is written with frontier_service's `page_record` and
   `PageIndexWriter`, its bodies put into the primary store first (as the crawler does), and
   cached under bench/.work/. Each run ingests the whole crawl with `ingest_crawl` into a
   fresh catalog (SQLite, and PostgreSQL: DATABASE_URL's server, else a private one), only
   `ingest_crawl` timed; runs alternate SQLite, PostgreSQL, PostgreSQL, SQLite, ... and the
   verdict is on the medians: pages/s >= 5,000 on each (it must outrun the crawl). Between
   runs the store goes back to its crawled state (the alias hard links and the stored
   segment files ingest made are removed; no body is touched). Beside each run, for the
   machine's speed: reading the same segments and json.loads of every line (ingest / parse).
   `--profile` adds one untimed run per catalog under cProfile and prints where the time goes.
2. `lookup`: a catalog of `--rows` (1,000,000) page fetches (captures): a generated archive of
   sessions of 50,000 pages (a quarter of each session's pages revisit URLs of earlier ones,
   bodies drawn from a pool of 20,000 small distinct bodies so the store stays small) filled
   once into SQLite by `ingest_crawl` itself (the fill's rate is printed) and cached under
   bench/.work/; the PostgreSQL catalog gets the very same rows, table by table with COPY
   from the SQLite catalog (ids and all; sequences set after; ANALYZE). `find_url` in-process
   on ~500 URLs drawn uniformly from the distinct URLs of the catalog (a fifth of them spelled
   differently: upper-case host, default port, fragment) plus 50 absent ones, each on both
   catalogs alternately, every result checked against the catalog's count; median and p99 of
   the lookup's own time (targets: median <= 10 ms, p99 <= 50 ms on each). Beside it: the
   whole command `archive-pipelines --data-dir D captures URL --json` (a fresh process each
   time), medians of `--cli-runs` runs per catalog, alternated, and the most-captured URL.
3. `compaction`: `compact_sessions` of the bench crawl's session (part 1's crawl), after an
   untimed `ingest_crawl` into a fresh catalog, `--runs` runs per catalog alternated: MB/s =
   the segment bytes read / seconds, and the bytes before (segments) and after (compacted
   file + offset index); lookups of 20 URLs are checked equal before and after, and the
   segment files are put back from their copies in the store after each run. No target
   (printed only). Prints "not measured" when `archive_pipelines.captures.compaction` is
   missing.

   The ingest part also runs an S3-primary case (bench/captures_s3.py; `--no-s3` skips it):
   the same crawl's bodies and segments in a bucket (S3_ENDPOINT_URL, else a throwaway
   moto_server), `--runs` ingests through the bucket into SQLite: pages/s beside the local
   primary's, the ratio, and S3 requests per page and per distinct body (no target).

`--only ingest|lookup|compaction` (repeatable) picks parts; the default runs all three.
The targets are the issue's absolute figures (not ratios): read them beside the load average
and the CPU column, and rerun before believing a FAIL.
"""

from __future__ import annotations

import argparse
import cProfile
import email.utils
import hashlib
import importlib.util
import io
import json
import math
import os
import pstats
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from settle import remove_tree, settle  # noqa: E402

WORK_DIR = BENCH_DIR / ".work"
PARTS = ("ingest", "lookup", "compaction")
TARGET_PAGES_PER_S = 5_000.0
TARGET_MEDIAN_MS, TARGET_P99_MS = 10.0, 50.0
SCRUBBED_ENV = ("ARCHIVE_DATA_DIR", "DATABASE_URL", "REDIS_URL", "S3_ENDPOINT_URL")
CRAWL_RATE = 700.0  # pages/s of the generated crawl's timestamps (about the crawler's)
GEN_VERSION = 2  # bump when the generator changes: the caches are keyed by it


def machine_cpu() -> float:
    """Machine-wide user + nice + system CPU seconds so far (every process, the database
    server's and other people's too)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:4]
    return sum(int(value) for value in fields) / os.sysconf("SC_CLK_TCK")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --------------------------------------------------------------------------- the crawl


WORDS = ("news", "daily", "tech", "garden", "city", "river", "open", "data", "blog", "shop",
         "museum", "library", "science", "travel", "food", "health", "music", "film", "sport",
         "school", "green", "north", "south", "media", "press", "radio", "art", "books",
         "market", "home", "auto", "energy", "water", "forest", "ocean", "space", "coffee",
         "craft", "local", "world", "review", "guide", "best", "how", "to", "the", "new",
         "summer", "winter", "report", "update", "city-council", "election", "recipe")
TLDS = ("com", "com", "com", "com", "org", "org", "net", "de", "fr", "co.uk", "io", "info",
        "nl", "edu", "ch", "es")
SECTIONS = ("news", "blog", "articles", "products", "events", "docs", "category", "tag", "wiki",
            "forum", "de/aktuelles", "en/about", "shop/item", "media/gallery")
SERVERS = ("nginx", "nginx/1.24.0", "Apache/2.4.57 (Debian)", "cloudflare", "Microsoft-IIS/10.0",
           "LiteSpeed", "openresty")
ASSET_KINDS = (("css", "text/css"), ("js", "application/javascript"), ("jpg", "image/jpeg"),
               ("png", "image/png"), ("webp", "image/webp"), ("woff2", "font/woff2"),
               ("svg", "image/svg+xml"))
CDN = (("https://cdn.jsdelivr.net/npm/jquery@3.7.1/dist/jquery.min.js", "application/javascript"),
       ("https://fonts.gstatic.com/s/roboto/v30/KFOmCnqEu92Fr1Mu4mxKKTU1Kg.woff2", "font/woff2"),
       ("https://www.google-analytics.com/analytics.js", "application/javascript"),
       ("https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.4.0/css/all.min.css", "text/css"),
       ("https://unpkg.com/react@18.2.0/umd/react.production.min.js", "application/javascript"),
       ("https://code.jquery.com/jquery-3.6.0.min.js", "application/javascript"))


@dataclass(frozen=True)
class CrawlShape:
    """What to generate. `pages` or `captures` (rows of page_fetch) says when to stop.
    `body_pool`: None for bodies of 2-60 KB with ~30% duplicate references; N for N distinct
    small bodies (0.5-4 KB) that every reference draws from (the lookup archive)."""

    name: str
    pages: int | None = None
    captures: int | None = None
    segment_records: int = 1_000
    hosts: int = 200
    session_pages: int = 1_000_000_000  # a new session (and a day later) after this many
    revisit: float = 0.0  # share of pages of sessions after the first that revisit a URL
    body_pool: int | None = None
    start: float = 1_795_132_800.0  # 2026-11-20T00:00:00Z
    seed: int = 1

    def key(self) -> str:
        size = f"p{self.pages}" if self.pages is not None else f"c{self.captures}"
        pool = "" if self.body_pool is None else f"-pool{self.body_pool}"
        return (f"captures-{self.name}-v{GEN_VERSION}-{size}-s{self.segment_records}-h{self.hosts}"
                f"-r{self.revisit}{pool}-seed{self.seed}")


@dataclass
class Host:
    origin: str  # scheme://host[:port]
    hostport: str
    https: bool
    server: str
    assets: list[tuple[str, str, int]]  # (url, content type, size)
    pages: int = 0  # URLs made so far (n = 0 is the home page)
    recent_bodies: list[Any] = field(default_factory=list)  # PutResults of its pages
    error_bodies: dict[int, Any] = field(default_factory=dict)  # status -> PutResult


def make_hosts(rng: random.Random, count: int) -> tuple[list[Host], list[float]]:
    hosts: list[Host] = []
    names: set[str] = set()
    while len(hosts) < count:
        words = [rng.choice(WORDS).replace("-", "") for _ in range(rng.choice((1, 2, 2, 3)))]
        sub = rng.choice(("www.", "www.", "www.", "", "", "blog.", "news.", "shop.", "en.", "m."))
        name = f"{sub}{''.join(words)}{rng.choice(('', '', '', str(rng.randint(1, 99))))}.{rng.choice(TLDS)}"
        if name in names:
            continue
        names.add(name)
        https = rng.random() < 0.85
        port = f":{rng.choice((8080, 8443, 8000))}" if rng.random() < 0.02 else ""
        origin = f"{'https' if https else 'http'}://{name}{port}"
        assets = []
        for number in range(rng.randint(8, 25)):
            ext, ctype = rng.choice(ASSET_KINDS)
            stem = "-".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
            folder = {"css": "static/css", "js": "static/js", "woff2": "fonts"}.get(
                ext, f"wp-content/uploads/{rng.randint(2015, 2026)}/{rng.randint(1, 12):02d}")
            digest = f".{rng.getrandbits(32):08x}" if ext in ("css", "js") else ""
            assets.append((f"{origin}/{folder}/{stem}{number}{digest}.{ext}", ctype,
                           body_size(rng)))
        hosts.append(Host(origin, name + port, https, rng.choice(SERVERS), assets))
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(count)]  # a few big sites, a long tail
    return hosts, weights


def body_size(rng: random.Random) -> int:
    """2-60 KB, log-uniform (most pages are small, some are big)."""
    return int(math.exp(rng.uniform(math.log(2_048), math.log(61_440))))


def page_path(host: Host, n: int) -> str:
    """The path (and query) of page n of a host: the same every time it is asked."""
    if n == 0:
        return "/"
    rng = random.Random(f"{host.hostport}/{n}")
    section = rng.choice(SECTIONS)
    slug = "-".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7)))
    kind = rng.random()
    if kind < 0.30:
        path = f"/{section}/{rng.randint(2012, 2026)}/{rng.randint(1, 12):02d}/{slug}-{n}.html"
    elif kind < 0.50:
        path = f"/{section}/{slug}-{n}"
    elif kind < 0.60:
        path = f"/{section}/{slug}-{n}/"
    elif kind < 0.70:
        path = f"/index.php?id={n}&lang={rng.choice(('en', 'de', 'fr'))}&view=article"
    elif kind < 0.78:
        path = f"/search?q={rng.choice(WORDS)}+{rng.choice(WORDS)}&page={n}&sort=date"
    elif kind < 0.86:
        path = f"/{section}/?page={n}&per_page={rng.choice((10, 20, 50))}"
    elif kind < 0.93:
        path = f"/p/{n}"
    else:
        path = f"/{section}/{slug.replace('-', '%20')}-{n}/caf%C3%A9"
    if rng.random() < 0.05:
        path += ("&" if "?" in path else "?") + "utm_source=newsletter&utm_medium=email&utm_campaign=" \
            + rng.choice(WORDS)
    return path


def response_headers(rng: random.Random, host: Host, status: int, ctype: str | None, size: int,
                     at: float, asset: bool) -> list[tuple[str, str]]:
    headers = [("Date", email.utils.formatdate(at, usegmt=True)), ("Server", host.server)]
    if ctype is not None:
        text = ctype.startswith("text/") or ctype == "application/javascript"
        headers.append(("Content-Type", f"{ctype}; charset=utf-8" if text else ctype))
    headers += [("Content-Length", str(size)), ("Connection", "keep-alive")]
    if status == 200:
        headers.append(("Cache-Control", "public, max-age=31536000, immutable" if asset
                        else rng.choice(("max-age=600", "no-cache", "private, max-age=0"))))
        headers.append(("ETag", f'"{rng.getrandbits(64):016x}"'))
        headers.append(("Last-Modified", email.utils.formatdate(at - rng.randint(0, 90_000_000),
                                                                usegmt=True)))
        headers.append(("Vary", "Accept-Encoding"))
        if ctype is not None and (ctype.startswith("text/") or ctype.endswith("javascript")):
            headers.append(("Content-Encoding", "gzip"))
    if host.https:
        headers.append(("Strict-Transport-Security", "max-age=31536000; includeSubDomains"))
    if not asset and rng.random() < 0.3:
        headers.append(("Set-Cookie", f"sessionid={rng.getrandbits(128):032x}; Path=/; HttpOnly; "
                                      "SameSite=Lax"))
    if not asset and rng.random() < 0.5:
        headers += [("X-Frame-Options", "SAMEORIGIN"), ("X-Content-Type-Options", "nosniff")]
    return headers


@dataclass
class CrawlStats:
    pages: int = 0
    captures: int = 0
    requests: int = 0
    body_refs: int = 0
    duplicate_refs: int = 0
    distinct_bodies: int = 0
    body_bytes: int = 0  # distinct bodies
    redirect_pages: int = 0
    sub_request_pages: int = 0
    failed: int = 0
    not_fetched: int = 0
    status: Counter[str] = field(default_factory=Counter)


class CrawlGenerator:
    """Records as the crawler writes them, bodies put into `store` as it goes."""

    def __init__(self, shape: CrawlShape, store: Any) -> None:
        from archive_pipelines.blobstore import PutResult
        from frontier_service.fetch.fetch_settings import FetchSettings

        self.shape, self.store = shape, store
        self.rng = random.Random(shape.seed)
        self.hosts, self.weights = make_hosts(self.rng, shape.hosts)
        self.cdn = [(url, ctype, body_size(self.rng)) for url, ctype in CDN]
        self.asset_bodies: dict[str, Any] = {}
        self.pool: list[Any] = []
        self.stats = CrawlStats()
        self.settings = FetchSettings()
        self.PutResult = PutResult
        self.session_index = -1
        self.session_id = ""
        self.revisitable: list[tuple[int, int]] = []  # (host index, n) of earlier sessions
        self.this_session: list[tuple[int, int]] = []

    # bodies ---------------------------------------------------------------------------

    def _new_body(self, size: int) -> Any:
        put = self.store.put_bytes(self.rng.randbytes(size))
        self.stats.distinct_bodies += 1
        self.stats.body_bytes += size
        return put

    def _ref(self, put: Any, *, duplicate: bool) -> Any:
        self.stats.body_refs += 1
        self.stats.duplicate_refs += duplicate
        return put

    def page_body(self, host: Host) -> Any:
        if self.shape.body_pool is not None:
            return self._pooled()
        if host.recent_bodies and self.rng.random() < 0.12:  # the same page under another URL
            return self._ref(self.rng.choice(host.recent_bodies), duplicate=True)
        put = self._ref(self._new_body(body_size(self.rng)), duplicate=False)
        host.recent_bodies.append(put)
        if len(host.recent_bodies) > 30:
            host.recent_bodies.pop(0)
        return put

    def error_body(self, host: Host, status: int) -> Any:
        if self.shape.body_pool is not None:
            return self._pooled()
        if status in host.error_bodies:
            return self._ref(host.error_bodies[status], duplicate=True)
        put = host.error_bodies[status] = self._new_body(self.rng.randint(1_024, 6_000))
        return self._ref(put, duplicate=False)

    def asset_body(self, url: str, size: int) -> Any:
        if self.shape.body_pool is not None:
            return self._pooled()
        if url in self.asset_bodies:
            return self._ref(self.asset_bodies[url], duplicate=True)
        put = self.asset_bodies[url] = self._new_body(size)
        return self._ref(put, duplicate=False)

    def _pooled(self) -> Any:
        index = self.rng.randrange(self.shape.body_pool or 1)
        if index < len(self.pool):
            return self._ref(self.pool[index], duplicate=True)
        put = self._new_body(self.rng.randint(512, 4_096))
        self.pool.append(put)
        return self._ref(put, duplicate=False)

    # fetches --------------------------------------------------------------------------

    def fetch(self, host: Host, url: str, at: float, *, asset: tuple[str, int] | None = None,
              redirect: bool = False) -> tuple[Any, Any]:
        """One FetchResult (redirects followed: `url` is what was asked for, `final_url` where
        the hops ended) and where its body went."""
        from frontier_service.fetch.result import FetchResult, RedirectHop

        rng = self.rng
        hops: list[RedirectHop] = []
        asked = final = url
        if redirect:
            self.stats.redirect_pages += 1
            choice = rng.random()
            if host.https and choice < 0.5:  # the link said http://
                asked = "http://" + url.split("://", 1)[1]
                hops.append(RedirectHop(asked, 301, url))
                if rng.random() < 0.3 and "?" not in url and not url.endswith("/"):
                    final = url + "/"
                    hops.append(RedirectHop(url, 301, final))
            elif choice < 0.8:  # a canonical spelling
                final = (url + "/" if "?" not in url and not url.endswith("/")
                         else url + ("&" if "?" in url else "?") + "lang=en")
                hops.append(RedirectHop(url, 301, final))
            else:  # a login wall
                path = url.split("/", 3)[3] if url.count("/") >= 3 else ""
                final = f"{host.origin}/login?next=%2F{urllib.parse.quote(path, safe='')}"
                hops.append(RedirectHop(url, 302, final))
        request_headers = [("Host", final.split("/")[2]), ("User-Agent", self.settings.user_agent),
                           ("Accept", self.settings.accept), ("Accept-Encoding", "gzip, deflate")]
        elapsed = round(rng.uniform(0.05, 1.5) + 0.1 * len(hops), 4)
        roll = rng.random()
        ctype: str | None
        if asset is not None:
            ctype, size = asset
            if roll < 0.01:
                return self._failed(asked, final, hops, at, elapsed, request_headers), None
            status = 404 if roll < 0.03 else 200
        else:
            if roll < 0.02:
                self.stats.failed += 1
                return self._failed(asked, final, hops, at, elapsed, request_headers), None
            status = (404 if roll < 0.06 else 403 if roll < 0.065 else 410 if roll < 0.068
                      else 500 if roll < 0.073 else rng.choice((502, 503)) if roll < 0.078 else 200)
            ctype, size = "text/html", 0
        self.stats.status[f"{status // 100}xx"] += 1
        if status == 200:
            put = self.asset_body(url, size) if asset is not None else self.page_body(host)
        elif status < 500 or rng.random() < 0.5:
            put, ctype = self.error_body(host, status), "text/html"
        else:
            put, ctype = None, None
        size = 0 if put is None else put.size
        truncated = put is not None and asset is None and rng.random() < 0.003
        result = FetchResult(
            url=asked, final_url=final, status=status, request_headers=request_headers,
            response_headers=response_headers(rng, host, status, ctype, size, at, asset is not None),
            body=None, truncated=truncated, redirects=hops, elapsed_s=elapsed,
            response_time_s=elapsed, content_type=ctype, charset="utf-8" if ctype else None,
            started_at=at)
        return result, put

    def _failed(self, url: str, final: str, hops: list[Any], at: float, elapsed: float,
                request_headers: list[tuple[str, str]]) -> Any:
        from frontier_service.fetch.result import FetchErrorKind, FetchResult

        self.stats.status["failed"] += 1
        hostport = final.split("/")[2]
        kind = self.rng.choice((FetchErrorKind.TIMEOUT, FetchErrorKind.CONNECT,
                                FetchErrorKind.TIMEOUT, FetchErrorKind.PROTOCOL))
        error = {FetchErrorKind.TIMEOUT: "timeout: no response within 30.0 s",
                 FetchErrorKind.CONNECT: f"connect: Cannot connect to host {hostport} ssl:default "
                                         "[Connection refused]",
                 FetchErrorKind.PROTOCOL: "protocol: Response payload is not completed"}[kind]
        return FetchResult(url=url, final_url=final, status=None, request_headers=request_headers,
                           redirects=hops, elapsed_s=elapsed, error=error, error_kind=kind,
                           started_at=at)

    # records --------------------------------------------------------------------------

    def _new_session(self) -> None:
        self.session_index += 1
        self.session_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        self.revisitable.extend(self.this_session)
        self.this_session = []

    def records(self) -> Iterator[tuple[float, dict[str, Any], int]]:
        """(page time, record, captures it makes) until the shape's size is reached."""
        from frontier_service.archiving.page_record import page_record

        shape, rng, stats = self.shape, self.rng, self.stats
        host_indexes = list(range(len(self.hosts)))
        page_in_session = shape.session_pages
        at = shape.start
        while True:
            if shape.pages is not None and stats.pages >= shape.pages:
                return
            if shape.captures is not None and stats.captures >= shape.captures:
                return
            if page_in_session >= shape.session_pages:
                self._new_session()
                page_in_session = 0
                at = shape.start + self.session_index * 86_400.0 + rng.uniform(0, 3_600)
            page_in_session += 1
            at += rng.expovariate(CRAWL_RATE)
            if self.session_index > 0 and self.revisitable and rng.random() < shape.revisit:
                index, n = rng.choice(self.revisitable)
            else:
                index = rng.choices(host_indexes, self.weights)[0]
                n = self.hosts[index].pages
                self.hosts[index].pages += 1
                self.this_session.append((index, n))
            host = self.hosts[index]
            url = host.origin + page_path(host, n)
            depth = 0 if n == 0 else min(6, 1 + int(rng.expovariate(0.8)))
            stats.pages += 1
            if rng.random() < 0.01:  # not fetched: robots.txt said no
                stats.not_fetched += 1
                from frontier_service.fetch.result import FetchResult

                skip = FetchResult(url=url, final_url=url, status=None,
                                   error="disallowed by robots.txt", started_at=at)
                record = page_record(session_id=self.session_id, page_url=url, depth=depth,
                                     page=(skip, None))
                record["requests"] = []
                stats.captures += 1
                yield at, record, 1
                continue
            page = self.fetch(host, url, at, redirect=rng.random() < 0.04)
            assets = []
            if page[0].status == 200 and rng.random() < 0.10:
                stats.sub_request_pages += 1
                for number in range(rng.randint(1, 5)):
                    asset_url, ctype, size = (rng.choice(self.cdn) if rng.random() < 0.15
                                              else rng.choice(host.assets))
                    assets.append(self.fetch(host, asset_url, at + 0.05 * (number + 1),
                                             asset=(ctype, size)))
            record = page_record(session_id=self.session_id, page_url=page[0].url, depth=depth,
                                 page=page, assets=assets)
            made = sum(1 + len(fetch.redirects) for fetch, _put in (page, *assets))
            stats.captures += made
            stats.requests += 1 + len(assets)
            yield at, record, made


@dataclass(frozen=True)
class Segment:
    relative: str
    sha256: str
    bytes: int
    records: int


@dataclass
class Crawl:
    """A generated crawl on disk: an initialized data dir whose store holds the bodies and
    whose sessions/ holds the segments, nothing ingested."""

    root: Path
    data: Path
    shape: CrawlShape
    info: dict[str, Any]

    @property
    def segments(self) -> list[Segment]:
        return [Segment(**s) for s in self.info["segments"]]

    @property
    def pages(self) -> int:
        return int(self.info["stats"]["pages"])

    @property
    def captures(self) -> int:
        return int(self.info["stats"]["captures"])

    @property
    def segment_bytes(self) -> int:
        return sum(s.bytes for s in self.segments)

    def describe(self) -> str:
        st = self.info["stats"]
        refs = max(1, st["body_refs"])
        pool = "" if self.shape.body_pool is None else ": a pool every reference draws from"
        return (f"{st['pages']:,} pages ({st['captures']:,} captures, {st['requests']:,} requests) "
                f"in {len(self.info['segments']):,} segments ({self.segment_bytes / 1e6:,.0f} MB), "
                f"{len(self.info['sessions'])} session(s), {self.shape.hosts} hosts; "
                f"{st['sub_request_pages']:,} pages with sub-requests, {st['redirect_pages']:,} "
                f"with redirects, {st['failed']:,} failed, {st['not_fetched']:,} not fetched; "
                f"statuses {dict(sorted(st['status'].items()))}; {st['body_refs']:,} body "
                f"references to {st['distinct_bodies']:,} distinct bodies "
                f"({st['body_bytes'] / 1e6:,.0f} MB{pool}), {st['duplicate_refs'] / refs:.0%} "
                f"duplicates")


def generate_crawl(shape: CrawlShape) -> Crawl:
    """The cached crawl of `shape` (generated, bodies stored, segments written, when missing)."""
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage.assembly import open_storage
    from frontier_service.archiving.page_index import PageIndexWriter

    root = WORK_DIR / shape.key()
    data, stamp = root / "data", root / "complete.json"
    if stamp.exists():
        crawl = Crawl(root, data, shape, json.loads(stamp.read_text()))
        print(f"reusing the generated crawl in {root} (generated in "
              f"{crawl.info['seconds']:.0f} s)")
        return crawl
    remove_tree(root)
    started = time.perf_counter()
    settings = Settings(data_dir=data)
    initialize(settings)
    parts = open_storage(settings)
    store = parts.primary.store
    generator = CrawlGenerator(shape, store)
    writers: dict[str, Any] = {}
    segments: list[dict[str, Any]] = []

    def flush(writer: Any, now: float) -> None:
        written = writer.flush(now)
        if written is None:
            return
        content = written.path.read_bytes()
        segments.append({"relative": str(written.path.relative_to(data.resolve())),
                         "sha256": hashlib.sha256(content).hexdigest(), "bytes": len(content),
                         "records": written.records})

    with store.deferred_sync():
        last_at = shape.start
        for at, record, _made in generator.records():
            session = record["session_id"]
            writer = writers.get(session)
            if writer is None:
                for other in writers.values():
                    flush(other, last_at)
                writer = writers[session] = PageIndexWriter(data, session)
            writer.add(record)
            last_at = at
            if writer.pending >= shape.segment_records:
                flush(writer, at)
        for writer in writers.values():
            flush(writer, last_at)
        store.sync()
    parts.close()
    parts.catalog.engine.dispose()
    stats = generator.stats
    info = {"seconds": time.perf_counter() - started, "segments": segments,
            "sessions": list(writers), "stats": {**vars(stats), "status": dict(stats.status)}}
    stamp.write_text(json.dumps(info))
    crawl = Crawl(root, data, shape, info)
    print(f"generated a crawl in {root} in {info['seconds']:.0f} s")
    return crawl


# --------------------------------------------------------------------------- catalogs


class Postgres:
    """DATABASE_URL's server, else a private one (fsync off, synchronous_commit off)."""

    def __init__(self) -> None:
        self.server: Any = None
        self.url = ""

    def start(self) -> Postgres:
        from archive_testkit.servers import LocalPostgres

        if os.environ.get("DATABASE_URL"):
            self.url = os.environ["DATABASE_URL"]
        else:
            self.server = LocalPostgres().start()
            self.url = self.server.url
        return self

    def describe(self) -> str:
        if self.server is None:
            return "PostgreSQL: DATABASE_URL's server"
        return ("PostgreSQL: a private server (archive_testkit LocalPostgres: fsync off, "
                "synchronous_commit off, full_page_writes off)")

    def create(self) -> tuple[str, str]:
        from archive_testkit.servers import create_database

        name = f"capbench_{uuid.uuid4().hex[:10]}"
        return name, create_database(self.url, name)

    def drop(self, name: str) -> None:
        from archive_testkit.servers import drop_database

        drop_database(self.url, name)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def remove_sqlite(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


# --------------------------------------------------------------------------- 1. ingest


@dataclass(frozen=True)
class IngestRun:
    catalog: str
    seconds: float
    cpu: float  # this process (the PostgreSQL server's CPU is not in it)
    machine: float  # machine-wide CPU s over the same time
    parse_seconds: float  # read + json.loads of the same segments, just before
    pages: int
    captures: int

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds


def reset_store(crawl: Crawl) -> None:
    """Back to the crawled state: no alias hard links, no stored segment files (the bodies,
    the folders and every inode of a body stay: nothing here frees a body's inode)."""
    from archive_pipelines.blobstore import LocalBlobStore

    cas = crawl.data / "cas"
    for folder, _dirs, files in os.walk(cas / "s"):
        for name in files:
            os.unlink(os.path.join(folder, name))
    store = LocalBlobStore(cas)
    for segment in crawl.segments:
        store.local_path(segment.sha256).unlink(missing_ok=True)


def parse_floor(crawl: Crawl) -> float:
    """Seconds to read every segment and json.loads each line: the least any ingest does."""
    started = time.perf_counter()
    for segment in crawl.segments:
        for line in (crawl.data / segment.relative).read_bytes().splitlines():
            json.loads(line)
    return time.perf_counter() - started


class StatementTimer:
    """Seconds and count per SQL statement (its text with lists folded), by engine events."""

    def __init__(self) -> None:
        self.totals: dict[str, list[float]] = {}

    def _before(self, conn: Any, _cursor: Any, _statement: str, *_args: Any) -> None:
        conn.info.setdefault("bench_started", []).append(time.perf_counter())

    def _after(self, conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        spent = time.perf_counter() - conn.info["bench_started"].pop()
        text = re.sub(r"%\(\w+\)s", "?", " ".join(statement.split()))
        while True:
            folded = re.sub(r"\([^()]*\)", "(…)", text)
            if folded == text:
                break
            text = folded
        text = re.sub(r"(\(…\),? ?)+", "(…) ", text).strip()
        entry = self.totals.setdefault(text[:110], [0, 0.0])
        entry[0] += 1
        entry[1] += spent

    def start(self) -> None:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.listen(Engine, "before_cursor_execute", self._before)
        event.listen(Engine, "after_cursor_execute", self._after)

    def stop(self) -> None:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.remove(Engine, "before_cursor_execute", self._before)
        event.remove(Engine, "after_cursor_execute", self._after)


def ingest_once(crawl: Crawl, label: str, url: str, *,
                profile: cProfile.Profile | None = None,
                statements: StatementTimer | None = None) -> IngestRun:
    """One `ingest_crawl` of the whole crawl into the fresh catalog at `url`; checked."""
    from sqlalchemy import func, select

    from archive_pipelines.captures.segment_ingest import CapturePrimary, ingest_crawl
    from archive_pipelines.catalog.models import PageFetch
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import CatalogSettings, Settings
    from archive_pipelines.storage.assembly import open_storage

    reset_store(crawl)
    settings = Settings(data_dir=crawl.data, catalog=CatalogSettings(url=url))
    initialize(settings)  # the schema, not timed
    parts = open_storage(settings)
    primary = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm)
    floor = parse_floor(crawl)
    os.sync()
    before, machine = resource.getrusage(resource.RUSAGE_SELF), machine_cpu()
    started = time.perf_counter()
    if statements is not None:
        statements.start()
    if profile is not None:
        profile.enable()
    report = ingest_crawl(parts.catalog, primary, crawl.data)
    if profile is not None:
        profile.disable()
    if statements is not None:
        statements.stop()
    seconds = time.perf_counter() - started
    after, machine = resource.getrusage(resource.RUSAGE_SELF), machine_cpu() - machine
    problems = []
    if len(report.ingested) != len(crawl.segments) or report.failed:
        problems.append(f"{len(report.ingested)} of {len(crawl.segments)} segments ingested, "
                        f"{len(report.failed)} failed")
    for name, want in (("pages", crawl.pages), ("captures", crawl.captures), ("rejected", 0),
                       ("missing_bodies", 0), ("cut_bytes", 0)):
        if report.total(name) != want:
            problems.append(f"{name} {report.total(name):,} (expected {want:,})")
    with parts.catalog.reading() as tx:
        rows = tx.session.scalar(select(func.count()).select_from(PageFetch))
    if rows != crawl.captures:
        problems.append(f"page_fetch holds {rows:,} rows (expected {crawl.captures:,})")
    parts.close()
    parts.catalog.engine.dispose()
    if problems:
        some = [p for s in report.segments for p in s.problems][:5]
        raise SystemExit(f"error: ingest into {label} is wrong: " + "; ".join(problems)
                         + "".join(f"\n  {p}" for p in some))
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return IngestRun(label, seconds, cpu, machine, floor, report.total("pages"),
                     report.total("captures"))


def crawler_rate() -> str | None:
    """The crawler's own pages/s from the newest crawl_bench run in bench/RESULTS.md."""
    try:
        text = (BENCH_DIR / "RESULTS.md").read_text()
    except OSError:
        return None
    match = re.search(r"^(?:PASS|FAIL)\s+\(a\) pages/s: ([0-9.]+)", text, re.MULTILINE)
    if match is None:
        return None
    heading = [line for line in text[:match.start()].splitlines() if line.startswith("## ")]
    where = heading[-1][3:] if heading else "bench/RESULTS.md"
    return f"{float(match.group(1)):,.0f} pages/s ({where.split(' — `')[0]})"


def bench_ingest(shape: CrawlShape, runs: int, postgres: Postgres, profile: bool,
                 *, s3: bool = True) -> bool:
    crawl = generate_crawl(shape)
    print(f"\n1. segment ingest (`ingest_crawl`, one transaction per segment) of a generated crawl "
          f"into a fresh catalog per run, {runs} runs per catalog, alternated")
    print(f"crawl: {crawl.describe()}")
    print(postgres.describe())
    settle()
    cases = ("SQLite", "PostgreSQL")
    samples: dict[str, list[IngestRun]] = {case: [] for case in cases}
    print(f"{'run':>4} {'catalog':>11} {'pages/s':>8} {'captures/s':>11} {'wall s':>7} "
          f"{'cpu s':>6} {'machine cpu s':>14} {'ingest/parse':>13}")
    for number in range(runs):
        order = cases if number % 2 == 0 else cases[::-1]
        for case in order:
            run = run_case(crawl, case, postgres)
            samples[case].append(run)
            print(f"{number + 1:>4} {case:>11} {run.pages_per_s:>8,.0f} "
                  f"{run.captures / run.seconds:>11,.0f} {run.seconds:>7.1f} {run.cpu:>6.1f} "
                  f"{run.machine:>14.1f} {run.seconds / run.parse_seconds:>13.1f}", flush=True)
    reset_store(crawl)
    ok = True
    verdicts = []
    for case in cases:
        rates = sorted(run.pages_per_s for run in samples[case])
        rate = statistics.median(rates)
        ratio = statistics.median(run.seconds / run.parse_seconds for run in samples[case])
        print(f"{case:>11} median {rate:,.0f} pages/s, "
              f"{statistics.median(run.captures / run.seconds for run in samples[case]):,.0f} "
              f"captures/s (runs: {', '.join(f'{r:,.0f}' for r in rates)}); ingest takes "
              f"{ratio:.1f}x reading + json.loads of the same segments")
        passed = rate >= TARGET_PAGES_PER_S
        ok = ok and passed
        verdicts.append(f"{'PASS' if passed else 'FAIL'}  ingest pages/s into {case}: {rate:,.0f} "
                        f"(target >= {TARGET_PAGES_PER_S:,.0f})")
    if s3:  # the same crawl on an S3 primary, into SQLite (captures_s3.py)
        from captures_s3 import bench_ingest_s3

        local = statistics.median(run.pages_per_s for run in samples["SQLite"])
        verdicts.extend(f"INFO  {line}" for line in bench_ingest_s3(crawl, runs, local))
    crawler = crawler_rate()
    if crawler:
        print(f"for context, the crawler's own rate, newest crawl_bench in bench/RESULTS.md: {crawler}")
    if profile:
        for case in cases:
            profile_ingest(crawl, case, postgres)
        reset_store(crawl)
    for line in verdicts:
        print(line)
    return ok


def run_case(crawl: Crawl, case: str, postgres: Postgres,
             profile: cProfile.Profile | None = None,
             statements: StatementTimer | None = None) -> IngestRun:
    if case == "SQLite":
        path = crawl.root / "bench-catalog.sqlite3"
        remove_sqlite(path)
        try:
            return ingest_once(crawl, case, sqlite_url(path), profile=profile,
                               statements=statements)
        finally:
            remove_sqlite(path)
    name, url = postgres.create()
    try:
        return ingest_once(crawl, case, url, profile=profile, statements=statements)
    finally:
        postgres.drop(name)


# Functions whose cumulative time says where an ingest goes (file suffix, function name).
PROFILE_KEYS = (
    ("captures/segment_ingest.py", "ingest_segment", "ingest_segment (all of it)"),
    ("captures/segment_files.py", "read_segment", "  read_segment (read + sha256)"),
    ("captures/segment_ingest.py", "_segment_rows", "  _segment_rows (records -> rows)"),
    ("captures/record_parser.py", "parse_record", "    parse_record"),
    ("json/__init__.py", "loads", "      json.loads"),
    ("captures/record_parser.py", "url_key", "      url_key (canonical URL + sha256)"),
    ("captures/record_parser.py", "_row", "      _row (CaptureRow)"),
    ("captures/segment_ingest.py", "_stored_size", "    _stored_size (stat per body)"),
    ("blobstore/local.py", "put_bytes", "  store.put_bytes (the segment file)"),
    ("views/aliases.py", "ensure", "  farm.aliases.ensure (per body)"),
    ("catalog/capture_repository.py", "record_segment", "  record_segment (the transaction's SQL)"),
    ("catalog/ref_counts.py", "get_or_create_blobs", "    get_or_create_blobs"),
    ("catalog/row_sets.py", "row_set", "    row_set (VALUES / temp rows)"),
    ("catalog/ref_counts.py", "apply_ref_deltas", "    apply_ref_deltas"),
    ("catalog/ref_counts.py", "mark_primary_present", "    mark_primary_present"),
    ("sqlalchemy/engine/base.py", "_commit_impl", "  COMMIT"),
    ("captures/segment_files.py", "find_segments", "find_segments"),
)


def profile_ingest(crawl: Crawl, case: str, postgres: Postgres) -> None:
    profile, statements = cProfile.Profile(), StatementTimer()
    run = run_case(crawl, case, postgres, profile=profile, statements=statements)
    stats = pstats.Stats(profile)
    table: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in table.values())
    print(f"\nprofile: one more ingest into {case} under cProfile ({run.seconds:.1f} s with the "
          f"profiler, {total:.1f} s of profiled time; not in the figures above)")
    print(f"  {'cumulative':>10} {'share':>6}  where")
    for suffix, name, label in PROFILE_KEYS:
        ct = sum(v[3] for (file, _line, func), v in table.items()
                 if func == name and file.endswith(suffix))
        if ct:
            print(f"  {ct:>9.2f}s {ct / total:>6.1%}  {label}")
    print("  top functions by own time:")
    ranked = sorted(table.items(), key=lambda item: item[1][2], reverse=True)[:15]
    for (file, line, func), (_cc, nc, tt, _ct, _callers) in ranked:
        short = "/".join(Path(file).parts[-2:]) if file != "~" else ""
        where = f"{short}:{line}({func})" if short else func
        print(f"  {tt:>9.2f}s {tt / total:>6.1%}  {nc:>9,} calls  {where}")
    print("  SQL statements by time (cursor execute to its return, the database's work and the "
          "driver's):")
    ranked_sql = sorted(statements.totals.items(), key=lambda item: item[1][1], reverse=True)
    for text, (count, spent) in ranked_sql[:8]:
        print(f"  {spent:>9.2f}s {spent / total:>6.1%}  {int(count):>9,} calls  {text}")


# --------------------------------------------------------------------------- 2. lookup


def lookup_archive(shape: CrawlShape) -> tuple[Crawl, dict[str, Any]]:
    """The generated archive, ingested once into its data dir's SQLite catalog (cached)."""
    from archive_pipelines.captures.segment_ingest import CapturePrimary, ingest_crawl
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage.assembly import open_storage

    crawl = generate_crawl(shape)
    stamp = crawl.root / "filled.json"
    if stamp.exists():
        filled = json.loads(stamp.read_text())
        print(f"reusing its SQLite catalog, filled by ingest_crawl in {filled['seconds']:.0f} s "
              f"({filled['pages_per_s']:,.0f} pages/s from 0 to {filled['rows']:,} rows)")
        return crawl, filled
    remove_sqlite(crawl.data / "catalog.sqlite3")
    reset_store(crawl)
    from archive_pipelines.datadir import initialize

    settings = Settings(data_dir=crawl.data)
    initialize(settings)
    parts = open_storage(settings)
    primary = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm)
    print(f"filling the SQLite catalog with ingest_crawl ({len(crawl.segments):,} segments)...",
          flush=True)
    started = time.perf_counter()
    report = ingest_crawl(parts.catalog, primary, crawl.data)
    seconds = time.perf_counter() - started
    if report.total("captures") != crawl.captures or report.failed or report.total("rejected"):
        raise SystemExit(f"error: the lookup archive's ingest is wrong: {report.total('captures')} "
                         f"captures of {crawl.captures}, {len(report.failed)} failed segments")
    parts.close()
    parts.catalog.engine.dispose()
    filled = {"seconds": seconds, "pages_per_s": crawl.pages / seconds, "rows": crawl.captures}
    filled["sample"] = draw_sample(crawl.data / "catalog.sqlite3", random.Random(7))
    stamp.write_text(json.dumps(filled))
    print(f"filled its SQLite catalog by ingest_crawl in {seconds:.0f} s "
          f"({filled['pages_per_s']:,.0f} pages/s from 0 to {crawl.captures:,} rows)")
    return crawl, filled


def draw_sample(path: Path, rng: random.Random, size: int = 2_000) -> dict[str, Any]:
    """Distinct URLs drawn uniformly (reservoir), with their capture counts; the heaviest."""
    conn = sqlite3.connect(path)
    try:
        reservoir: list[tuple[str, int]] = []
        heaviest: list[tuple[int, str]] = []
        seen = 0
        for _hash, url, count in conn.execute(
                "SELECT url_hash, min(url), count(*) FROM page_fetch GROUP BY url_hash"):
            seen += 1
            if len(reservoir) < size:
                reservoir.append((url, count))
            else:
                slot = rng.randrange(seen)
                if slot < size:
                    reservoir[slot] = (url, count)
            heaviest.append((count, url))
            if len(heaviest) > 200:
                heaviest = sorted(heaviest, reverse=True)[:3]
        heaviest = sorted(heaviest, reverse=True)[:3]
    finally:
        conn.close()
    return {"distinct_urls": seen, "urls": reservoir, "heaviest": [[u, c] for c, u in heaviest]}


def copy_to_postgres(sqlite_path: Path, pg_url: str) -> tuple[float, int]:
    """Every row of the SQLite catalog into the (migrated, empty) PostgreSQL one with COPY,
    ids included; sequences set after; ANALYZE. Returns (seconds, page_fetch rows)."""
    import psycopg2
    from sqlalchemy.engine import make_url

    from archive_pipelines.catalog.models import Base

    started = time.perf_counter()
    url = make_url(pg_url)
    source = sqlite3.connect(sqlite_path)
    target = psycopg2.connect(host=url.host, port=url.port, user=url.username,
                              password=url.password, dbname=url.database)
    copied = 0
    try:
        with target.cursor() as cur:
            cur.execute("SET TIME ZONE 'UTC'")
            for table in Base.metadata.sorted_tables:
                columns = [row[1] for row in source.execute(f'PRAGMA table_info("{table.name}")')]
                if not columns:
                    continue
                names = ", ".join(f'"{c}"' for c in columns)
                rows = source.execute(f'SELECT {names} FROM "{table.name}"')
                while True:
                    batch = rows.fetchmany(50_000)
                    if not batch:
                        break
                    buffer = io.StringIO()
                    for row in batch:
                        buffer.write("\t".join(_copy_field(value) for value in row))
                        buffer.write("\n")
                    buffer.seek(0)
                    cur.copy_expert(f'COPY "{table.name}" ({names}) FROM STDIN', buffer)
                    if table.name == "page_fetch":
                        copied += len(batch)
                if "id" in columns:
                    cur.execute(f"SELECT pg_get_serial_sequence('\"{table.name}\"', 'id')")
                    sequence = cur.fetchone()[0]
                    if sequence:
                        cur.execute(f"SELECT setval('{sequence}', "
                                    f"(SELECT COALESCE(max(id), 0) + 1 FROM \"{table.name}\"), false)")
        target.commit()
        target.autocommit = True
        with target.cursor() as cur:
            cur.execute("ANALYZE")
    finally:
        target.close()
        source.close()
    return time.perf_counter() - started, copied


def _copy_field(value: object) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bytes):
        return "\\\\x" + value.hex()
    text = str(value)
    if "\\" in text or "\t" in text or "\n" in text or "\r" in text:
        text = (text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
                .replace("\r", "\\r"))
    return text


def respell(url: str, rng: random.Random) -> str:
    """The same URL as a user might type it: upper-case scheme and host, the default port,
    a fragment."""
    scheme, rest = url.split("://", 1)
    hostport, slash, path = rest.partition("/")
    if ":" not in hostport and rng.random() < 0.5:
        hostport += ":443" if scheme == "https" else ":80"
    return f"{scheme.upper()}://{hostport.upper()}{slash}{path}#section-2"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def find_cli() -> Path:
    beside = Path(sys.executable).parent / "archive-pipelines"
    found = str(beside) if beside.exists() else shutil.which("archive-pipelines")
    if found is None:
        sys.exit("error: archive-pipelines not found; run `make venv` and use .venv/bin/python")
    return Path(found)


def warm_file(path: Path) -> None:
    """Read a file once (the catalog of a busy archive is in the page cache)."""
    with open(path, "rb") as handle:
        while handle.read(1 << 22):
            pass


def bench_lookup(shape: CrawlShape, lookups: int, absent: int, cli_runs: int,
                 postgres: Postgres) -> bool:
    from archive_pipelines.captures.lookup import canonical_target, find_url
    from archive_pipelines.catalog import Catalog, make_engine
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import CatalogSettings, Settings

    crawl, filled = lookup_archive(shape)
    sqlite_path = crawl.data / "catalog.sqlite3"
    sample = filled["sample"]
    print(f"\n2. `captures URL` lookups with {crawl.captures:,} page fetches "
          f"({sample['distinct_urls']:,} distinct URLs) in the catalog")
    print(f"archive: {crawl.describe()}")
    name, pg_url = postgres.create()
    try:
        initialize(Settings(data_dir=crawl.data, catalog=CatalogSettings(url=pg_url)))
        seconds, copied = copy_to_postgres(sqlite_path, pg_url)
        print(f"PostgreSQL catalog: the SQLite catalog's rows copied with COPY in {seconds:.0f} s "
              f"({copied:,} page_fetch rows), then ANALYZE")
        warm_file(sqlite_path)
        catalogs = {"SQLite": Catalog(make_engine(sqlite_url(sqlite_path))),
                    "PostgreSQL": Catalog(make_engine(pg_url))}
        rng = random.Random(11)
        drawn = list(sample["urls"])
        rng.shuffle(drawn)
        warmup, present = drawn[:20], drawn[20:20 + lookups]
        queries: list[tuple[str, int, str]] = []  # (url as asked, expected captures, kind)
        for number, (url, count) in enumerate(present):
            asked = respell(url, rng) if number % 5 == 0 else url
            if canonical_target(asked)[1] != canonical_target(url)[1]:
                asked = url
            queries.append((asked, count, "respelled" if asked != url else "present"))
        hosts = sorted({u.split("/")[2] for u, _c in drawn})
        for number in range(absent):
            if number % 2 == 0:
                queries.append((f"https://{rng.choice(hosts)}/bench-absent/{uuid.uuid4().hex}", 0,
                                "absent"))
            else:
                queries.append((f"https://absent-{number}.example.net/a/b?c={number}", 0, "absent"))
        rng.shuffle(queries)
        for url, _count in warmup:
            for catalog in catalogs.values():
                find_url(catalog, url)
        times: dict[str, list[tuple[float, str]]] = {case: [] for case in catalogs}
        rows: list[int] = []
        order = list(catalogs)
        wrong = []
        for number, (url, count, kind) in enumerate(queries):
            for case in (order if number % 2 == 0 else order[::-1]):
                started = time.perf_counter()
                _canonical, found = find_url(catalogs[case], url)
                elapsed = (time.perf_counter() - started) * 1000
                times[case].append((elapsed, kind))
                if len(found) != count:
                    wrong.append(f"{case}: {url} gave {len(found)} captures, the catalog holds {count}")
            rows.append(count)
        if wrong:
            raise SystemExit("error: lookups are wrong:\n  " + "\n  ".join(wrong[:10]))
        kinds = Counter(kind for _u, _c, kind in queries)
        found_rows = [count for count in rows if count]
        print(f"find_url in-process, {len(queries)} lookups per catalog, alternated "
              f"({kinds['present']} URLs drawn uniformly from the distinct URLs, {kinds['respelled']} "
              f"of them respelled, {kinds['absent']} absent; 20 warm-up lookups first); every "
              f"result's count checked; captures per URL found: median "
              f"{statistics.median(found_rows):.0f}, max {max(found_rows):,}")
        print(f"{'catalog':>11} {'median ms':>10} {'p95 ms':>7} {'p99 ms':>7} {'max ms':>7}  "
              f"{'absent median ms':>16}")
        figures = {}
        for case, taken in times.items():
            values = [ms for ms, _kind in taken]
            missing = [ms for ms, kind in taken if kind == "absent"]
            figures[case] = (statistics.median(values), percentile(values, 0.99))
            print(f"{case:>11} {statistics.median(values):>10.2f} {percentile(values, 0.95):>7.2f} "
                  f"{percentile(values, 0.99):>7.2f} {max(values):>7.2f}  "
                  f"{statistics.median(missing):>16.2f}")
        for url, count in sample["heaviest"][:1]:
            spent: dict[str, list[float]] = {case: [] for case in catalogs}
            for _round in range(5):
                for case, catalog in catalogs.items():
                    started = time.perf_counter()
                    find_url(catalog, url)
                    spent[case].append((time.perf_counter() - started) * 1000)
            print(f"the most-captured URL ({count:,} captures, {url}): median of 5 lookups "
                  + ", ".join(f"{case} {statistics.median(v):.1f} ms" for case, v in spent.items())
                  + " (context, not a verdict)")
        for catalog in catalogs.values():
            catalog.engine.dispose()
        cli_rows = bench_cli(crawl, pg_url, [u for u, _c in present[:cli_runs]])
    finally:
        postgres.drop(name)
    ok = True
    verdicts = []
    for case, (median, p99) in figures.items():
        for label, value, target in (("median", median, TARGET_MEDIAN_MS), ("p99", p99, TARGET_P99_MS)):
            passed = value <= target
            ok = ok and passed
            verdicts.append(f"{'PASS' if passed else 'FAIL'}  lookup {label} ms on {case} "
                            f"(find_url, {crawl.captures:,} rows): {value:.2f} (target <= {target:.0f})")
    print(cli_rows)
    for line in verdicts:
        print(line)
    return ok


def bench_cli(crawl: Crawl, pg_url: str, urls: list[str]) -> str:
    """`archive-pipelines --data-dir D captures URL --json`, a fresh process per run."""
    cli = find_cli()
    base = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    envs = {"SQLite": base, "PostgreSQL": {**base, "DATABASE_URL": pg_url}}
    walls: dict[str, list[float]] = {case: [] for case in envs}
    own: dict[str, list[float]] = {case: [] for case in envs}
    order = list(envs)
    for number, url in enumerate(urls):
        for case in (order if number % 2 == 0 else order[::-1]):
            args = [str(cli), "--data-dir", str(crawl.data), "captures", url, "--json"]
            started = time.perf_counter()
            done = subprocess.run(args, env=envs[case], capture_output=True, text=True, check=False)
            walls[case].append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(f"error: {' '.join(args)} exited {done.returncode} on {case}:\n"
                                 f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
            answer = json.loads(done.stdout)
            if not answer["captures"]:
                raise SystemExit(f"error: {url}: no captures from the command on {case}")
            own[case].append(float(answer["lookup_ms"]))
    lines = [f"the whole command `archive-pipelines --data-dir D captures URL --json`, "
             f"{len(urls)} runs per catalog, alternated (context, not a verdict):"]
    for case in envs:
        lines.append(f"{case:>11} median wall {statistics.median(walls[case]) * 1000:,.0f} ms "
                     f"(min {min(walls[case]) * 1000:,.0f}, max {max(walls[case]) * 1000:,.0f}); "
                     f"its own lookup_ms median {statistics.median(own[case]):.1f}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- 3. compaction


@dataclass(frozen=True)
class CompactionRun:
    catalog: str
    seconds: float
    cpu: float
    machine: float
    bytes_in: int
    bytes_out: int
    records: int

    @property
    def mb_per_s(self) -> float:
        return self.bytes_in / 1e6 / self.seconds


def compaction_once(crawl: Crawl, label: str, url: str) -> CompactionRun:
    """Ingest the crawl into the fresh catalog at `url` (not timed), then the timed
    `compact_sessions` of its session; lookups checked before and after; the crawl put back."""
    from archive_pipelines.captures.compaction import compact_sessions
    from archive_pipelines.captures.lookup import find_url
    from archive_pipelines.captures.segment_ingest import CapturePrimary, ingest_crawl
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import CatalogSettings, Settings
    from archive_pipelines.storage.assembly import open_storage

    reset_store(crawl)
    settings = Settings(data_dir=crawl.data, catalog=CatalogSettings(url=url))
    initialize(settings)
    parts = open_storage(settings)
    try:
        primary = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm)
        ingested = ingest_crawl(parts.catalog, primary, crawl.data)
        if ingested.total("captures") != crawl.captures:
            raise SystemExit(f"error: the ingest before compaction into {label} is wrong")
        probes = sample_urls(crawl, 20)
        before_lookup = [[(c.id, c.fetched_ms, c.body_sha256) for c in find_url(parts.catalog, u)[1]]
                         for u in probes]
        (session_id,) = crawl.info["sessions"]
        last = crawl.shape.start + crawl.pages / CRAWL_RATE * 2 + 86_400
        now = datetime.fromtimestamp(last, UTC) + timedelta(days=30)
        os.sync()
        before, machine = resource.getrusage(resource.RUSAGE_SELF), machine_cpu()
        started = time.perf_counter()
        report = compact_sessions(parts.catalog, primary, crawl.data, older_than=timedelta(days=7),
                                  session_id=session_id, now=now)
        seconds = time.perf_counter() - started
        after, machine = resource.getrusage(resource.RUSAGE_SELF), machine_cpu() - machine
        after_lookup = [[(c.id, c.fetched_ms, c.body_sha256) for c in find_url(parts.catalog, u)[1]]
                        for u in probes]
        done = [s for s in report.sessions if s.outcome == "compacted"]
        problems = [p for s in report.sessions for p in s.problems]
        if len(done) != 1 or done[0].records != crawl.pages or done[0].bytes_in != crawl.segment_bytes:
            raise SystemExit(f"error: compaction in {label} is wrong: {report.to_dict()}"
                             + "".join(f"\n  {p}" for p in problems[:5]))
        if after_lookup != before_lookup:
            raise SystemExit(f"error: lookups differ after the compaction in {label}")
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return CompactionRun(label, seconds, cpu, machine, done[0].bytes_in, done[0].bytes_out,
                             done[0].records)
    finally:
        parts.close()
        parts.catalog.engine.dispose()
        restore_segments(crawl)


def sample_urls(crawl: Crawl, count: int) -> list[str]:
    """Page URLs of the crawl's first segment (to check that lookups are the same)."""
    lines = (crawl.data / crawl.segments[0].relative).read_bytes().splitlines()
    step = max(1, len(lines) // count)
    return [json.loads(line)["page_url"] for line in lines[::step][:count]]


def restore_segments(crawl: Crawl) -> None:
    """After a compaction: the segment files back from their copies in the store (checked),
    the compacted files and their stored copies gone, then `reset_store`."""
    from archive_pipelines.blobstore import LocalBlobStore

    store = LocalBlobStore(crawl.data / "cas")
    for segment in crawl.segments:
        path = crawl.data / segment.relative
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        data = store.local_path(segment.sha256).read_bytes()
        if hashlib.sha256(data).hexdigest() != segment.sha256:
            raise SystemExit(f"error: cannot restore {segment.relative} from the store")
        path.write_bytes(data)
    compacted = crawl.data / "sessions" / "compacted"
    if compacted.is_dir():
        for path in compacted.iterdir():
            if path.is_file():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                store.local_path(digest).unlink(missing_ok=True)
                path.unlink()
    reset_store(crawl)


def bench_compaction(shape: CrawlShape, runs: int, postgres: Postgres) -> bool | None:
    print("\n3. compaction (`compact_sessions`) of the bench crawl's session")
    if importlib.util.find_spec("archive_pipelines.captures.compaction") is None:
        print("not measured: captures.compaction is not there yet")
        return None
    crawl = generate_crawl(shape)
    if len(crawl.info["sessions"]) != 1:
        print("not measured: the bench crawl has more than one session")
        return None
    print(f"each run: the crawl ingested into a fresh catalog (not timed), then its session "
          f"compacted (timed); {runs} runs per catalog, alternated; MB/s = segment bytes read / "
          f"seconds; lookups of 20 URLs checked equal before and after; the segment files are "
          f"put back from the store after each run")
    cases = ("SQLite", "PostgreSQL")
    samples: dict[str, list[CompactionRun]] = {case: [] for case in cases}
    print(f"{'run':>4} {'catalog':>11} {'MB/s':>6} {'wall s':>7} {'cpu s':>6} {'machine cpu s':>14} "
          f"{'segments MB':>12} "
          f"{'compacted MB':>13} {'ratio':>6}")
    for number in range(runs):
        for case in (cases if number % 2 == 0 else cases[::-1]):
            if case == "SQLite":
                path = crawl.root / "bench-catalog.sqlite3"
                remove_sqlite(path)
                try:
                    run = compaction_once(crawl, case, sqlite_url(path))
                finally:
                    remove_sqlite(path)
            else:
                name, url = postgres.create()
                try:
                    run = compaction_once(crawl, case, url)
                finally:
                    postgres.drop(name)
            samples[case].append(run)
            print(f"{number + 1:>4} {case:>11} {run.mb_per_s:>6.1f} {run.seconds:>7.1f} "
                  f"{run.cpu:>6.1f} {run.machine:>14.1f} {run.bytes_in / 1e6:>12.1f} "
                  f"{run.bytes_out / 1e6:>13.2f} "
                  f"{run.bytes_in / run.bytes_out:>6.1f}", flush=True)
    for case in cases:
        rates = sorted(run.mb_per_s for run in samples[case])
        first = samples[case][0]
        print(f"{case:>11} median {statistics.median(rates):.1f} MB/s (runs: "
              f"{', '.join(f'{r:.1f}' for r in rates)}); {first.records:,} records, "
              f"{first.bytes_in:,} bytes of segments -> {first.bytes_out:,} bytes (compacted file "
              f"+ index), {first.bytes_in / first.bytes_out:.1f}x smaller (no target: printed only)")
    return None


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=50_000,
                        help="pages of the ingest crawl (50000)")
    parser.add_argument("--segment-records", type=int, default=1_000,
                        help="records per segment (1000)")
    parser.add_argument("--hosts", type=int, default=200, help="hosts of the generated crawls (200)")
    parser.add_argument("--runs", type=int, default=3,
                        help="ingest and compaction runs per catalog; medians (3)")
    parser.add_argument("--rows", type=int, default=1_000_000,
                        help="page fetches (captures) in the lookup catalog (1000000)")
    parser.add_argument("--lookups", type=int, default=500,
                        help="URLs that exist looked up per catalog (500)")
    parser.add_argument("--absent", type=int, default=50, help="URLs that do not exist (50)")
    parser.add_argument("--cli-runs", type=int, default=10,
                        help="runs of the whole `captures URL` command per catalog (10)")
    parser.add_argument("--profile", action="store_true",
                        help="after the ingest runs, one more per catalog under cProfile: "
                             "where the time goes")
    parser.add_argument("--no-s3", action="store_true",
                        help="skip the ingest part's S3-primary case (S3_ENDPOINT_URL, else a "
                             "throwaway moto_server)")
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="run only this part (repeatable); default: all of them")
    args = parser.parse_args(argv)
    WORK_DIR.mkdir(exist_ok=True)
    print(f"{os.cpu_count()} CPUs, load average {load()} before")
    only = set(args.only or PARTS)
    ingest_shape = CrawlShape("ingest", pages=args.pages, segment_records=args.segment_records,
                              hosts=args.hosts)
    lookup_shape = CrawlShape("lookup", captures=args.rows, segment_records=args.segment_records,
                              hosts=args.hosts, session_pages=50_000, revisit=0.25,
                              body_pool=20_000, start=1_792_022_400.0, seed=2)  # 2026-10-15
    postgres = Postgres()
    verdicts: list[bool] = []
    try:
        postgres.start()
        if "ingest" in only:
            verdicts.append(bench_ingest(ingest_shape, args.runs, postgres, args.profile,
                                         s3=not args.no_s3))
        if "lookup" in only:
            verdicts.append(bench_lookup(lookup_shape, args.lookups, args.absent, args.cli_runs,
                                         postgres))
        if "compaction" in only:
            done = bench_compaction(ingest_shape, args.runs, postgres)
            if done is not None:
                verdicts.append(done)
    finally:
        postgres.stop()
    print(f"\nload average {load()} after")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
