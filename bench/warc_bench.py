"""WARC out (issue 28) and in (issue 29): the export and the import beside warcio's own read
loop over the same file.

1. `export`: captures_bench's generated crawl (default 50,000 pages: sub-requests, redirects,
   failed fetches, 4xx/5xx, bodies of 2-60 KB with ~30% duplicate references; cached under
   bench/.work/) ingested once with `ingest_crawl` into a data dir of its own with a SQLite
   catalog (cached under bench/.work/warc/, keyed by the crawl's shape; its blob objects are
   hard links to the crawl's). Each run exports the whole archive with `run_export` twice
   (as `export-warc` does: worker processes per [export] processes), deduplicated
   and `--self-contained` (gzip level 6, the default), then reads each file
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
2. `import` (issue 29): the same corpus's deduplicated export (`export_file`, made once,
   untimed, cached under bench/.work/warc/<corpus>-import-v1/) imported with `run_import`,
   in-process as `import-warc` does it, into a fresh data dir each run (initialized before,
   untimed), beside warcio's read loop over the same file (part 1's `read_loop`), alternated.
   Per case: seconds, MB/s (file bytes), records/s, CPU; every import checked (nothing
   refused, every record read, one capture per response and revisit). The verdict, on the
   medians: import / read loop >= 0.5 in MB/s and in records/s, on >= 50,000 records; the
   per-run ratios for context. Once, for reference: the whole command
   `archive-pipelines --data-dir D import-warc FILE` (a fresh process, into a fresh data dir).
   Then the dedup against earlier crawls: the file imported into a copy of the corpus's own
   data dir (blob objects hard-linked; its store holds every body, the crawl's), and the
   store's growth there and in the first fresh data dir: new blob objects under cas/sha256/
   (walked before and after) beside the import report's new bodies, against the file's
   payload bytes. The import keeps the file itself as one blob (the original the captures
   point into), so a store holding every body grows by the file alone. `--profile` adds one
   import into a fresh data dir under cProfile (top 25 by tottime). The data dirs live in
   bench/.work/warc/import/ and are deleted at the end (`remove_tree`: the next bench settles).

`--only export|import` (repeatable) picks parts; the default runs all of them. `--keep` keeps
the exported files (bench/.work/warc/out/) and the import's data dirs; they are deleted at the
end otherwise.
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
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from captures_bench import (  # noqa: E402
    WORK_DIR,
    Crawl,
    CrawlShape,
    find_cli,
    generate_crawl,
    load,
    machine_cpu,
)
from settle import remove_tree, settle  # noqa: E402

WARC_WORK = WORK_DIR / "warc"
OUT_DIR = WARC_WORK / "out"
IMPORT_DIR = WARC_WORK / "import"  # the import's data dirs, deleted at the end
PARTS = ("export", "import")
TARGET_RATIO = 0.5  # export >= 0.5x warcio's read loop over the same file
MIN_RECORDS = 50_000  # the corpus
INGEST_VERSION = 1  # bump when the ingested data dir must be rebuilt
IMPORT_INPUT_VERSION = 1  # bump when the import's input WARC must be exported again
GZIP_LEVELS = (1, 6, 9)
READ_CHUNK = 1 << 16
MB = 1e6
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


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


def _link_or_copy(source: str, target: str, *,
                  linked: str = f"{os.sep}cas{os.sep}sha256{os.sep}") -> None:
    """Blob objects are immutable: a hard link (a copy across file systems) for a path holding
    `linked`; the rest copied."""
    if linked in source:
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
    """One `run_export` of the whole archive into `path`, timed (the catalog opened before,
    untimed) and checked: every capture exported, none skipped."""
    return export_checked(corpus, path, self_contained=self_contained, gzip_level=gzip_level)[0]


def export_checked(corpus: Ingested, path: Path, *, self_contained: bool,
                   gzip_level: int = 6) -> tuple[Timed, Any]:
    """`export_once`, with the exporter's report."""
    from archive_pipelines.catalog import CaptureScope
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage.assembly import open_storage
    from archive_pipelines.warc.export_run import ExportRequest, run_export
    from archive_pipelines.warc.exporter import ExportReport

    settings = Settings(data_dir=corpus.data)
    parts = open_storage(settings)
    reports: list[ExportReport] = []

    def work() -> tuple[int, int, int, float]:
        # As `export-warc` runs it: worker processes per [export] processes (one per CPU).
        request = ExportRequest(out=path, scope=CaptureScope(), self_contained=self_contained,
                                operator="warc_bench", gzip_level=gzip_level, overwrite=True,
                                processes=settings.export.worker_processes)
        report = run_export(request, catalog=parts.catalog, store=parts.primary.store,
                            data_dir=corpus.data, settings=settings).report
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
    return run, report


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
    print("\n1. export (`run_export` of the whole archive as `export-warc` runs it: [export] "
          "processes, gzip level 6) beside warcio's own "
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


@dataclass(frozen=True)
class ImportInput:
    """The deduplicated WARC the import reads: the corpus's export, made once and cached."""

    path: Path
    records: int
    captures: int  # responses and revisits: the captures an import makes of it
    failed_fetches: int  # metadata records of fetches without a response: no capture
    payload_bytes: int  # body bytes the file holds in full (the rest are revisits)

    @property
    def file_bytes(self) -> int:
        return self.path.stat().st_size


@dataclass(frozen=True)
class Growth:
    """What an import added to a data dir: blob objects (cas/sha256/), aliases, catalog."""

    blobs: int
    blob_bytes: int
    aliases: int  # hard links to the blobs (cas/s/): no bytes of their own
    catalog_bytes: int
    few: tuple[tuple[str, int], ...]  # the new blobs (name, size) when there are at most 5

    def describe_few(self) -> str:
        if not self.few:
            return ""
        return "; new blobs: " + ", ".join(
            f"{name[:12]}… {size:,} bytes{' (the empty body)' if name == EMPTY_SHA256 else ''}"
            for name, size in self.few)


def import_input(corpus: Ingested) -> ImportInput:
    """The corpus's deduplicated export (`export_file`, untimed), cached under
    bench/.work/warc/ beside the corpus (not inside it: the corpus may be another checkout's)."""
    root = WARC_WORK / f"{corpus.data.parent.name}-import-v{IMPORT_INPUT_VERSION}"
    path, stamp = root / "dedup.warc.gz", root / "complete.json"
    if stamp.exists():
        print(f"reusing the deduplicated export {path}")
        info = json.loads(stamp.read_text())
    else:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        run, report = export_checked(corpus, path, self_contained=False)
        info = {"records": run.records, "captures": report.responses + report.revisits,
                "failed_fetches": report.failed_fetches, "payload_bytes": run.payload_bytes,
                "seconds": run.seconds}
        stamp.write_text(json.dumps(info))
        print(f"exported the corpus into {path} (deduplicated, untimed here) in "
              f"{run.seconds:.0f} s")
    return ImportInput(path, info["records"], info["captures"], info["failed_fetches"],
                       info["payload_bytes"])


def _import_target(data: Path) -> tuple[Any, Any]:
    """The storage parts of `data` and the import target built from them, as the CLI does."""
    from archive_pipelines.captures.segment_ingest import CapturePrimary
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage.assembly import open_storage
    from archive_pipelines.warc.importer import ImportTarget

    settings = Settings(data_dir=data)
    parts = open_storage(settings)
    primary = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm,
                             parts.views.crawl)
    return parts, ImportTarget(parts.catalog, primary, data, settings=settings)


