"""captures_bench's S3-primary case of the ingest part: the same generated crawl, its bodies
and segments in a bucket (S3_ENDPOINT_URL, else a throwaway moto_server), ingested by
`ingest_crawl` through the bucket (segments listed under `sessions/`, read with one GET
each, one HEAD per distinct body, the segment's own blob put), into a fresh SQLite catalog
per run. Prints pages/s beside the local primary's, the ratio, and S3 requests per page and
per distinct body."""

from __future__ import annotations

import os
import re
import statistics
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PREFIX = "archive"


def _settings(data: Path, *, endpoint: str, bucket: str, catalog: Path) -> Any:
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import load_settings

    data.mkdir(parents=True, exist_ok=True)
    (data / "archive.toml").write_text(
        f'[catalog]\nurl = "sqlite:///{catalog}"\n\n[[stores]]\nname = "primary"\n'
        f'kind = "s3"\nbucket = "{bucket}"\nprefix = "{PREFIX}"\n'
        f'endpoint_url = "{endpoint}"\ncodec = "raw"\n')
    settings = load_settings(data, environ={})
    initialize(settings)
    return settings


def _upload(crawl: Any, settings: Any) -> tuple[int, int, float, Counter[str]]:
    """The crawl's bodies and segments into the bucket the way the crawler sends them
    (untimed; requests counted): every body reference of every segment, in crawl order,
    through the crawler's own put (`crawl_store`: one conditional PUT per new body; a body
    this process stored already costs none), then each segment uploaded as the crawler
    does. Returns (distinct bodies, their bytes, seconds, requests)."""
    from archive_pipelines.blobstore import LocalBlobStore
    from archive_pipelines.blobstore.named_objects import NamedObjects
    from frontier_service.archiving.archiver import _put_deduplicated
    from frontier_service.archiving.stored_bodies import StoredBodies
    from frontier_service.service.crawler_parts import crawl_store

    local = LocalBlobStore(crawl.data / "cas")
    store = crawl_store(settings.primary_store, settings.data_dir)
    stored = StoredBodies()
    references = [match.decode() for segment in crawl.segments
                  for match in _BODY_HASH.findall((crawl.data / segment.relative).read_bytes())]
    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:  # the crawler's blob-store threads
        puts = list(pool.map(
            lambda sha: _put_deduplicated(store, local.local_path(sha).read_bytes(), stored),
            references))
    objects = NamedObjects(store)
    for segment in crawl.segments:
        objects.put_file(segment.relative, crawl.data / segment.relative)
    seconds = time.perf_counter() - started
    distinct = {put.sha256: put.size for put in puts}
    return len(distinct), sum(distinct.values()), seconds, Counter(store.take_request_counts())


_BODY_HASH = re.compile(rb'"body_hash"\s*:\s*"sha256:([0-9a-f]{64})"')


def _ingest_once(crawl: Any, settings: Any, catalog: Path) -> tuple[float, int, Counter[str]]:
    """One ingest through the bucket into a fresh catalog: (seconds, pages, requests)."""
    from archive_pipelines.captures.segment_ingest import CapturePrimary, ingest_crawl
    from archive_pipelines.datadir import initialize
    from archive_pipelines.storage.assembly import open_storage

    for suffix in ("", "-wal", "-shm"):
        Path(f"{catalog}{suffix}").unlink(missing_ok=True)
    initialize(settings)
    parts = open_storage(settings)
    store = parts.primary.store
    primary = CapturePrimary(store, parts.primary.store_id, parts.views.farm)
    for segment in crawl.segments:  # the segments' blobs an earlier run stored
        store.delete(segment.sha256)
    store.take_request_counts()
    started = time.perf_counter()
    report = ingest_crawl(parts.catalog, primary, settings.data_dir)
    seconds = time.perf_counter() - started
    requests = Counter(store.take_request_counts())
    if len(report.ingested) != len(crawl.segments) or report.failed \
            or report.total("missing_bodies"):
        raise SystemExit(f"error: the S3 ingest is wrong: {len(report.ingested)} of "
                         f"{len(crawl.segments)} segments, {len(report.failed)} failed, "
                         f"{report.total('missing_bodies')} bodies missing")
    parts.close()
    parts.catalog.engine.dispose()
    return seconds, report.total("pages"), requests


