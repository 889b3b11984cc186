"""Scrub benchmark (issue 18): how fast a scrub reads each kind of store, and what it costs
at S3 in requests.

    .venv/bin/python bench/scrub_bench.py [--small 3000] [--large 4] [--large-mb 16] [--rounds 3]

Blobs are written into the primary store (raw) and copied by the replication director and
worker to a local raw store, a local zstd store and a bucket on moto_server (S3_ENDPOINT_URL
reuses a running endpoint). Each store is then scrubbed in full with `plan_scrubs` +
`run_scrubs` (the code of the `scrub` command and of `scrub_job`), `--rounds` times, the
stores' order rotated round by round. Per store: median objects/s and MB/s (raw bytes read,
decoded and rehashed) and, for S3, the HTTP requests per object, counted by a botocore
`before-send` hook on the store's own client (every HTTP request our code sends, retries
included), also while replicating. Then the default sample of `replication-status --verify`
(1% or 1,000 copies) per store. Local stores are read from the page cache after the first
round (they were just written). No verdict: figures for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from s3_endpoint import bench_bucket  # noqa: E402
from settle import remove_tree  # noqa: E402
from sqlalchemy import insert  # noqa: E402

from archive_pipelines.catalog.models import Blob, BlobCopy  # noqa: E402
from archive_pipelines.datadir import initialize  # noqa: E402
from archive_pipelines.replication import (  # noqa: E402
    ReplicationSetup,
    ScrubReport,
    plan_scrubs,
    replicate_until_met,
    run_scrubs,
)
from archive_pipelines.settings import (  # noqa: E402
    CatalogSettings,
    ReplicationSettings,
    Settings,
    StoreSettings,
)
from archive_pipelines.storage.assembly import open_catalog, open_storage  # noqa: E402

WORK = ROOT / "bench" / ".work" / "scrub"
MIB = 1 << 20
STORES = ("local-raw", "local-zstd", "s3")
GET_PRICE_PER_MILLION = 0.40  # USD, S3 Standard GET list price (in-region transfer is free)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=3000, help="small blobs (default 3000)")
    parser.add_argument("--large", type=int, default=4, help="large blobs (default 4)")
    parser.add_argument("--large-mb", type=int, default=16, help="MiB per large blob (16)")
    parser.add_argument("--rounds", type=int, default=3, help="full scrubs per store (3)")
    parser.add_argument("--width", type=int, default=8, help="objects read at a time (8)")
    parser.add_argument("--keep", action="store_true", help="keep bench/.work/scrub")
    return parser.parse_args()


class RequestCounter:
    """Counts the HTTP requests a botocore client sends, by method (S3 bills by method)."""

    def __init__(self) -> None:
        self.by_operation: Counter[str] = Counter()

    def __call__(self, request: Any, **_kwargs: Any) -> None:
        self.by_operation[str(request.method)] += 1

    def take(self) -> Counter[str]:
        """The counts since the last call."""
        counts, self.by_operation = self.by_operation, Counter()
        return counts


def make_blobs(settings: Settings, n_small: int, n_large: int, large_mb: int) -> int:
    """Write blobs straight into the primary store and record them (referenced, present).
    Small ones are log-normal around 4 KiB, half compressible text, half noise."""
    rng = random.Random(18)
    words = [b"<div>", b"</div>", b"<a", b"href=", b"the", b"archive", b"of", b"web", b"page"]
    text = b" ".join(rng.choices(words, k=1 << 20))[:4 * MIB]
    noise = os.urandom(4 * MIB)
    parts = open_storage(settings)
    primary = parts.primary.store
    rows: dict[str, int] = {}
    with primary.deferred_sync():
        for index in range(n_small):
            size = min(MIB, max(16, int(rng.lognormvariate(8.3, 1.0))))
            pool = text if index % 2 else noise
            start = (index * 7919) % (len(pool) - size)
            data = f"{index}:".encode() + pool[start:start + size]
            rows[primary.put_bytes(data).sha256] = len(data)
        for index in range(n_large):
            data = f"large {index}:".encode() + os.urandom(large_mb * MIB)
            rows[primary.put_bytes(data).sha256] = len(data)
    primary.sync()
    now = datetime.now(UTC)
    store_id = parts.primary.store_id  # before the session: it writes the store's row
    with parts.catalog.transaction() as tx:
        tx.session.execute(insert(Blob), [
            {"id": i, "sha256": sha, "size": size, "ref_count": 1, "created_at": now,
             "mime_type": "application/octet-stream"}
            for i, (sha, size) in enumerate(rows.items(), start=1)])
        tx.session.execute(insert(BlobCopy), [
            {"blob_id": i, "store_id": store_id, "status": "present", "mtime": now}
            for i in range(1, len(rows) + 1)])
    parts.close()
    parts.catalog.engine.dispose()
    return sum(rows.values())


def count_requests(setup: ReplicationSetup, endpoint: str) -> RequestCounter:
    """Give the S3 store a client whose requests are counted (the store's public `client`)."""
    import boto3

    from archive_pipelines.blobstore import S3BlobStore

    replica = setup.replicas["s3"]
    old = replica.require()
    assert isinstance(old, S3BlobStore)
    client = boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1")
    counter = RequestCounter()
    client.meta.events.register("before-send.s3", counter)
    replica.store = S3BlobStore(bucket=old.bucket, prefix=old.prefix, name=old.name,
                                codec=old.codec, zstd_level=old.zstd_level,
                                endpoint_url=endpoint, client=client)
    return counter


def scrub_one(setup: ReplicationSetup, store: str, width: int, *, sample: float | None = None,
              min_sample: int = 0) -> ScrubReport:
    plans = plan_scrubs(setup.catalog, setup.replicas, [store], sample=sample,
                        min_sample=min_sample)
    [report] = run_scrubs(setup.catalog, setup.replicas, plans, width=width)
    if report.bad or report.error:
        raise SystemExit(f"scrub of {store} found problems: {report.summary()}")
    return report


def main() -> int:
    args = parse_args()
    remove_tree(WORK)
    data_dir = WORK / "data"
    data_dir.mkdir(parents=True)
    with bench_bucket("scrub") as (endpoint, bucket):
        settings = Settings(
            data_dir=data_dir, catalog=CatalogSettings(),
            replication=ReplicationSettings(retention=4, copier_width=args.width),
            stores=[StoreSettings(name="primary", path="cas", codec="raw"),
                    StoreSettings(name="local-raw", path="replicas/raw", codec="raw"),
                    StoreSettings(name="local-zstd", path="replicas/zstd", codec="zstd"),
                    StoreSettings(name="s3", kind="s3", bucket=bucket, prefix="archive",
                                  endpoint_url=endpoint, codec="zstd")])
        initialize(settings)
        print(f"date {datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.2f}; width {args.width}; SQLite catalog; "
              f"S3 = moto_server at {endpoint}")
        started = time.perf_counter()
        raw_bytes = make_blobs(settings, args.small, args.large, args.large_mb)
        objects = args.small + args.large
        print(f"{args.small:,} small + {args.large} x {args.large_mb} MiB blobs "
              f"({raw_bytes / 1e6:,.1f} MB) in {time.perf_counter() - started:.1f} s")

        setup = ReplicationSetup.open(open_catalog(settings), settings)
        counter = count_requests(setup, endpoint)
        started = time.perf_counter()
        replicate_until_met(setup)
        sent = counter.take()
        print(f"replicated to {', '.join(STORES)} in {time.perf_counter() - started:.1f} s; "
              f"S3 requests per object while replicating: {sum(sent.values()) / objects:.2f} "
              f"({_operations(sent, objects)})")

        rates: dict[str, list[tuple[float, float]]] = {store: [] for store in STORES}
        requests: Counter[str] = Counter()
        for round_no in range(args.rounds):
            order = STORES[round_no % 3:] + STORES[:round_no % 3]
            for store in order:
                report = scrub_one(setup, store, args.width)
                assert report.checked == objects, (store, report.checked)
                rates[store].append((report.objects_per_second, report.megabytes_per_second))
                if store == "s3":
                    requests.update(counter.take())
        print(f"\nfull scrub, median of {args.rounds} rounds ({objects:,} objects, "
              f"{raw_bytes / 1e6:,.1f} MB raw per store):")
        print(f"  {'store':<12} {'objects/s':>10} {'MB/s':>8} {'requests/object':>16} "
              f"{'$ per 1M objects':>17}")
        for store in STORES:
            per_object = sum(requests.values()) / (objects * args.rounds) if store == "s3" else 0
            cost = (f"{per_object * GET_PRICE_PER_MILLION:>17.2f}" if store == "s3"
                    else f"{'-':>17}")
            shown = f"{per_object:>16.2f}" if store == "s3" else f"{'-':>16}"
            print(f"  {store:<12} {statistics.median(r[0] for r in rates[store]):>10,.0f} "
                  f"{statistics.median(r[1] for r in rates[store]):>8,.1f} {shown} {cost}")
        by_method = _operations(requests, objects * args.rounds)
        print(f"  S3 requests per object by method: {by_method}; "
              f"$ at {GET_PRICE_PER_MILLION:.2f} per million GETs")

        print("\nreplication-status --verify's default sample (1% or 1,000 copies):")
        for store in STORES:
            report = scrub_one(setup, store, args.width, sample=0.01, min_sample=1000)
            sent = counter.take() if store == "s3" else Counter()
            extra = (f", {sum(sent.values()) / max(1, report.checked):.2f} S3 requests/object"
                     if store == "s3" else "")
            print(f"  {store:<12} {report.checked:,} copies in {report.seconds:.2f} s "
                  f"({report.objects_per_second:,.0f} objects/s){extra}")
        if not args.keep:
            remove_tree(WORK)
    return 0


def _operations(counts: Counter[str], objects: int) -> str:
    return ", ".join(f"{name} {n / objects:.2f}" for name, n in counts.most_common()) or "none"


if __name__ == "__main__":
    sys.exit(main())