def fresh_data_dir(data: Path) -> None:
    """An empty, initialized data dir at `data` (SQLite catalog)."""
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import Settings

    shutil.rmtree(data, ignore_errors=True)  # only a leftover of an interrupted run
    initialize(Settings(data_dir=data))


def _link_all_blobs(source: str, target: str) -> None:
    """The corpus's copy: blob objects and their aliases (cas/) hard-linked, the rest copied."""
    _link_or_copy(source, target, linked=f"{os.sep}cas{os.sep}")


def earlier_crawl_data_dir(corpus: Ingested, data: Path) -> None:
    """A copy of the corpus's own data dir (its store holds every body: the crawl's)."""
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import Settings

    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(corpus.data, data, symlinks=True, copy_function=_link_all_blobs)
    initialize(Settings(data_dir=data))


def store_files(data: Path) -> tuple[dict[str, int], set[str], int]:
    """The store's blob objects (path -> size), its alias names, the catalog's bytes."""
    blobs: dict[str, int] = {}
    aliases: set[str] = set()
    for top, found in ((data / "cas" / "sha256", blobs), (data / "cas" / "s", aliases)):
        for folder, _dirs, names in os.walk(top):
            for name in names:
                path = os.path.join(folder, name)
                if isinstance(found, dict):
                    found[path] = os.lstat(path).st_size
                else:
                    found.add(path)
    catalog = sum(p.stat().st_size for p in data.glob("catalog.sqlite3*"))
    return blobs, aliases, catalog