def bench_ingest_s3(crawl: Any, runs: int, local_rate: float) -> list[str]:
    """The S3 case; returns its summary lines (printed too)."""
    from s3_endpoint import bench_bucket  # bench/ is on the path (captures_bench.py)

    lines: list[str] = []
    with bench_bucket("captures-bench") as (endpoint, bucket):
        where = "S3_ENDPOINT_URL" if os.environ.get("S3_ENDPOINT_URL") else "moto_server"
        data = crawl.root / "s3-data"
        catalog = crawl.root / "s3-catalog.sqlite3"
        settings = _settings(data, endpoint=endpoint, bucket=bucket, catalog=catalog)

        bodies, body_bytes, upload_s, crawl_requests = _upload(crawl, settings)
        print(f"S3 primary ({where} {endpoint}, bucket {bucket}): {bodies:,} bodies and "
              f"{len(crawl.segments):,} segments uploaded as the crawler does in "
              f"{upload_s:.1f} s (untimed); requests {dict(sorted(crawl_requests.items()))}")
        rates, requests = [], Counter[str]()
        for number in range(runs):
            seconds, pages, counts = _ingest_once(crawl, settings, catalog)
            rates.append(pages / seconds)
            requests = counts
            print(f"{number + 1:>4} {'SQLite, S3':>11} {pages / seconds:>8,.0f} pages/s, "
                  f"{seconds:.1f} s, requests {dict(sorted(counts.items()))}", flush=True)
    rate = statistics.median(rates)
    pages = crawl.pages
    total = sum(requests.values())
    lines.append(f"S3 primary: median {rate:,.0f} pages/s into SQLite (local primary "
                 f"{local_rate:,.0f} pages/s; S3/local {rate / local_rate:.2f}x)")
    lines.append(f"S3 requests per ingest: {total:,} ({total / pages:.3f} per page, "
                 f"{total / max(1, bodies):.3f} per distinct body); by operation "
                 + ", ".join(f"{op} {n:,} ({n / pages:.3f}/page)"
                             for op, n in sorted(requests.items())))
    lines.extend(_cost_lines(crawl, crawl_requests, requests, body_bytes=body_bytes))
    for line in lines:
        print(line)
    return lines


def _cost_lines(crawl: Any, crawl_requests: Counter[str], ingest_requests: Counter[str], *,
                body_bytes: int) -> list[str]:
    """The S3 bill per million captures of this crawl: its requests (the crawler's and the
    ingest's) at list prices, and a month of storing its distinct bodies."""
    from archive_pipelines.blobstore.s3_requests import request_cost

    per_million = 1_000_000 / max(1, crawl.captures)
    gb_month = 0.023  # S3 Standard, first 50 TB (bench/s3_requests_bench.py)
    crawl_usd = request_cost(dict(crawl_requests)) * per_million
    ingest_usd = request_cost(dict(ingest_requests)) * per_million
    stored_gb = body_bytes * per_million / 1e9
    both = crawl_requests + ingest_requests
    return [
        f"S3 requests per capture ({crawl.captures:,} captures): crawl "
        f"{sum(crawl_requests.values()) / crawl.captures:.3f}, ingest "
        f"{sum(ingest_requests.values()) / crawl.captures:.3f}; by operation "
        + ", ".join(f"{op} {n / crawl.captures:.3f}" for op, n in sorted(both.items())),
        f"S3 cost per million captures: requests ${crawl_usd + ingest_usd:.2f} (crawl "
        f"${crawl_usd:.2f}, ingest ${ingest_usd:.2f}), storage {stored_gb:.1f} GB of distinct "
        f"bodies = ${stored_gb * gb_month:.2f} per month (S3 Standard list prices)"]
