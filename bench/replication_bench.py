"""Replication benchmark: copies to a local zstd store and to S3 (moto_server), side by side
with `rclone copy --checksum` local->local on the same files, and the director's tick time
over 1M blobs on PostgreSQL.

    .venv/bin/python bench/replication_bench.py [--small 100000] [--large-mb 1024]

Targets: >= 3,000 small objects/s to the local store; ours/rclone wall time <= 1.5;
director tick <= 1 s at 1M blobs. Scratch data lives in bench/.work/replication (removed
at the end unless --keep). S3_ENDPOINT_URL / DATABASE_URL reuse running servers.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from settle import remove_tree, settle  # noqa: E402
from sqlalchemy import insert  # noqa: E402

from archive_pipelines.catalog.models import Blob, BlobCopy  # noqa: E402
from archive_pipelines.datadir import initialize  # noqa: E402
from archive_pipelines.replication import ReplicaSet, archive_batch, plan_batches  # noqa: E402
from archive_pipelines.replication.copier import map_parallel  # noqa: E402
from archive_pipelines.replication.report import BatchReport  # noqa: E402
from archive_pipelines.settings import CatalogSettings, Settings, StoreSettings  # noqa: E402
from archive_pipelines.storage.assembly import StorageParts, open_catalog, open_storage  # noqa: E402
from archive_testkit.blob_rows import seed_blobs  # noqa: E402
from archive_testkit.servers import LocalMotoServer, LocalPostgres, create_database, drop_database  # noqa: E402

WORK = ROOT / "bench" / ".work" / "replication"
MIB = 1 << 20
HOUR = timedelta(hours=1)
PRIMARY = StoreSettings(name="primary", kind="local", path="cas", codec="raw")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=100_000, help="small blobs (default 100000)")
    parser.add_argument("--large-mb", type=int, default=1024, help="MiB of large blobs (1024)")
    parser.add_argument("--director-blobs", type=int, default=1_000_000,
                        help="catalog size for the director tick (default 1000000)")
    parser.add_argument("--width", type=int, default=8, help="copier threads (default 8)")
    parser.add_argument("--batch-size", type=int, default=1000, help="worker batch (1000)")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                        help="worker runs at a time (default: one per core)")
    parser.add_argument("--skip-s3", action="store_true", help="no S3 destination")
    parser.add_argument("--s3-small", type=int, default=10_000,
                        help="small blobs sent to S3 (moto_server is slow; default 10000)")
    parser.add_argument("--keep", action="store_true", help="keep bench/.work/replication")
    return parser.parse_args()


def small_sizes(n: int, rng: random.Random) -> list[int]:
    """Log-normal, median 4 KiB (sigma 1), clipped to [1 B, 1 MiB]."""
    return [min(MIB, max(1, int(rng.lognormvariate(math.log(4096), 1.0)))) for _ in range(n)]


def make_blobs(parts: StorageParts, n_small: int, large_mb: int) -> tuple[list[str], list[str]]:
    """Write blobs straight into the primary store and record them (ref_count 1, present)."""
    rng = random.Random(42)
    words = [b"<div>", b"</div>", b"<a", b"href=", b"class=", b"the", b"archive", b"of",
             b"web", b"page", b"snapshot", b"2024", b"html", b"body", b"script", b"style"]
    text = b" ".join(rng.choices(words, k=1 << 20))[:4 * MIB]  # compressible, like HTML
    noise = os.urandom(4 * MIB)  # incompressible, like images
    primary = parts.primary.store

    def put_small(item: tuple[int, int]) -> tuple[str, int]:
        index, size = item
        pool = text if index % 2 else noise
        header = f"{index}:".encode()  # unique: no two blobs dedup into one
        start = (index * 7919) % (len(pool) - size)
        data = header + pool[start:start + max(0, size - len(header))]
        return primary.put_bytes(data).sha256, len(data)

    with primary.deferred_sync():
        small = map_parallel(put_small, list(enumerate(small_sizes(n_small, rng))), width=4)
        large: list[tuple[str, int]] = []
        remaining = large_mb * MIB
        while remaining > 0:
            size = min(remaining, rng.randint(32, 160) * MIB)
            stream = io.BytesIO(os.urandom(size))
            large.append((primary.put_stream(stream).sha256, size))
            remaining -= size
    primary.sync()
    now = datetime.now(UTC)
    rows = {sha: size for sha, size in [*small, *large]}
    with parts.catalog.session() as session:  # committed at the end of the block
        store_id = parts.primary.store_id
        ids = list(range(1, len(rows) + 1))
        session.execute(insert(Blob), [
            {"id": i, "sha256": sha, "size": size, "ref_count": 1, "created_at": now,
             "mime_type": "application/octet-stream"} for i, (sha, size) in zip(ids, rows.items(),
                                                                                  strict=True)])
        session.execute(insert(BlobCopy), [{"blob_id": i, "store_id": store_id,
                                            "status": "present", "mtime": now} for i in ids])
    return [s for s, _ in small], [s for s, _ in large]


_WORKER: dict[str, object] = {}


def _open_worker(settings_json: str) -> None:
    """Process-pool initializer: one catalog and ReplicaSet per worker process."""
    settings = Settings.model_validate_json(settings_json)
    catalog = open_catalog(settings)
    _WORKER["catalog"], _WORKER["replicas"] = catalog, ReplicaSet.open(catalog, settings)


def _run_batch(args: tuple[list[str], int]) -> BatchReport:
    batch, width = args
    return archive_batch(_WORKER["catalog"], _WORKER["replicas"], batch,  # type: ignore[arg-type]
                         retention=2, max_age=HOUR, width=width)


def replicate_to(data_dir: Path, destination: StoreSettings, large: set[str],
                 args: argparse.Namespace, small_cap: int | None = None) -> dict[str, float]:
    """Director ticks, then worker runs (one per batch, `--processes` at a time, as Dagster's
    multiprocess executor would run them) bringing every blob to 2 copies on
    {primary, destination}. Small-blob batches are timed apart from the large-blob batch;
    with `small_cap`, small batches past that many objects are skipped."""
    settings = Settings(data_dir=data_dir, catalog=CatalogSettings(),
                        stores=[PRIMARY, destination])
    parts = open_storage(settings)
    replicas = ReplicaSet.open(parts.catalog, parts.settings)
    seconds = {"small": 0.0, "large": 0.0, "director": 0.0}
    totals = BatchReport()
    with ProcessPoolExecutor(args.processes, initializer=_open_worker,
                             initargs=(settings.model_dump_json(),)) as pool:
        list(pool.map(_run_batch, [([], 1)] * args.processes))  # start the processes
        cursor = 0
        while True:
            started = time.perf_counter()
            tick = plan_batches(parts.catalog, replicas, retention=2, max_age=HOUR,
                                batch_size=args.batch_size, cursor=cursor,
                                max_batches=4 * args.processes)
            seconds["director"] += time.perf_counter() - started
            for kind in ("small", "large"):
                batches = [(b, args.width) for b in tick.batches
                           if bool(large.intersection(b)) == (kind == "large")]
                if kind == "small" and small_cap is not None:
                    room = max(0, small_cap - int(totals.created[destination.name]))
                    batches = batches[:-(-room // args.batch_size)] if room else []
                started = time.perf_counter()
                for report in pool.map(_run_batch, batches):
                    totals.add(report)
                seconds[kind] += time.perf_counter() - started
            cursor = tick.next_cursor
            # Capped: one pass (the skipped blobs stay under-replicated on purpose).
            if tick.wrapped and (small_cap is not None or not tick.batches):
                break
    parts.close()
    parts.catalog.engine.dispose()
    return {**seconds, "objects": totals.created[destination.name],
            "bytes": totals.bytes_copied[destination.name],
            "stored": totals.stored_bytes[destination.name], "errors": len(totals.errors)}


def warm(root: Path) -> None:
    """Read every source object right before a contender starts: this VM's DAMON reclaim
    pages out page cache left unread for ~30 s (/sys/kernel/mm/damon), so without this the
    first contender read from disk and the last one from memory."""
    for folder, _dirs, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb", buffering=0) as handle:
                while handle.read(1 << 20):
                    pass


def rclone_copy(source: Path, target: Path, width: int) -> float | None:
    rclone = shutil.which("rclone")
    if not rclone:
        print("rclone not found (scripts/ensure-bench-deps.sh installs it): skipped")
        return None
    started = time.perf_counter()
    subprocess.run([rclone, "copy", "--checksum", "--transfers", str(width), "--checkers",
                    str(width), "--no-update-modtime", str(source), str(target)], check=True)
    return time.perf_counter() - started


def director_ticks(n: int) -> list[float]:
    """Seconds per tick over one full cycle of a PostgreSQL catalog of `n` blobs."""
    server = None if os.environ.get("DATABASE_URL") else LocalPostgres().start()
    server_url = os.environ.get("DATABASE_URL") or (server.url if server else "")
    name = f"bench_{uuid.uuid4().hex[:8]}"
    url = create_database(server_url, name)
    try:
        settings = Settings(data_dir=WORK / "pg", catalog=CatalogSettings(url=url),
                            stores=[PRIMARY, StoreSettings(name="r1", path="replicas/r1"),
                                    StoreSettings(name="r2", path="replicas/r2")])
        (WORK / "pg").mkdir(parents=True, exist_ok=True)
        initialize(settings)
        parts = open_storage(settings)
        replicas = ReplicaSet.open(parts.catalog, parts.settings, probe=False)
        started = time.perf_counter()
        seed_blobs(parts.catalog.engine, n, replicas.store_ids, replicated_fraction=0.99)
        print(f"  seeded {n:,} blobs + copies in {time.perf_counter() - started:.1f} s")
        ticks, cursor = [], 0
        while True:
            started = time.perf_counter()
            tick = plan_batches(parts.catalog, replicas, retention=2, max_age=HOUR, batch_size=1000,
                                cursor=cursor, max_batches=4)
            ticks.append(time.perf_counter() - started)
            cursor = tick.next_cursor
            if tick.wrapped:
                break
        parts.close()
        parts.catalog.engine.dispose()
        return ticks
    finally:
        drop_database(server_url, name)
        if server is not None:
            server.stop()


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up servers and scratch
    # A kept earlier run is moved aside now and deleted after this run's measurements: on
    # this VM's ext4 a large delete slows every file created in the next minutes.
    previous = WORK.with_name(f"{WORK.name}-previous-{os.getpid()}")
    if WORK.exists():
        WORK.rename(previous)
    settle()
    data_dir = WORK / "data"
    data_dir.mkdir(parents=True)
    moto = None
    verdicts: list[tuple[str, bool]] = []
    try:
        print(f"date {datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.2f}; {args.processes} worker processes x {args.width} "
              f"copier threads, batch {args.batch_size}")
        settings = Settings(data_dir=data_dir, catalog=CatalogSettings(), stores=[PRIMARY])
        initialize(settings)
        parts = open_storage(settings)
        started = time.perf_counter()
        small, large = make_blobs(parts, args.small, args.large_mb)
        parts.close()
        parts.catalog.engine.dispose()
        print(f"generated {len(small):,} small + {len(large)} large blobs "
              f"({args.large_mb} MiB) in {time.perf_counter() - started:.1f} s")

        source = data_dir / "cas" / "sha256"
        warm(source)
        local = replicate_to(data_dir, StoreSettings(name="local", path="replicas/local"),
                             set(large), args)
        small_rate = len(small) / local["small"]
        large_rate = args.large_mb / local["large"] if large else 0.0
        ours_s = local["small"] + local["large"] + local["director"]
        print(f"ours -> local zstd: {small_rate:,.0f} small objects/s, {large_rate:,.0f} MiB/s "
              f"large, {ours_s:.1f} s total ({local['objects']:,} objects, "
              f"{local['bytes'] / MIB:,.0f} MiB -> {local['stored'] / MIB:,.0f} MiB stored, "
              f"director {local['director']:.2f} s, errors {local['errors']})")
        verdicts.append((f"small objects/s to local {small_rate:,.0f} >= 3,000",
                         small_rate >= 3000))

        warm(source)
        raw = replicate_to(data_dir, StoreSettings(name="localraw", path="replicas/raw",
                                                   codec="raw"), set(large), args)
        raw_s = raw["small"] + raw["large"] + raw["director"]
        print(f"ours -> local raw:  {len(small) / raw['small']:,.0f} small objects/s, "
              f"{args.large_mb / raw['large']:,.0f} MiB/s large, {raw_s:.1f} s total")

        warm(source)
        rclone_s = rclone_copy(source, WORK / "rclone", args.width)
        if rclone_s is not None:
            print(f"rclone copy --checksum local -> local: {rclone_s:.1f} s, "
                  f"{(len(small) + len(large)) / rclone_s:,.0f} objects/s overall "
                  f"(ours zstd/rclone {ours_s / rclone_s:.2f}, ours raw/rclone "
                  f"{raw_s / rclone_s:.2f})")
            verdicts.append((f"ours (zstd) / rclone {ours_s / rclone_s:.2f} <= 1.5",
                             ours_s / rclone_s <= 1.5))

        if not args.skip_s3:
            endpoint = os.environ.get("S3_ENDPOINT_URL")
            if not endpoint:
                moto = LocalMotoServer().start()
                endpoint = moto.url
            for var, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench"),
                               ("AWS_DEFAULT_REGION", "us-east-1")):
                os.environ.setdefault(var, value)
            import boto3

            bucket = f"bench-{uuid.uuid4().hex[:8]}"
            boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
            s3 = replicate_to(data_dir, StoreSettings(name="s3", kind="s3", bucket=bucket,
                                                      endpoint_url=endpoint), set(large),
                              args, small_cap=args.s3_small)
            sent = int(s3["objects"]) - len(large)
            print(f"ours -> S3 (moto_server, {sent:,} small blobs): "
                  f"{sent / s3['small']:,.0f} small objects/s, "
                  f"{args.large_mb / s3['large'] if large else 0:,.0f} MiB/s large, "
                  f"errors {s3['errors']}")

        ticks = director_ticks(args.director_blobs)
        print(f"director tick at {args.director_blobs:,} blobs (PostgreSQL, {len(ticks)} ticks "
              f"= one cycle): median {statistics.median(ticks):.3f} s, max {max(ticks):.3f} s")
        verdicts.append((f"director tick max {max(ticks):.3f} s <= 1 s", max(ticks) <= 1.0))
    finally:
        if moto is not None:
            moto.stop()
        if not args.keep:
            remove_tree(WORK)
        remove_tree(previous)
    for text, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    return 0 if all(ok for _t, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