def growth(before: tuple[dict[str, int], set[str], int],
           after: tuple[dict[str, int], set[str], int]) -> Growth:
    new = [(path, size) for path, size in after[0].items() if path not in before[0]]
    few = tuple((os.path.basename(path), size) for path, size in new) if len(new) <= 5 else ()
    return Growth(len(new), sum(size for _path, size in new), len(after[1] - before[1]),
                  after[2] - before[2], few)


def import_once(source: ImportInput, data: Path, *,
                profiler: cProfile.Profile | None = None) -> tuple[Timed, Any]:
    """`run_import` of the input into the data dir `data` (its parts opened before, untimed),
    timed and checked: every record read, nothing refused, every capture imported."""
    from archive_pipelines.warc.import_run import run_import

    parts, target = _import_target(data)
    reports: list[Any] = []

    def work() -> tuple[int, int, int, float]:
        if profiler is not None:
            profiler.enable()
        report = run_import([source.path.absolute()], target=target)
        if profiler is not None:
            profiler.disable()
        reports.append(report)
        return report.records, source.file_bytes, source.payload_bytes, 0.0

    try:
        run = timed("import", work)
    finally:
        parts.close()
        parts.catalog.engine.dispose()
    (report,) = reports
    wrong = []
    if report.failed or report.problems:
        wrong.append(f"{report.refused} refused, {report.broken_spans} broken spans, "
                     f"{report.unresolved_revisits} unresolved revisits: {report.problems[:3]}")
    if report.files != 1 or report.files_done_before:
        wrong.append(f"{report.files} files, {report.files_done_before} imported before")
    if report.records != source.records:
        wrong.append(f"{report.records:,} records read, the export wrote {source.records:,}")
    if report.captures != source.captures:
        wrong.append(f"{report.captures:,} captures imported, the export wrote "
                     f"{source.captures:,} responses and revisits")
    if wrong:
        raise SystemExit(f"error: the import of {source.path} into {data} is wrong: "
                         + "; ".join(wrong))
    return run, report


def _import_row(number: int | str, run: Timed) -> str:
    return (f"{number:>4} {run.case:>10} {run.seconds:>7.1f} {run.mb_per_s:>8.1f} "
            f"{run.payload_mb_per_s:>12.1f} {run.records_per_s:>10,.0f} {run.cpu:>6.1f} "
            f"{run.machine:>8.1f}")


def bench_import(shape: CrawlShape, runs: int, *, profile: bool, keep: bool) -> bool:
    corpus = ingested_corpus(shape)
    source = import_input(corpus)
    print(f"\n2. import (`run_import` of the deduplicated export into a fresh data dir) beside "
          f"warcio's own read loop over the same file; {runs} runs, alternated")
    print(f"file: {source.path} ({source.file_bytes:,} bytes, {source.records:,} records, "
          f"{source.captures:,} responses and revisits, {source.payload_bytes:,} payload bytes "
          f"in full; {source.failed_fetches:,} failed fetches as metadata records, which the "
          f"import keeps in the stored file only), the export of {corpus.info['captures']:,} captures of "
          f"{corpus.info['pages']:,} pages (captures_bench's crawl, {corpus.crawl.describe()})")
    print("each run: the import into a fresh data dir (initialized before, untimed; only the "
          "run_import call timed, in-process: the file stored as one blob, every body stored "
          "once, the catalog rows), and warcio's read loop (ArchiveIterator, every record's "
          "content_stream() read to its end); the order reversed every other run")
    print("MB/s: WARC file bytes read; payload MB/s: the body bytes the file holds in full "
          "(import) or the content streams read (loop)")
    IMPORT_DIR.mkdir(parents=True, exist_ok=True)
    try:
        return _measure_import(corpus, source, runs, profile=profile)
    finally:
        if keep:
            print(f"\nkept the import data dirs in {IMPORT_DIR}")
        else:
            remove_tree(IMPORT_DIR)


