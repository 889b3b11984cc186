"""CAS benchmark: ingest, dedup, verify and view rebuild on a web-archive-like corpus,
side by side with `restic backup` and `cp -a` on the same files in the same run.

    .venv/bin/python bench/cas_bench.py [--files 20000] [--large 2] [--large-mb 120] [--no-s3]

Prints: small-file ingest files/s (catalog rows + 4 views each, SQLite: a link per file in
by_timestamp, a folder link per snapshot in the other three views), large-file MB/s
beside hashlib.sha256's MB/s on the same bytes -- both for the default put (hard-link: the
corpus is on the data dir's filesystem) and for --copy --, dedup ratio, verify files/s,
rebuild_views links/s, and whole-corpus wall times of our ingest, restic and cp -a.

With an S3 primary (default on; `--no-s3` skips it; S3_ENDPOINT_URL or a throwaway
moto_server, `s3_endpoint.bench_bucket`), in the same run: small-file ingest files/s (copies
uploaded, no views) and its ratio to the local copy ingest, the S3 requests per blob stored
and per file, and the same for a second ingest of the same files into other snapshots (all
duplicates: one HEAD each, nothing uploaded).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import WORK_DIR, CorpusParams, ensure_corpus, load_manifest  # noqa: E402
from s3_endpoint import bench_bucket  # noqa: E402
from settle import remove_tree, settle  # noqa: E402

from archive_pipelines.catalog import Catalog  # noqa: E402
from archive_pipelines.datadir import initialize  # noqa: E402
from archive_pipelines.settings import Settings, load_settings  # noqa: E402
from archive_pipelines.storage import IngestItem  # noqa: E402
from archive_pipelines.storage.assembly import StorageParts, open_storage  # noqa: E402
from archive_pipelines.storage.file_ingest import IngestReport, ingest_files  # noqa: E402
from archive_pipelines.storage.file_work import REMOTE_THREADS  # noqa: E402
from archive_pipelines.storage.verify import verify_storage  # noqa: E402
from archive_pipelines.storage.view_rebuild import rebuild_views  # noqa: E402

LARGE = 50 << 20  # files at or above this size are "large"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000, help="small files (default 20000)")
    parser.add_argument("--large", type=int, default=2, help="large files (default 2)")
    parser.add_argument("--large-mb", type=int, default=120, help="MiB each (default 120)")
    parser.add_argument("--skip-peers", action="store_true", help="do not run restic / cp -a")
    parser.add_argument("--keep", action="store_true", help="keep the data dirs afterwards")
    parser.add_argument("--s3", action=argparse.BooleanOptionalAction, default=True,
                        help="also ingest into an S3 primary (default: yes)")
    return parser.parse_args()


def warm(paths: list[Path]) -> int:
    """Read every file once so every contender starts from the same page cache.

    Called right before each contender: this VM's DAMON reclaim pages out page cache left
    unread for ~30 s (/sys/kernel/mm/damon), so one warm-up at the start would leave later
    contenders reading from disk."""
    total = 0
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                total += len(chunk)
    return total


def sha256_speed(paths: list[Path]) -> float:
    """hashlib.sha256 MB/s reading the same large files."""
    started, total = time.perf_counter(), 0
    for path in paths:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
                total += len(chunk)
    return total / (1 << 20) / (time.perf_counter() - started)


def items_for(corpus: Path, manifest: dict, ids: dict[str, str], large: bool) -> Iterator[IngestItem]:  # type: ignore[type-arg]
    for snap in manifest["snapshots"]:
        for entry in snap["files"]:
            if (entry["size"] >= LARGE) != large:
                continue
            parts = entry["path"].split("/", 2)
            extractor = "index" if len(parts) == 2 else parts[1]
            yield IngestItem(ids[snap["timestamp"]], extractor, entry["path"].split("/", 1)[1],
                             corpus / entry["path"])


def timed_run(args: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, **(env or {})})
    return time.perf_counter() - started


def run_peers(corpus: Path, work: Path, paths: list[Path]) -> tuple[float | None, float | None]:
    restic = shutil.which("restic")
    restic_s = None
    if restic:
        repo, env = work / "restic-repo", {"RESTIC_PASSWORD": "bench", "RESTIC_CACHE_DIR":
                                           str(work / "restic-cache")}
        timed_run([restic, "-r", str(repo), "init"], env)
        warm(paths)
        restic_s = timed_run([restic, "-r", str(repo), "backup", "--quiet", str(corpus)], env)
    else:
        print("restic not found (scripts/ensure-bench-deps.sh installs it): skipped")
    warm(paths)
    cp_s = timed_run(["cp", "-a", str(corpus), str(work / "cp-copy")])
    return restic_s, cp_s


def main() -> int:
    args = parse_args()
    params = CorpusParams(files=args.files, large=args.large, large_mb=args.large_mb)
    t0 = time.perf_counter()
    corpus = ensure_corpus(params)
    manifest = load_manifest(corpus)
    totals = manifest["totals"]
    print(f"corpus {corpus.name}: {totals['files']:,} files, {totals['bytes'] / 1e6:,.0f} MB, "
          f"{totals['snapshots']:,} snapshots (ready in {time.perf_counter() - t0:.0f}s)")
    all_paths = [corpus / f["path"] for s in manifest["snapshots"] for f in s["files"]]
    large_paths = [p for p in all_paths if p.stat().st_size >= LARGE]
    settle()
    warm(all_paths)
    hash_mbs = sha256_speed(large_paths) if large_paths else 0.0

    work = WORK_DIR / f"cas-run-{os.getpid()}"
    work.mkdir(parents=True)
    runs: dict[str, IngestRun] = {}
    try:
        # The default put hard-links (raw primary, corpus on the data dir's filesystem: the
        # spec's "hardlink when raw codec and same filesystem"); --copy is measured beside it.
        runs |= {mode: ingest_corpus(work / f"data-{mode}", corpus, manifest, hardlink, all_paths)
                for mode, hardlink in (("hardlink", True), ("copy", False))}
        main_run = runs["hardlink"]
        parts, report = main_run.parts, main_run.report
        assert not report.errors, report.errors[:3]

        started = time.perf_counter()
        verified = verify_storage(parts.catalog, parts.primary, parts.views)
        verify_s = time.perf_counter() - started
        assert verified.problems == 0, verified.examples

        started = time.perf_counter()
        rebuilt = rebuild_views(parts.catalog, parts.primary, parts.views,
                                work=parts.work, clean=True)
        rebuild_s = time.perf_counter() - started

        restic_s, cp_s = (None, None) if args.skip_peers else run_peers(corpus, work, all_paths)
        s3_lines = s3_case(work / "data-s3", corpus, manifest, all_paths,
                           local=runs["copy"]) if args.s3 else []

        print()
        print(f"date {datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, "
              f"catalog SQLite, views {', '.join(parts.views.enabled)}, "
              f"{parts.work.ingest_processes} ingest worker processes")
        for mode, run in runs.items():
            label = "hardlink (default)" if mode == "hardlink" else "copy (--copy)"
            print(f"small-file ingest  {label:<19} {run.small.files:>7,} files {run.small_s:7.2f} s "
                  f"{run.small.files / run.small_s:8,.0f} files/s  (target >= 3,000)")
        for mode, run in runs.items():
            if run.big.files:
                large_mb = run.big.bytes_in / (1 << 20)
                ratio = (large_mb / run.large_s) / hash_mbs
                print(f"large-file ingest  {mode:<19} {run.big.files:>7,} files {run.large_s:7.2f} s "
                      f"{large_mb / run.large_s:8,.0f} MB/s     hashlib.sha256 {hash_mbs:,.0f} MB/s "
                      f"-> {ratio:.0%} (target >= 60%)")
        print(f"dedup              {report.bytes_in / 1e6:,.0f} MB in, "
              f"{report.bytes_stored / 1e6:,.0f} MB stored, ratio {report.dedup_ratio:.2f} "
              f"(corpus says {totals['dedup_ratio']:.2f}); {report.new_blobs:,} blobs")
        print(f"verify             {verified.files_checked:>8,} files  {verify_s:7.2f} s  "
              f"{verified.files_checked / verify_s:9,.0f} files/s ({verified.links_checked:,} links)")
        print(f"rebuild_views      {rebuilt.links:>8,} links  {rebuild_s:7.2f} s  "
              f"{rebuilt.links / rebuild_s:9,.0f} links/s (clean rebuild)")
        for mode, run in runs.items():
            ours_s = run.small_s + run.large_s
            print(f"whole corpus       ours ({mode}) {ours_s:.2f} s", end="")
            if restic_s:
                print(f" | restic backup {restic_s:.2f} s (ours/restic {ours_s / restic_s:.2f}, "
                      f"target <= 1.00)", end="")
            if cp_s:
                print(f" | cp -a {cp_s:.2f} s (ours/cp {ours_s / cp_s:.2f})", end="")
            print()
        for line in s3_lines:
            print(line)
    finally:
        for run in runs.values():
            run.parts.close()  # stop the worker processes before the interpreter exits
        if not args.keep:
            remove_tree(work)
    return 0


@dataclass
class IngestRun:
    parts: StorageParts
    small: IngestReport
    small_s: float
    big: IngestReport
    large_s: float

    @property
    def report(self) -> IngestReport:
        total = IngestReport()
        total.add(self.small)
        total.add(self.big)
        return total


def add_snapshots(parts: StorageParts, manifest: dict, *, created_by: str = "bench"  # type: ignore[type-arg]
                  ) -> dict[str, str]:
    """A catalog snapshot per corpus snapshot: timestamp -> id."""
    repo = Catalog(parts.catalog.engine)
    ids = {}
    for snap in manifest["snapshots"]:
        ids[snap["timestamp"]] = repo.snapshots.add_snapshot(
            url=snap["url"], timestamp=snap["timestamp"], created_by=created_by,
            created_at=datetime.fromtimestamp(float(snap["timestamp"]), tz=UTC)).id
    return ids


def ingest_corpus(data: Path, corpus: Path, manifest: dict, hardlink: bool,  # type: ignore[type-arg]
                  paths: list[Path]) -> IngestRun:
    """A fresh data dir, the corpus's snapshots in the catalog, then the timed ingests."""
    settings = Settings(data_dir=data)
    initialize(settings)
    parts = open_storage(settings)
    ids = add_snapshots(parts, manifest)
    os.sync()  # each mode starts with nothing of the other's left to write back
    warm(paths)
    started = time.perf_counter()
    small = ingest_files(parts.catalog, parts.primary, parts.views, work=parts.work,
                         items=items_for(corpus, manifest, ids, large=False), hardlink=hardlink)
    small_s = time.perf_counter() - started
    warm([p for p in paths if p.stat().st_size >= LARGE])
    started = time.perf_counter()
    big = ingest_files(parts.catalog, parts.primary, parts.views, work=parts.work,
                       items=items_for(corpus, manifest, ids, large=True), hardlink=hardlink)
    large_s = time.perf_counter() - started
    assert not small.errors and not big.errors, (small.errors + big.errors)[:3]
    return IngestRun(parts, small, small_s, big, large_s)


