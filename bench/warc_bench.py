"""WARC out (issue 28) and, later, in (issue 29): the export beside warcio's own read loop.

1. `export`: captures_bench's generated crawl (default 50,000 pages: sub-requests, redirects,
   failed fetches, 4xx/5xx, bodies of 2-60 KB with ~30% duplicate references; cached under
   bench/.work/) ingested once with `ingest_crawl` into a data dir of its own with a SQLite
   catalog (cached under bench/.work/warc/, keyed by the crawl's shape; its blob objects are
   hard links to the crawl's). Each run exports the whole archive with `export_file` twice,
   deduplicated and `--self-contained` (gzip level 6, the default), then reads each file
   with warcio's own read loop (`ArchiveIterator` over the file, every record's
   `content_stream()` read to its end), and again with `check_digests=True` (a second
   reference, not the verdict). The cases alternate run by run (reversed every other run).
   Per case: seconds, MB/s (WARC bytes written or read; and payload bytes written), records/s,
   the export's digest time (sha1 block digests + the sha256 check of every body, counted by
   the exporter) and its share; every export checked (no skipped capture, every capture of
   the catalog exported, the read loop counting the export's records).
   The verdict, on the medians, per file: export MB/s / read-loop MB/s and export records/s /
   read-loop records/s, both >= 0.5 (PASS), and the corpus holding >= 50,000 records. Then the
   deduplicated file's size against the self-contained one's, and once, for choosing the
   default, the deduplicated export at gzip levels 1, 6 and 9 (seconds and bytes; no verdict).
   `--profile` adds one untimed deduplicated export under cProfile: where the time goes.
   The bodies are random bytes: they do not compress, unlike real HTML, so the sizes are
   the dedup's alone and gzip runs over incompressible data.
2. `import`: issue 29's WARC import will be measured here (reading the files part 1 writes).

`--only export|import` (repeatable) picks parts; the default runs all of them. `--keep` keeps
the exported files (bench/.work/warc/out/); they are deleted at the end otherwise.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from captures_bench import WORK_DIR, Crawl, CrawlShape, generate_crawl, load, machine_cpu  # noqa: E402
from settle import settle  # noqa: E402

WARC_WORK = WORK_DIR / "warc"
OUT_DIR = WARC_WORK / "out"
PARTS = ("export", "import")
TARGET_RATIO = 0.5  # export >= 0.5x warcio's read loop over the same file
MIN_RECORDS = 50_000  # the corpus
INGEST_VERSION = 1  # bump when the ingested data dir must be rebuilt
GZIP_LEVELS = (1, 6, 9)
READ_CHUNK = 1 << 16
MB = 1e6


@dataclass(frozen=True)
class Ingested:
    """The generated crawl ingested into a data dir of its own (SQLite catalog)."""

    crawl: Crawl
    data: Path
    info: dict[str, Any]


@dataclass(frozen=True)
class Timed:
    """One measured case: what it did and what it took."""

    case: str
    seconds: float
    cpu: float  # this process
    machine: float  # machine-wide CPU seconds over the same time
    records: int
    file_bytes: int  # the WARC file's bytes (written or read)
    payload_bytes: int = 0  # export: body bytes written in full
    digest_seconds: float = 0.0  # export: hashing time, by the exporter

    @property
    def mb_per_s(self) -> float:
        return self.file_bytes / MB / self.seconds

    @property
    def payload_mb_per_s(self) -> float:
        return self.payload_bytes / MB / self.seconds

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds


def timed(case: str, work: Callable[[], tuple[int, int, int, float]]) -> Timed:
    """Run `work` (returning records, file bytes, payload bytes, digest seconds), timed."""
    before, machine = resource.getrusage(resource.RUSAGE_SELF), machine_cpu()
    started = time.perf_counter()
    records, file_bytes, payload_bytes, digest_seconds = work()
    seconds = time.perf_counter() - started
    after, machine = resource.getrusage(resource.RUSAGE_SELF), machine_cpu() - machine
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Timed(case, seconds, cpu, machine, records, file_bytes, payload_bytes, digest_seconds)


# --------------------------------------------------------------------------- the corpus


def _link_or_copy(source: str, target: str) -> None:
    """Blob objects are immutable: a hard link (a copy across file systems); the rest copied."""
    if f"{os.sep}cas{os.sep}sha256{os.sep}" in source:
        try:
            os.link(source, target)
            return
        except OSError:
            pass
    shutil.copy2(source, target)


def ingested_corpus(shape: CrawlShape) -> Ingested:
    """The cached ingested data dir of `shape`'s crawl (made when missing): the crawl's data
    dir without its catalog, the blob objects hard-linked, then `ingest_crawl` into a fresh
    SQLite catalog, checked against the crawl's counts."""
    from archive_pipelines.captures.segment_ingest import CapturePrimary, ingest_crawl
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage.assembly import open_storage

    crawl = generate_crawl(shape)
    root = WARC_WORK / f"{shape.key()}-i{INGEST_VERSION}"
    data, stamp = root / "data", root / "complete.json"
    if stamp.exists():
        info = json.loads(stamp.read_text())
        print(f"reusing the ingested data dir {data} (ingested in {info['seconds']:.0f} s)")
        return Ingested(crawl, data, info)
    shutil.rmtree(root, ignore_errors=True)  # a partial one: a few files at most are new
    root.mkdir(parents=True)
    started = time.perf_counter()
    shutil.copytree(crawl.data, data, symlinks=True, copy_function=_link_or_copy,
                    ignore=shutil.ignore_patterns("catalog.sqlite3*"))
    settings = Settings(data_dir=data)
    initialize(settings)
    parts = open_storage(settings)
    try:
        primary = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm,
                                 parts.views.crawl)
        report = ingest_crawl(parts.catalog, primary, data)
    finally:
        parts.close()
        parts.catalog.engine.dispose()
    problems = [f"{name} {report.total(name):,} (expected {want:,})"
                for name, want in (("pages", crawl.pages), ("captures", crawl.captures),
                                   ("rejected", 0), ("missing_bodies", 0))
                if report.total(name) != want]
    if report.failed or len(report.ingested) != len(crawl.segments):
        problems.append(f"{len(report.ingested)} of {len(crawl.segments)} segments ingested")
    if problems:
        raise SystemExit(f"error: the ingest into {data} is wrong: " + "; ".join(problems))
    info = {"seconds": time.perf_counter() - started, "pages": crawl.pages,
            "captures": crawl.captures}
    stamp.write_text(json.dumps(info))
    print(f"ingested the crawl into {data} (SQLite catalog) in {info['seconds']:.0f} s")
    return Ingested(crawl, data, info)


