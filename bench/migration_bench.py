"""Lazy adoption of legacy collections (seed 001), measured three ways.

1. `import_orphans` on 2,000 and on 20,000 generated legacy snapshots (~10 files each, every
   index.json fingerprint): folders/s and peak RSS, each import in a fresh subprocess, cases
   alternated run by run, medians. Peak RSS is /proc VmHWM (reset by exec); ru_maxrss is
   printed too but carries over the bench process it was forked from. Verdict: flat, i.e.
   VmHWM(20k)/VmHWM(2k) <= 1.25 and folders/s(20k)/folders/s(2k) >= 0.75.
2. End-to-end lazy migration into the CAS (the sensor's loop: `next_migration_batches` then
   `migrate_batch`, every view enabled) on a fresh copy of the 2,000-snapshot collection:
   snapshots/s, target >= 300/s on the median of 3 runs. Alternated with it, for the
   breakdown: the same with no views. Machine-wide user and system CPU are printed beside
   each run (the file workers are other processes). Copies are deleted after the last run
   and the first waits until the disk has settled from earlier deletes (bench/settle.py).
3. The sensor's tick (`next_migration_batches`, the default batches) on a catalog of 1,000,000
   snapshot rows (10% behind), on PostgreSQL (DATABASE_URL, else a private server) and on
   SQLite: worst and median of 20 ticks walking the cursor, target <= 1 s.

Generated collections are cached under bench/.work/.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from settle import remove_tree, settle  # noqa: E402

WORK_DIR = BENCH_DIR / ".work"
RELEASES = ("0.4", "0.5", "0.6", "0.7", "0.8", "0.8.2", "0.8.3", "0.9")
TARGET_SNAPSHOTS_PER_S, TARGET_TICK_S, MAX_RSS_RATIO, MIN_RATE_RATIO = 300.0, 1.0, 1.25, 0.75


@functools.cache
def collection(n: int) -> Path:
    """A cached legacy collection of `n` snapshots (its root holds archive/)."""
    from archive_pipelines.legacy.generate import generate_collection

    root = WORK_DIR / f"migration-legacy-{n}"
    if (root / ".complete").exists():
        print(f"reusing {n:,} legacy snapshots in {root}")
        return root
    remove_tree(root)
    started = time.perf_counter()
    summary = generate_collection(root, n, versions=RELEASES, files_per_snapshot=10, seed=1).summary()
    (root / ".complete").write_text(json.dumps(summary))
    print(f"generated {n:,} legacy snapshots ({summary['files']:,} files) in "
          f"{time.perf_counter() - started:.0f} s")
    return root


def fresh_data_dir(archive: Path | None = None) -> Path:
    """An initialized data dir; with `archive`, its archive/ is a symlink to that (read as is)."""
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import Settings

    data = Path(tempfile.mkdtemp(prefix="mig-", dir=WORK_DIR))
    if archive is not None:
        (data / "archive").symlink_to(archive, target_is_directory=True)
    initialize(Settings(data_dir=data))
    return data


def child_import(data: Path) -> None:
    """Subprocess body: one import, then its figures as JSON on stdout."""
    from archive_pipelines.migration import import_orphans
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage import Storage

    storage = Storage.open(Settings(data_dir=data))
    started = time.perf_counter()
    report = import_orphans(storage, read_archivebox_index=False)
    seconds = time.perf_counter() - started
    hwm = next((int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmHWM:")), 0)
    print(json.dumps({"folders": report.processed, "imported": report.imported, "seconds": seconds,
                      "errors": report.error_count + report.index_rewritten, "vmhwm_kb": hwm,
                      "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def bench_import(sizes: list[int], runs: int) -> bool:
    roots = {n: collection(n) for n in sizes}
    samples: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
    for _run in range(runs):
        for n in sizes:
            data = fresh_data_dir(roots[n] / "archive")
            os.sync()
            done = subprocess.run([sys.executable, __file__, "--child-import", str(data)],
                                  check=True, capture_output=True, text=True)
            shutil.rmtree(data)
            result = json.loads(done.stdout)
            assert result["imported"] == n and result["errors"] == 0, result
            samples[n].append(result)
    print(f"\n1. import_orphans, each run in a fresh process ({runs} runs per size, medians)")
    print(f"{'snapshots':>10} {'folders/s':>10} {'seconds':>8} {'VmHWM MiB':>10} {'ru_maxrss MiB':>14}")
    med: dict[int, dict[str, float]] = {}
    for n in sizes:
        med[n] = {key: statistics.median(s[key] for s in samples[n])
                  for key in ("seconds", "maxrss_kb", "vmhwm_kb")}
        med[n]["rate"] = n / med[n]["seconds"]
        print(f"{n:>10,} {med[n]['rate']:>10.0f} {med[n]['seconds']:>8.1f} "
              f"{med[n]['vmhwm_kb'] / 1024:>10.1f} {med[n]['maxrss_kb'] / 1024:>14.1f}")
    small, large = sizes
    rss_ratio = med[large]["vmhwm_kb"] / med[small]["vmhwm_kb"]
    rate_ratio = med[large]["rate"] / med[small]["rate"]
    ok = rss_ratio <= MAX_RSS_RATIO and rate_ratio >= MIN_RATE_RATIO
    print(f"VmHWM {large:,}/{small:,} = {rss_ratio:.3f} (<= {MAX_RSS_RATIO}); "
          f"folders/s {large:,}/{small:,} = {rate_ratio:.3f} (>= {MIN_RATE_RATIO})  "
          f"{'PASS' if ok else 'FAIL'}")
    return ok


@dataclass(frozen=True)
class MigrationRun:
    """One timed migration: rate, wall and this process's CPU s; machine-wide user and
    system CPU s over the same time (the file workers are other processes)."""

    rate: float
    wall: float
    cpu: float
    machine_user: float
    machine_sys: float
    failed: int
    data: Path


def migrate_all(n: int, views: tuple[str, ...] | None) -> MigrationRun:
    """Copy the n-snapshot collection, import it, then run the sensor loop.

    The caller deletes the data dirs after the last run (bench/settle.py says why).
    """
    from archive_pipelines.migration import import_orphans, migrate_batch, next_migration_batches
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage import Storage

    data = fresh_data_dir()
    shutil.rmtree(data / "archive")
    shutil.copytree(collection(n) / "archive", data / "archive", symlinks=True)
    settings = Settings(data_dir=data)
    storage = Storage.open(settings, views=views)
    assert import_orphans(storage, read_archivebox_index=False).imported == n
    os.sync()
    batch, per_tick = settings.migration.batch_size, settings.migration.max_runs_per_tick
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    machine_before = machine_cpu()
    cursor, failed = "", 0
    while True:
        batches, cursor = next_migration_batches(storage, cursor=cursor, batch_size=batch,
                                                 max_batches=per_tick)
        for ids in batches:
            failed += migrate_batch(storage, ids).failed
        if not cursor:
            break
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    machine = {k: v - machine_before[k] for k, v in machine_cpu().items()}
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    storage.engine.dispose()
    return MigrationRun(n / wall, wall, cpu, machine["user"] + machine["nice"], machine["system"],
                        failed, data)


def machine_cpu() -> dict[str, float]:
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    tick = os.sysconf("SC_CLK_TCK")
    return {name: int(value) / tick for name, value in zip(names, fields, strict=True)}


def bench_migration(n: int, runs: int) -> bool:
    """`runs` runs of each case, alternated; the verdict is on the median with every view."""
    from archive_pipelines.settings import MigrationSettings

    batch = MigrationSettings().batch_size
    print(f"\n2. end-to-end lazy migration into the CAS, {n:,} snapshots (sensor loop, "
          f"batches of {batch}, the default), {runs} runs per case, alternated")
    cases = (("all four (default)", None), ("none (breakdown)", ()))
    samples: dict[str, list[MigrationRun]] = {label: [] for label, _ in cases}
    settle()  # nothing is deleted between the runs: they all start on a settled disk
    print(f"{'views':>22} {'snapshots/s':>12} {'wall s':>7} {'cpu s':>7} "
          f"{'machine usr s':>14} {'sys s':>6} {'failed':>7}")
    try:
        for _run in range(runs):
            for label, views in cases:
                run = migrate_all(n, views)
                samples[label].append(run)
                print(f"{label:>22} {run.rate:>12.0f} {run.wall:>7.1f} {run.cpu:>7.1f} "
                      f"{run.machine_user:>14.1f} {run.machine_sys:>6.1f} {run.failed:>7}")
    finally:
        for run in (run for taken in samples.values() for run in taken):
            remove_tree(run.data)
    for label, taken in samples.items():
        rates = sorted(run.rate for run in taken)
        print(f"{label:>22} median {statistics.median(rates):.0f} snapshots/s "
              f"(runs: {', '.join(f'{rate:.0f}' for rate in rates)})")
    default = samples[cases[0][0]]
    rate = statistics.median(run.rate for run in default)
    ok = all(run.failed == 0 for run in default) and rate >= TARGET_SNAPSHOTS_PER_S
    print(f"snapshots/s = {rate:.0f}, the median (target >= {TARGET_SNAPSHOTS_PER_S:.0f})  "
          f"{'PASS' if ok else 'FAIL'}")
    return ok


def fill_catalog(url: str, rows: int) -> None:
    """`rows` snapshots in one INSERT ... SELECT; every 10th is behind (0.4, 0.6 or organized)."""
    from sqlalchemy import text

    from archive_pipelines.catalog import make_engine, upgrade_catalog

    engine = make_engine(url)
    upgrade_catalog(engine)
    label = "CASE i % 30 WHEN 0 THEN '0.4' WHEN 10 THEN '0.6' WHEN 20 THEN 'organized' ELSE 'cas' END"
    columns = "id, url, timestamp, title, created_at, created_by, crawl_id, fs_version, updated_at"
    if engine.dialect.name == "postgresql":
        sql = (f"INSERT INTO snapshot ({columns}) SELECT md5(i::text)::uuid::text, "
               f"'https://example.com/' || i, (1500000000 + i)::text, NULL, now(), 'bench', NULL, "
               f"{label}, now() FROM generate_series(1, {rows}) AS i")
    else:
        sql = (f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows}) "
               f"INSERT INTO snapshot ({columns}) SELECT lower(hex(randomblob(16))), "
               f"'https://example.com/' || i, CAST(1500000000 + i AS TEXT), NULL, "
               f"'2024-01-01 00:00:00.000000', 'bench', NULL, {label}, '2024-01-01 00:00:00.000000' FROM n")
    with engine.begin() as conn:
        conn.execute(text(sql))
    with engine.begin() as conn:
        conn.execute(text("ANALYZE" if engine.dialect.name == "sqlite" else "ANALYZE snapshot"))
    engine.dispose()


def time_ticks(url: str, data: Path) -> list[float]:
    from archive_pipelines.migration import next_migration_batches
    from archive_pipelines.settings import CatalogSettings, MigrationSettings, Settings
    from archive_pipelines.storage import Storage

    storage = Storage.open(Settings(data_dir=data, catalog=CatalogSettings(url=url)))
    defaults = MigrationSettings()
    ticks, cursor = [], ""
    for _tick in range(20):
        started = time.perf_counter()
        batches, cursor = next_migration_batches(storage, cursor=cursor, batch_size=defaults.batch_size,
                                                 max_batches=defaults.max_runs_per_tick)
        ticks.append(time.perf_counter() - started)
        assert batches, "no snapshots behind: the fill went wrong"
    storage.engine.dispose()
    return ticks


def bench_sensor(rows: int) -> bool:
    from archive_pipelines.services import LocalPostgres
    from archive_pipelines.services.postgres import create_database
    from archive_pipelines.settings import MigrationSettings

    defaults = MigrationSettings()
    print(f"\n3. sensor tick (next_migration_batches, {defaults.max_runs_per_tick} x "
          f"{defaults.batch_size} ids, the defaults) with {rows:,} snapshot rows")
    print(f"{'catalog':>12} {'fill s':>7} {'worst tick s':>13} {'median tick s':>14}")
    server = None
    ok = True
    data = fresh_data_dir()
    try:
        pg_url = os.environ.get("DATABASE_URL")
        if not pg_url:
            server = LocalPostgres().start()
            pg_url = server.url
        cases = (("PostgreSQL", create_database(pg_url)), ("SQLite", f"sqlite:///{data}/ticks.sqlite3"))
        for label, url in cases:
            started = time.perf_counter()
            fill_catalog(url, rows)
            fill = time.perf_counter() - started
            ticks = time_ticks(url, data)
            ok = ok and max(ticks) <= TARGET_TICK_S
            print(f"{label:>12} {fill:>7.1f} {max(ticks):>13.4f} {statistics.median(ticks):>14.4f}")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(data)
    print(f"worst tick <= {TARGET_TICK_S:.0f} s on both  {'PASS' if ok else 'FAIL'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--snapshots", type=int, default=20_000, help="large import case (20000)")
    parser.add_argument("--small", type=int, default=2_000,
                        help="small import case, and the collection migrated end to end (2000)")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs per import size and per migration case; medians (3)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="catalog rows for the tick (1000000)")
    parser.add_argument("--only", choices=("import", "migrate", "sensor"), action="append")
    parser.add_argument("--child-import", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_import:
        child_import(args.child_import)
        return 0
    WORK_DIR.mkdir(exist_ok=True)
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} before")
    only = set(args.only or ("import", "migrate", "sensor"))
    verdicts = []
    if "import" in only:
        verdicts.append(bench_import([args.small, args.snapshots], args.runs))
    if "migrate" in only:
        verdicts.append(bench_migration(args.small, args.runs))
    if "sensor" in only:
        verdicts.append(bench_sensor(args.rows))
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())} after")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