def s3_case(data: Path, corpus: Path, manifest: dict, paths: list[Path],  # type: ignore[type-arg]
            *, local: IngestRun) -> list[str]:
    """The small files ingested into an S3 primary, twice (the second time into other
    snapshots: every file a duplicate); the report lines."""
    with bench_bucket("cas-bench") as (endpoint, bucket):
        data.mkdir(parents=True)
        (data / "archive.toml").write_text(
            f'[[stores]]\nname = "primary"\nkind = "s3"\nbucket = "{bucket}"\n'
            f'prefix = "archive"\nendpoint_url = "{endpoint}"\ncodec = "raw"\n')
        settings = load_settings(data, environ={})
        initialize(settings)
        where = "S3_ENDPOINT_URL" if os.environ.get("S3_ENDPOINT_URL") else "moto_server"
        lines = [f"S3 primary ({where}, raw, no views, {REMOTE_THREADS} upload threads):"]
        with open_storage(settings) as parts:
            store = parts.primary.store
            for label in ("first ingest", "again (dups)"):
                ids = add_snapshots(parts, manifest, created_by=label.split()[0])
                warm(paths)
                store.take_request_counts()  # type: ignore[attr-defined]
                started = time.perf_counter()
                report = ingest_files(parts.catalog, parts.primary, parts.views, work=parts.work,
                                      items=items_for(corpus, manifest, ids, large=False))
                took = time.perf_counter() - started
                sent = store.take_request_counts()  # type: ignore[attr-defined]
                assert not report.errors, report.errors[:3]
                total = sum(sent.values())
                rate = report.files / took
                lines.append(
                    f"small-file ingest  s3 {label:<15} {report.files:>7,} files {took:7.2f} s "
                    f"{rate:8,.0f} files/s  (local copy {local.small.files / local.small_s:,.0f} "
                    f"files/s: s3/local {rate / (local.small.files / local.small_s):.2f})")
                per_blob = f"{total / report.new_blobs:.2f}" if report.new_blobs else "-"
                lines.append(
                    f"  requests         {', '.join(f'{k} {v:,}' for k, v in sorted(sent.items()))}"
                    f"; {report.new_blobs:,} blobs stored -> {per_blob} per blob stored, "
                    f"{total / report.files:.2f} per file")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