# --------------------------------------------------------------------------- 1. export


def export_once(corpus: Ingested, path: Path, *, self_contained: bool,
                gzip_level: int = 6) -> Timed:
    """One `export_file` of the whole archive into `path`, timed (the catalog opened before,
    untimed) and checked: every capture exported, none skipped."""
    from archive_pipelines.catalog import CaptureScope
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage.assembly import open_storage
    from archive_pipelines.warc.exporter import ExportReport, export_file
    from archive_pipelines.warc.warc_info import WarcInfo

    parts = open_storage(Settings(data_dir=corpus.data))
    reports: list[ExportReport] = []

    def work() -> tuple[int, int, int, float]:
        report = export_file(path, catalog=parts.catalog, store=parts.primary.store,
                             data_dir=corpus.data, scope=CaptureScope(),
                             info=WarcInfo(operator="warc_bench", self_contained=self_contained),
                             gzip_level=gzip_level)
        reports.append(report)
        return report.records, report.warc_bytes, report.payload_bytes, report.digest_seconds

    try:
        run = timed("self-contained" if self_contained else "dedup", work)
    finally:
        parts.close()
        parts.catalog.engine.dispose()
    (report,) = reports
    wrong = []
    if report.skipped or report.problems:
        wrong.append(f"{report.skipped} captures skipped: {report.problems[:3]}")
    if report.captures != corpus.info["captures"]:
        wrong.append(f"{report.captures:,} captures exported, the catalog holds "
                     f"{corpus.info['captures']:,}")
    if report.warc_bytes != path.stat().st_size:
        wrong.append(f"warc_bytes {report.warc_bytes:,} but the file holds {path.stat().st_size:,}")
    if self_contained and report.revisits:
        wrong.append(f"{report.revisits} revisit records in a self-contained export")
    if wrong:
        raise SystemExit(f"error: the export into {path} is wrong: " + "; ".join(wrong))
    return run


def read_loop(path: Path, *, check_digests: bool, expected: int) -> Timed:
    """warcio's own read loop over `path`: every record's content stream read to its end."""
    from warcio.archiveiterator import ArchiveIterator

    def work() -> tuple[int, int, int, float]:
        records = payload = 0
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle, check_digests=check_digests):
                stream = record.content_stream()
                while chunk := stream.read(READ_CHUNK):
                    payload += len(chunk)
                records += 1
        return records, path.stat().st_size, payload, 0.0

    run = timed("read+digests" if check_digests else "read", work)
    if run.records != expected:
        raise SystemExit(f"error: warcio read {run.records:,} records from {path}, the export "
                         f"wrote {expected:,}")
    return run