def _measure_import(corpus: Ingested, source: ImportInput, runs: int, *, profile: bool) -> bool:
    settle()
    print(f"{'run':>4} {'what':>10} {'wall s':>7} {'MB/s':>8} {'payload MB/s':>12} "
          f"{'records/s':>10} {'cpu s':>6} {'mach cpu':>8}")
    imports: list[Timed] = []
    loops: list[Timed] = []
    fresh: tuple[Growth, Any] | None = None
    for number in range(runs):
        data = IMPORT_DIR / f"fresh-{number + 1}"
        fresh_data_dir(data)
        before = store_files(data)
        for case in ("import", "read") if number % 2 == 0 else ("read", "import"):
            if case == "import":
                run, report = import_once(source, data)
                imports.append(run)
            else:
                run = read_loop(source.path, check_digests=False, expected=source.records)
                loops.append(run)
            print(_import_row(number + 1, run), flush=True)
        if fresh is None:
            fresh = (growth(before, store_files(data)), report)
    ok = import_verdicts(imports, loops, records=source.records)
    print(cli_reference(source, imports))
    assert fresh is not None
    ok = store_growth(corpus, source, fresh) and ok
    if profile:
        profile_import(source)
    return ok


def import_verdicts(imports: list[Timed], loops: list[Timed], *, records: int) -> bool:
    """The medians, import / read loop in MB/s and records/s (PASS at >= 0.5), per run too."""
    print("\nmedians:")
    for runs in (imports, loops):
        print(f"  {runs[0].case:>6}: {_median(runs, lambda r: r.seconds):6.1f} s, "
              f"{_median(runs, lambda r: r.mb_per_s):7.1f} MB/s, "
              f"{_median(runs, lambda r: r.records_per_s):8,.0f} records/s, "
              f"cpu {_median(runs, lambda r: r.cpu):.1f} s")
    ok = True
    for label, figure in (("MB/s", lambda r: r.mb_per_s),
                          ("records/s", lambda r: r.records_per_s)):
        ratio = _median(imports, figure) / _median(loops, figure)
        passed = ratio >= TARGET_RATIO
        ok = ok and passed
        print(f"{'PASS' if passed else 'FAIL'}  import / warcio read loop, {label}: {ratio:.2f} "
              f"(target >= {TARGET_RATIO}; {_median(imports, figure):,.1f} / "
              f"{_median(loops, figure):,.1f})")
    per_run = [loop.seconds / run.seconds for run, loop in zip(imports, loops, strict=True)]
    print(f"      per run (import and loop of the same run, for the load's drift): "
          f"{', '.join(f'{ratio:.2f}' for ratio in per_run)} (context; the same file, so the "
          f"MB/s and records/s ratios of a run are one)")
    passed = records >= MIN_RECORDS
    print(f"{'PASS' if passed else 'FAIL'}  corpus: {records:,} records (target >= "
          f"{MIN_RECORDS:,})")
    return ok and passed


def cli_reference(source: ImportInput, imports: list[Timed]) -> str:
    """The whole command once, `archive-pipelines --data-dir D import-warc FILE`, into a
    fresh data dir (initialized before, untimed): a reference line, no verdict."""
    data = IMPORT_DIR / "cli"
    fresh_data_dir(data)
    command = [str(find_cli()), "--data-dir", str(data), "import-warc", str(source.path)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(BENCH_DIR.parent), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"error: `{' '.join(command)}` exited {done.returncode}:\n"
                         f"{done.stdout}{done.stderr[-2000:]}")
    said = "; ".join(line.strip() for line in done.stdout.splitlines() if line.strip())
    return (f"\nreference, once: the whole command `archive-pipelines --data-dir D import-warc "
            f"FILE` (a fresh process, start-up and progress bar included; data dir initialized "
            f"before, untimed): {seconds:.1f} s, {source.file_bytes / MB / seconds:.1f} MB/s, "
            f"{source.records / seconds:,.0f} records/s; in-process median "
            f"{_median(imports, lambda r: r.seconds):.1f} s. It said: {said}")


