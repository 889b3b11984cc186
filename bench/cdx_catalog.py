"""A catalog of many captures generated directly in bulk, for the CDX benchmark
(`replay_bench.py --only cdx`): rows written straight into `page_fetch` (no crawl, no ingest),
shaped like a web archive's.

- `rows` captures of `rows // 5` distinct URLs on `rows // 2,000` hosts (at least 20): pages
  (`/`, `/section-N/`, `/section-N/page-M.html`, `?id=` queries) and assets (`.css`, `.js`,
  `.png`) of `www.`, bare and sub-domain hosts, http and https;
- how often a URL is captured follows a Zipf-like law (weight 1 / rank^0.8, ranks shuffled
  per host) and one URL (`HEAVY_URL`) holds 1% of all captures (100,000 at 10 M): the
  most-captured URL of a long-running crawl;
- captures come in time order over 2020-2026 (ids grow with time, as ingests append), so a
  URL's captures are scattered through the table, not stored together;
- 92% are 200s with a stored body (one of 5,000 blob rows), 3% 404s with a body, 3% 301s
  (redirect hops, no body), 2% failed fetches (no status: not served by the CDX API).

The SQLite catalog is made once and cached (`<work>/cdx-<rows>.sqlite3` and a stamp with the
sample the benchmark draws from); its page_fetch indexes are built after the rows are in. The
PostgreSQL copy is made per run with COPY from it (indexes after, then ANALYZE).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import random
import sqlite3
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive_pipelines.surt import surt, urlkey

HEAVY_URL = "https://www.heavy-news.test/"
START_MS = 1_577_836_800_000  # 2020-01-01
END_MS = 1_798_761_600_000  # 2027-01-01
BLOBS = 5_000
SESSION_ID = "00000000-0000-4000-8000-00000000cdx0"
_BATCH = 50_000
_COLUMNS = ("id", "session_id", "segment_id", "kind", "url", "url_hash", "site", "canonical_url",
            "fetched_ms", "status_code", "final_url", "content_type", "body_sha256", "body_size",
            "body_blob_id", "truncated", "index_path", "record_offset", "request_index", "urlkey")


@dataclass(frozen=True)
class CdxCatalog:
    path: Path
    rows: int
    info: dict[str, Any]  # distinct URLs, hosts, the sample, generation seconds


def _host_name(number: int) -> str:
    kind = number % 4
    base = f"site-{number:05d}.test"
    return (f"www.{base}", base, f"blog.{base}", f"shop.{base}")[kind]


def _url(host: int, rank: int) -> str:
    scheme = "https" if host % 3 else "http"
    name = _host_name(host)
    if rank == 0:
        path = "/"
    elif rank % 7 == 1:
        path = f"/static/app-{rank}.css"
    elif rank % 7 == 2:
        path = f"/static/img/photo-{rank}.png"
    elif rank % 7 == 3:
        path = f"/section-{rank % 13}/"
    elif rank % 7 == 4:
        path = f"/section-{rank % 13}/item?id={rank}&sort=new"
    elif rank % 7 == 5:
        path = f"/js/bundle-{rank}.js"
    else:
        path = f"/section-{rank % 13}/page-{rank}.html"
    return f"{scheme}://{name}{path}"


def _mime(url: str) -> str:
    for end, mime in ((".css", "text/css"), (".png", "image/png"), (".js", "application/javascript")):
        if url.endswith(end):
            return mime
    return "text/html; charset=utf-8"


def _schema() -> str:
    """The catalog's revision and page_fetch's indexes: a cached catalog made before a change
    of either is made again."""
    from archive_pipelines.catalog import head_revision
    from archive_pipelines.catalog.models import Base

    indexes = sorted(f"{index.name}{[c.name for c in index.columns]}"
                     for index in Base.metadata.tables["page_fetch"].indexes)
    return f"{head_revision()} {' '.join(indexes)}"


def ensure_cdx_catalog(work: Path, rows: int, *, seed: int = 30) -> CdxCatalog:
    """The cached catalog of `rows` captures under `work`, made if missing."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"cdx-{rows}.sqlite3"
    stamp = work / f"cdx-{rows}.json"
    schema = _schema()
    if path.exists() and stamp.exists():
        info = json.loads(stamp.read_text())
        if (info.get("seed"), info.get("rows"), info.get("schema")) == (seed, rows, schema):
            return CdxCatalog(path, rows, info)
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    started = time.perf_counter()
    info = _generate(path, rows, random.Random(seed))
    info.update(seed=seed, rows=rows, schema=schema, seconds=time.perf_counter() - started)
    stamp.write_text(json.dumps(info))
    return CdxCatalog(path, rows, info)