def _row(number: int | str, file: str, run: Timed) -> str:
    digest = (f"{run.digest_seconds:>8.1f} {run.digest_seconds / run.seconds:>8.0%}"
              if run.case in ("dedup", "self-contained") else f"{'':>8} {'':>8}")
    return (f"{number:>4} {file:>15} {run.case if run.case.startswith('read') else 'export':>13} "
            f"{run.seconds:>7.1f} {run.mb_per_s:>8.1f} {run.payload_mb_per_s:>10.1f} "
            f"{run.records_per_s:>10,.0f} {digest} {run.cpu:>6.1f} {run.machine:>8.1f}")


def bench_export(shape: CrawlShape, runs: int, *, profile: bool) -> bool:
    corpus = ingested_corpus(shape)
    crawl = corpus.crawl
    print(f"\n1. export (`export_file` of the whole archive, gzip level 6) beside warcio's own "
          f"read loop over the same file; {runs} runs, alternated")
    print(f"crawl: {crawl.describe()}")
    print(f"ingested: {corpus.info['captures']:,} captures of {corpus.info['pages']:,} pages in "
          f"{corpus.data} (SQLite catalog)")
    print("each run: export deduplicated, export self-contained, then warcio's read loop "
          "(ArchiveIterator, every record's content_stream() read to its end) over each file, "
          "then the same with check_digests=True; the order reversed every other run")
    print("MB/s: WARC file bytes written (export) or read (loop); payload MB/s: body bytes "
          "(export: written in full; loop: content streams read); digest: the exporter's own "
          "count, the sha1 block digest and sha256 check of every body it reads, and its share "
          "of the export (the digests warcio computes for the records it builds itself, "
          "requests, metadata and revisits, are not in it)")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    files = {"dedup": OUT_DIR / "dedup.warc.gz", "self-contained": OUT_DIR / "self-contained.warc.gz"}
    settle()
    print(f"{'run':>4} {'file':>15} {'what':>13} {'wall s':>7} {'MB/s':>8} {'payload MB/s':>10} "
          f"{'records/s':>10} {'digest s':>8} {'digest %':>8} {'cpu s':>6} {'mach cpu':>8}")
    samples: dict[tuple[str, str], list[Timed]] = {}
    for number in range(runs):
        order = list(files) if number % 2 == 0 else list(files)[::-1]
        written: dict[str, Timed] = {}
        for name in order:
            run = written[name] = export_once(corpus, files[name],
                                              self_contained=name == "self-contained")
            samples.setdefault((name, "export"), []).append(run)
            print(_row(number + 1, name, run), flush=True)
        for check in (False, True):
            for name in order:
                run = read_loop(files[name], check_digests=check, expected=written[name].records)
                samples.setdefault((name, run.case), []).append(run)
                print(_row(number + 1, name, run), flush=True)
    ok = verdicts(samples, files)
    gzip_levels(corpus)
    if profile:
        profile_export(corpus)
    return ok


def _median(runs: list[Timed], figure: Callable[[Timed], float]) -> float:
    return statistics.median(figure(run) for run in runs)


def verdicts(samples: dict[tuple[str, str], list[Timed]], files: dict[str, Path]) -> bool:
    """Medians per file and case; the ratios to the read loop, the sizes; PASS or FAIL."""
    print("\nmedians:")
    for (name, case), runs in samples.items():
        print(f"  {name:>15} {case:>13}: {_median(runs, lambda r: r.seconds):6.1f} s, "
              f"{_median(runs, lambda r: r.mb_per_s):7.1f} MB/s, "
              f"{_median(runs, lambda r: r.records_per_s):8,.0f} records/s"
              + (f", digests {_median(runs, lambda r: r.digest_seconds):.1f} s "
                 f"({_median(runs, lambda r: r.digest_seconds / r.seconds):.0%} of the export)"
                 if case == "export" else ""))
    print("(export and loop run over the same file: the MB/s and records/s ratios are both "
          "the ratio of their seconds, and differ only by the medians' rounding)")
    ok = True
    lines = []
    for name in files:
        export, loop = samples[(name, "export")], samples[(name, "read")]
        checked = samples[(name, "read+digests")]
        records = export[0].records
        for label, figure in (("MB/s", lambda r: r.mb_per_s),
                              ("records/s", lambda r: r.records_per_s)):
            ratio = _median(export, figure) / _median(loop, figure)
            reference = _median(export, figure) / _median(checked, figure)
            passed = ratio >= TARGET_RATIO
            ok = ok and passed
            lines.append(f"{'PASS' if passed else 'FAIL'}  {name} export / warcio read loop, "
                         f"{label}: {ratio:.2f} (target >= {TARGET_RATIO}; "
                         f"{_median(export, figure):,.1f} / {_median(loop, figure):,.1f}); "
                         f"beside the loop with check_digests=True: {reference:.2f}")
        per_run = [r.seconds / e.seconds for e, r in zip(export, loop, strict=True)]
        lines.append(f"      {name} per run (export and loop of the same run, for the load's "
                     f"drift): {', '.join(f'{ratio:.2f}' for ratio in per_run)} (context)")
        passed = records >= MIN_RECORDS
        ok = ok and passed
        lines.append(f"{'PASS' if passed else 'FAIL'}  {name} corpus: {records:,} records "
                     f"(target >= {MIN_RECORDS:,})")
    dedup, whole = samples[("dedup", "export")][0], samples[("self-contained", "export")][0]
    print(f"\nsize: deduplicated {dedup.file_bytes:,} bytes ({dedup.payload_bytes:,} payload "
          f"bytes written in full), self-contained {whole.file_bytes:,} bytes "
          f"({whole.payload_bytes:,} payload bytes); deduplicated / self-contained = "
          f"{dedup.file_bytes / whole.file_bytes:.2f} ({whole.file_bytes / dedup.file_bytes:.2f}x "
          f"smaller; the bodies are random bytes, so this is the dedup alone, gzip finds nothing)")
    for line in lines:
        print(line)
    return ok