def store_growth(corpus: Ingested, source: ImportInput, fresh: tuple[Growth, Any]) -> bool:
    """The store's growth importing the file into a copy of the corpus's own data dir (every
    body there already: dedup against an earlier crawl), beside the fresh data dir's."""
    data = IMPORT_DIR / "earlier-crawl"
    earlier_crawl_data_dir(corpus, data)
    before = store_files(data)
    run, report = import_once(source, data)
    earlier = (growth(before, store_files(data)), report)
    print(f"\nthe store's growth importing the file ({source.file_bytes:,} bytes, "
          f"{source.payload_bytes:,} payload bytes in full): new blob objects under cas/sha256/ "
          f"(walked before and after) beside the import report's new bodies; the file itself is "
          f"kept as one blob too (the original, which the captures point into)")
    print("  aliases (cas/s/) are hard links to the blobs: no bytes of their own")
    ok = True
    for name, (grown, got) in (("fresh data dir", fresh),
                               ("copy of the crawl's data dir", earlier)):
        expected = got.new_body_bytes + got.file_bytes
        agrees = grown.blob_bytes == expected and grown.blobs == got.new_bodies + 1
        ok = ok and agrees
        print(f"  {name:>28}: +{grown.blobs:,} blobs, +{grown.blob_bytes:,} bytes "
              f"({grown.blob_bytes / source.payload_bytes:.3f}x the payload bytes, "
              f"{grown.blob_bytes / source.file_bytes:.3f}x the file); report: "
              f"{got.new_bodies:,} new bodies, {got.new_body_bytes:,} bytes "
              f"({got.new_body_bytes / source.payload_bytes:.3f}x the payload), + the file "
              f"{got.file_bytes:,} bytes; walk {'=' if agrees else '!='} report; "
              f"+{grown.aliases:,} aliases, catalog +{grown.catalog_bytes:,} bytes"
              f"{grown.describe_few()}")
    grown, got = earlier
    print(f"  dedup against the earlier crawl: {got.new_body_bytes:,} new body bytes "
          f"(expected ~0: the crawl stored every body), the store grew by the file alone "
          f"({grown.blob_bytes - got.file_bytes:,} bytes besides it); that import took "
          f"{run.seconds:.1f} s, {run.mb_per_s:.1f} MB/s, {run.records_per_s:,.0f} records/s "
          f"(context)")
    if not ok:
        print("FAIL  the store's walk and the import report disagree (above)")
    return ok


def profile_import(source: ImportInput) -> None:
    """One more import into a fresh data dir under cProfile: the top of the profile."""
    print("\nprofile of one import into a fresh data dir (cProfile, so slower than the runs "
          "above), top 25 by tottime:")
    data = IMPORT_DIR / "profile"
    fresh_data_dir(data)
    profiler = cProfile.Profile()
    import_once(source, data, profiler=profiler)
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs().sort_stats("tottime")
    stats.print_stats(25)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=50_000,
                        help="pages of the generated crawl, captures_bench's (50000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per case; medians (3)")
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="run only this part (repeatable); default: all of them")
    parser.add_argument("--profile", action="store_true",
                        help="after the runs, one more deduplicated export and one more "
                        "import under cProfile")
    parser.add_argument("--keep", action="store_true",
                        help=f"keep the exported WARC files in {OUT_DIR} and the import's "
                        f"data dirs in {IMPORT_DIR}")
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
            verdicts_.append(bench_import(shape, args.runs, profile=args.profile, keep=args.keep))
    finally:
        if args.keep:
            print(f"\nkept the exported files in {OUT_DIR}")
        else:
            shutil.rmtree(OUT_DIR, ignore_errors=True)
    print(f"\nload average {load()} after")
    return 0 if all(verdicts_) else 1


if __name__ == "__main__":
    sys.exit(main())