def _generate(path: Path, rows: int, rng: random.Random) -> dict[str, Any]:
    from archive_pipelines.catalog import make_engine, upgrade_catalog
    from archive_pipelines.catalog.models import Base

    engine = make_engine(f"sqlite:///{path}")
    upgrade_catalog(engine)
    engine.dispose()
    hosts = max(20, rows // 2_000)
    distinct = max(hosts, rows // 5)
    per_host = distinct // hosts
    urls = [HEAVY_URL] + [_url(h, r) for h in range(hosts) for r in range(per_host)]
    keys = [urlkey(url) for url in urls]
    # Arrays of doubles, not lists of floats: 16 MB each at 10 M captures, not 64.
    weights = array("d", (1.0 / (1 + r) ** 0.8 for _h in range(hosts) for r in range(per_host)))
    rng.shuffle(weights)  # popularity is not the generation order
    total = sum(weights)
    heavy_share = 0.01
    cumulative = array("d", itertools.accumulate(
        itertools.chain([total * heavy_share / (1 - heavy_share)], weights)))
    del weights
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        conn.execute("INSERT INTO crawl_session (id, started_at, ended_at, index_dir, pages, kind) "
                     "VALUES (?, '2020-01-01 00:00:00.000000', '2027-01-01 00:00:00.000000', "
                     "'sessions/bench', 0, 'crawl')", (SESSION_ID,))
        conn.execute("INSERT INTO crawl_segment (id, path, sha256, session_id, records, rejected, "
                     "cut_bytes, ingested_at) VALUES (1, 'sessions/bench/0.jsonl', ?, ?, ?, 0, 0, "
                     "'2027-01-01 00:00:00.000000')", ("0" * 64, SESSION_ID, rows))
        blobs = [(n + 1, hashlib.sha256(f"body {n}".encode()).hexdigest(), 2_000 + n % 50_000)
                 for n in range(BLOBS)]
        conn.executemany("INSERT INTO blob (id, sha256, size, mime_type, ref_count, created_at) "
                         "VALUES (?, ?, ?, 'text/html', 1, '2020-01-01 00:00:00.000000')", blobs)
        indexes = [index.name for index in Base.metadata.tables["page_fetch"].indexes]
        for name in indexes:
            conn.execute(f"DROP INDEX {name}")
        placeholders = ", ".join("?" for _ in _COLUMNS)
        insert = f"INSERT INTO page_fetch ({', '.join(_COLUMNS)}) VALUES ({placeholders})"
        step = (END_MS - START_MS) / rows
        batch: list[tuple[Any, ...]] = []
        last = len(cumulative) - 1
        top = cumulative[-1]
        for number in range(rows):
            at = bisect.bisect_right(cumulative, rng.random() * top)
            index = min(at, last)
            url = urls[index]
            draw = rng.random()
            fetched_ms = START_MS + int(number * step) + rng.randrange(max(1, int(step)))
            if draw < 0.92:
                status, blob = 200, blobs[rng.randrange(BLOBS)]
            elif draw < 0.95:
                status, blob = 404, blobs[rng.randrange(BLOBS)]
            elif draw < 0.98:
                status, blob = 301, None
            else:
                status, blob = None, None
            kind = "redirect" if status == 301 else ("page" if _mime(url).startswith("text/html")
                                                     else "request")
            batch.append((
                number + 1, SESSION_ID, 1, kind, url,
                hashlib.sha256(url.encode()).hexdigest(), url.split("/", 3)[2], url, fetched_ms,
                status, url + "index.html" if status == 301 else url,
                None if status in (301, None) else _mime(url),
                None if blob is None else blob[1], None if blob is None else blob[2],
                None if blob is None else blob[0], False, "sessions/bench/0.jsonl", number, 0,
                keys[index]))
            if len(batch) == _BATCH:
                conn.executemany(insert, batch)
                batch.clear()
        if batch:
            conn.executemany(insert, batch)
        conn.execute("COMMIT")
        index_started = time.perf_counter()
        engine = make_engine(f"sqlite:///{path}")
        try:
            for table_index in Base.metadata.tables["page_fetch"].indexes:
                table_index.create(engine)
        finally:
            engine.dispose()
        conn.execute("ANALYZE")
        index_seconds = time.perf_counter() - index_started
    finally:
        conn.close()
    sample_urls = rng.sample(urls[1:], min(2_000, len(urls) - 1))
    host_names = sorted({url.split("/")[2] for url in urls[1:]})
    return {"hosts": hosts, "distinct_urls": len(urls), "index_seconds": index_seconds,
            "sample": sample_urls, "hosts_sample": rng.sample(host_names, min(500, len(host_names))),
            "heavy": HEAVY_URL, "heavy_key": surt(HEAVY_URL)}