def gzip_levels(corpus: Ingested) -> None:
    """The deduplicated export once at each gzip level: seconds and bytes (no verdict)."""
    print("\ngzip level sensitivity, deduplicated export, one run per level "
          "(informative, for choosing the default; the bodies are incompressible):")
    print(f"{'level':>6} {'wall s':>7} {'MB/s':>8} {'records/s':>10} {'bytes':>15} "
          f"{'vs level 6':>10}")
    found: dict[int, Timed] = {}
    for level in GZIP_LEVELS:
        path = OUT_DIR / f"dedup-gzip{level}.warc.gz"
        found[level] = export_once(corpus, path, self_contained=False, gzip_level=level)
        path.unlink()
    for level, run in found.items():
        print(f"{level:>6} {run.seconds:>7.1f} {run.mb_per_s:>8.1f} {run.records_per_s:>10,.0f} "
              f"{run.file_bytes:>15,} {run.file_bytes / found[6].file_bytes:>10.3f}")


def profile_export(corpus: Ingested) -> None:
    """One more deduplicated export, untimed, under cProfile: the top of the profile."""
    print("\nprofile of one deduplicated export (cProfile, so slower than the runs above):")
    profiler = cProfile.Profile()
    path = OUT_DIR / "dedup-profile.warc.gz"
    profiler.enable()
    export_once(corpus, path, self_contained=False)
    profiler.disable()
    path.unlink()
    for sort in ("cumulative", "tottime"):
        stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs().sort_stats(sort)
        stats.print_stats(25)


# --------------------------------------------------------------------------- 2. import


def bench_import(shape: CrawlShape, runs: int) -> bool | None:
    """Issue 29 adds the WARC import here: import the files `bench_export` writes (or
    `export_once` writes them, untimed, for `--only import`), beside the read loop too."""
    print("\n2. import")
    print("not measured: the WARC import (issue 29) is not there yet")
    return None


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=50_000,
                        help="pages of the generated crawl, captures_bench's (50000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per case; medians (3)")
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="run only this part (repeatable); default: all of them")
    parser.add_argument("--profile", action="store_true",
                        help="after the runs, one more deduplicated export under cProfile")
    parser.add_argument("--keep", action="store_true",
                        help=f"keep the exported WARC files in {OUT_DIR}")
    args = parser.parse_args(argv)
    WORK_DIR.mkdir(exist_ok=True)
    print(f"{os.cpu_count()} CPUs, load average {load()} before")
    only = set(args.only or PARTS)
    shape = CrawlShape("ingest", pages=args.pages)  # captures_bench's ingest crawl
    verdicts_: list[bool] = []
    try:
        if "export" in only:
            verdicts_.append(bench_export(shape, args.runs, profile=args.profile))
        if "import" in only:
            done = bench_import(shape, args.runs)
            if done is not None:
                verdicts_.append(done)
    finally:
        if args.keep:
            print(f"\nkept the exported files in {OUT_DIR}")
        else:
            shutil.rmtree(OUT_DIR, ignore_errors=True)
    print(f"\nload average {load()} after")
    return 0 if all(verdicts_) else 1


if __name__ == "__main__":
    sys.exit(main())
