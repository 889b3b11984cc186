"""captures_bench's S3-primary case of the ingest part: the same generated crawl, its bodies
and segments in a bucket (S3_ENDPOINT_URL, else a throwaway moto_server), ingested by
`ingest_crawl` through the bucket (segments listed under `sessions/`, read with one GET
each, one HEAD per distinct body, the segment's own blob put), into a fresh SQLite catalog
per run. Prints pages/s beside the local primary's, the ratio, and S3 requests per page and
per distinct body."""

from __future__ import annotations

import os
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


def _upload(crawl: Any, store: Any) -> tuple[int, float]:
    """The crawl's bodies and segments into the bucket (untimed): (bodies, seconds)."""
    from archive_pipelines.blobstore import LocalBlobStore
    from archive_pipelines.blobstore.named_objects import NamedObjects

    local = LocalBlobStore(crawl.data / "cas")
    segment_blobs = {segment.sha256 for segment in crawl.segments}
    bodies = [sha for sha in local.iter_hashes() if sha not in segment_blobs]
    started = time.perf_counter()
    objects = NamedObjects(store)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda sha: store.put_file(local.local_path(sha)), bodies))
        list(pool.map(lambda s: objects.put_file(s.relative, crawl.data / s.relative),
                      crawl.segments))
    return len(bodies), time.perf_counter() - started


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
        from archive_pipelines.storage.assembly import open_storage

        parts = open_storage(settings)
        bodies, upload_s = _upload(crawl, parts.primary.store)
        parts.catalog.engine.dispose()
        print(f"S3 primary ({where} {endpoint}, bucket {bucket}): {bodies:,} bodies and "
              f"{len(crawl.segments):,} segments uploaded in {upload_s:.1f} s (untimed)")
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
    for line in lines:
        print(line)
    return lines
