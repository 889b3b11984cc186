"""Lazy adoption of legacy collections (seed 001; issues 6 and 14), measured four ways.

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
4. `realistic` (issue 14): adoption of a realistic ArchiveBox 0.7 collection (1,000 snapshots
   x ~50 files, `archive_testkit.archivebox` Aged07, index.sqlite3 included) end to end as a user
   runs it: `archive-pipelines --data-dir D init` (not timed), then the timed
   `archive-pipelines --data-dir D update --import-orphans --migrate-fs`, on a fresh
   `cp -a` of the collection (not timed). Beside it in the same rounds: `restic backup` of
   the collection into a fresh local repository (`restic init` not timed) and `cp -a` of it
   to a scratch dir; the three alternate (A B C, B C A, C A B), medians of `--runs` rounds.
   After each adoption (not timed): `update` exited 0 with every snapshot migrated,
   `verify` says healthy, and every file of archive/ is still at its original path with its
   size. Target: files/s = the collection's archive/ files / update wall >= 3,000 (the CAS
   ingest rate) -- the exit status; goal: adoption / restic <= 1.0 (printed PASS/FAIL,
   not in the exit status). CLI subprocesses run without DATABASE_URL (SQLite catalog).

`--only import|migrate|sensor|realistic` (repeatable) picks parts; the default runs all four.
Generated collections are cached under bench/.work/.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
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
TARGET_FILES_PER_S, GOAL_RESTIC_RATIO = 3_000.0, 1.0
PARTS = ("import", "migrate", "sensor", "realistic")
SCRUBBED_ENV = ("ARCHIVE_DATA_DIR", "DATABASE_URL", "REDIS_URL", "S3_ENDPOINT_URL")


@functools.cache
def collection(n: int) -> Path:
    """A cached legacy collection of `n` snapshots (its root holds archive/)."""
    from archive_testkit.archivebox import ReleaseMix, generate_collection

    root = WORK_DIR / f"migration-legacy-{n}"
    if (root / ".complete").exists():
        print(f"reusing {n:,} legacy snapshots in {root}")
        return root
    remove_tree(root)
    started = time.perf_counter()
    summary = generate_collection(root, ReleaseMix(releases=RELEASES, files_per_snapshot=10),
                                  snapshots=n, seed=1).summary()
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
    from archive_pipelines.storage.assembly import open_storage

    parts = open_storage(Settings(data_dir=data))
    started = time.perf_counter()
    report = import_orphans(parts.catalog, parts.layout, read_archivebox_index=False)
    seconds = time.perf_counter() - started
    hwm = next((int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmHWM:")), 0)
    print(json.dumps({"folders": report.processed, "imported": report.imported, "seconds": seconds,
                      "errors": report.error_count, "vmhwm_kb": hwm,
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
    from archive_pipelines.storage.assembly import open_storage

    data = fresh_data_dir()
    shutil.rmtree(data / "archive")
    shutil.copytree(collection(n) / "archive", data / "archive", symlinks=True)
    settings = Settings(data_dir=data)
    parts = open_storage(settings, views=views)
    assert import_orphans(parts.catalog, parts.layout, read_archivebox_index=False).imported == n
    os.sync()
    batch, per_tick = settings.migration.batch_size, settings.migration.max_runs_per_tick
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    machine_before = machine_cpu()
    cursor, failed = "", 0
    while True:
        batches, cursor = next_migration_batches(parts.catalog, cursor=cursor, batch_size=batch,
                                                 max_batches=per_tick)
        for ids in batches:
            failed += migrate_batch(parts.catalog, parts.primary, parts.views,
                                    work=parts.work, layout=parts.layout, snapshot_ids=ids).failed
        if not cursor:
            break
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    machine = {k: v - machine_before[k] for k, v in machine_cpu().items()}
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    parts.close()
    parts.catalog.engine.dispose()
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
    from archive_pipelines.storage.assembly import open_storage

    parts = open_storage(Settings(data_dir=data, catalog=CatalogSettings(url=url)))
    defaults = MigrationSettings()
    ticks, cursor = [], ""
    for _tick in range(20):
        started = time.perf_counter()
        batches, cursor = next_migration_batches(parts.catalog,
                                                 cursor=cursor, batch_size=defaults.batch_size,
                                                 max_batches=defaults.max_runs_per_tick)
        ticks.append(time.perf_counter() - started)
        assert batches, "no snapshots behind: the fill went wrong"
    parts.close()
    parts.catalog.engine.dispose()
    return ticks


def bench_sensor(rows: int) -> bool:
    from archive_pipelines.settings import MigrationSettings
    from archive_testkit.servers import LocalPostgres, create_database

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


# --------------------------------------------------------------------------- 4. realistic


@dataclass(frozen=True)
class Collection:
    """A cached ArchiveBox 0.7 collection: its root and what it holds."""

    root: Path
    snapshots: int
    archive_files: int  # regular files under archive/ (what adoption stores)
    files: int  # every regular file of the collection (what restic and cp -a copy)
    bytes: int
    sizes: dict[str, int]  # archive/-relative path -> size, to check original paths after


def tree_files(top: Path) -> dict[str, int]:
    """Every non-directory entry under `top` (symlinks not followed): relative path -> size."""
    found: dict[str, int] = {}
    for folder, dirs, files in os.walk(top):
        base = Path(folder)
        for name in files + [d for d in dirs if (base / d).is_symlink()]:
            path = base / name
            found[str(path.relative_to(top))] = path.lstat().st_size
    return found


@functools.cache
def collection07(n: int) -> Collection:
    """A cached ArchiveBox 0.7 collection of `n` snapshots x ~50 files (seed 1)."""
    from archive_testkit.archivebox import Aged07, generate_collection

    base = WORK_DIR / f"migration-abx07-{n}"
    root, stamp = base / "collection", base / "complete.json"
    if stamp.exists():
        generated = json.loads(stamp.read_text())
        print(f"reusing a {n:,}-snapshot ArchiveBox 0.7 collection in {root} (generated in "
              f"{generated['seconds']:.0f} s)")
    else:
        remove_tree(base)
        started = time.perf_counter()
        generate_collection(root, Aged07(files_per_snapshot=50), snapshots=n, seed=1)
        generated = {"seconds": time.perf_counter() - started}
        stamp.write_text(json.dumps(generated))
        print(f"generated a {n:,}-snapshot ArchiveBox 0.7 collection in {root} in "
              f"{generated['seconds']:.0f} s")
    everything = tree_files(root)
    sizes = {rel.split("/", 1)[1]: size for rel, size in everything.items()
             if rel.startswith("archive/")}
    return Collection(root, n, len(sizes), len(everything), sum(everything.values()), sizes)


def find_cli() -> Path:
    """The archive-pipelines script of the interpreter running this benchmark."""
    beside = Path(sys.executable).parent / "archive-pipelines"
    found = str(beside) if beside.exists() else shutil.which("archive-pipelines")
    if found is None:
        sys.exit("error: archive-pipelines not found; run `make venv` and use .venv/bin/python")
    return Path(found)


def cli_env() -> dict[str, str]:
    """This environment without the catalog/store overrides: every data dir gets SQLite."""
    return {key: value for key, value in os.environ.items() if key not in SCRUBBED_ENV}


def warm(top: Path) -> int:
    """Read every file under `top` once, right before a contender (cas_bench.warm says why)."""
    total = 0
    for folder, _dirs, files in os.walk(top):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                with open(path, "rb") as handle:
                    while chunk := handle.read(1 << 20):
                        total += len(chunk)
    return total


@dataclass(frozen=True)
class Timed:
    """One contender's run: wall, its processes' user+sys CPU, machine-wide user and sys."""

    wall: float
    cpu: float
    machine_user: float
    machine_sys: float


def timed(args: list[str], *, env: dict[str, str] | None = None,
          what: str) -> tuple[Timed, subprocess.CompletedProcess[str]]:
    """Run `args` with the disk synced first; fail loudly on a non-zero exit."""
    os.sync()  # nothing of the previous contender left to write back
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine_before = machine_cpu()
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine = {k: v - machine_before[k] for k, v in machine_cpu().items()}
    if done.returncode != 0:
        raise SystemExit(f"error: {what} exited {done.returncode}: {' '.join(args)}\n"
                         f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
    cpu = after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime
    return Timed(wall, cpu, machine["user"] + machine["nice"], machine["system"]), done


def untimed(args: list[str], *, env: dict[str, str] | None = None,
            what: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"error: {what} exited {done.returncode}: {' '.join(args)}\n"
                         f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
    return done


def summary_numbers(stdout: str, prefix: str) -> dict[str, int]:
    """`import: processed 1,000, imported 1,000, ...` -> {"processed": 1000, "imported": 1000, ...}."""
    line = next((line for line in stdout.splitlines() if line.startswith(prefix)), None)
    if line is None:
        raise SystemExit(f"error: no `{prefix}` line in update's output:\n{stdout[-4000:]}")
    return {word: int(number.replace(",", ""))
            for word, number in re.findall(r"([a-z]+) ([0-9][0-9,]*)", line)}


def adopt(cli: Path, coll: Collection, data: Path) -> tuple[Timed, str]:
    """Copy the collection to `data` and init (not timed), run the timed `update`, then check
    (not timed) that everything was adopted, `verify` is healthy and the paths are kept."""
    untimed(["cp", "-a", str(coll.root), str(data)], what="cp -a (adoption's copy)")
    env = cli_env()
    untimed([str(cli), "--data-dir", str(data), "init"], env=env, what="init")
    warm(data / "archive")
    run, done = timed([str(cli), "--data-dir", str(data), "update", "--import-orphans",
                       "--migrate-fs"], env=env, what="update --import-orphans --migrate-fs")
    imported, migrated = summary_numbers(done.stdout, "import:"), summary_numbers(done.stdout, "migrate:")
    problems = []
    if imported.get("imported") != coll.snapshots:
        problems.append(f"imported {imported.get('imported')} of {coll.snapshots} snapshots")
    if migrated.get("migrated") != coll.snapshots or migrated.get("failed"):
        problems.append(f"migrated {migrated.get('migrated')} of {coll.snapshots}, "
                        f"failed {migrated.get('failed')}")
    if migrated.get("files") != coll.archive_files:
        problems.append(f"migrate stored {migrated.get('files')} files, archive/ holds "
                        f"{coll.archive_files}")
    verified = subprocess.run([str(cli), "--data-dir", str(data), "verify"], env=env,
                              capture_output=True, text=True, check=False)
    if verified.returncode != 0 or "healthy" not in verified.stdout.split():
        problems.append(f"verify exited {verified.returncode}: {verified.stdout[-2000:]}"
                        f"{verified.stderr[-2000:]}")
    moved = [rel for rel, size in coll.sizes.items()
             if not (data / "archive" / rel).is_file() or (data / "archive" / rel).stat().st_size != size]
    if moved:
        problems.append(f"{len(moved):,} files not at their original path with their size, "
                        f"e.g. archive/{moved[0]}")
    if problems:
        raise SystemExit(f"error: adoption of {data} is wrong: " + "; ".join(problems)
                         + f"\n--- update stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
    return run, done.stdout


def restic_backup(restic: str, coll: Collection, repo: Path, cache: Path) -> Timed:
    env = {**os.environ, "RESTIC_PASSWORD": "bench", "RESTIC_CACHE_DIR": str(cache)}
    untimed([restic, "-r", str(repo), "init"], env=env, what="restic init")
    warm(coll.root)
    run, _ = timed([restic, "-r", str(repo), "backup", "--quiet", str(coll.root)], env=env,
                   what="restic backup")
    return run


def cp_a(coll: Collection, dest: Path) -> Timed:
    warm(coll.root)
    run, _ = timed(["cp", "-a", str(coll.root), str(dest)], what="cp -a")
    return run


def bench_realistic(n: int, runs: int) -> bool:
    """Adoption of an ArchiveBox 0.7 collection beside restic and cp -a, alternated."""
    coll = collection07(n)
    cli, restic = find_cli(), shutil.which("restic")
    version = (subprocess.run([restic, "version"], capture_output=True, text=True).stdout.split()[:2]
               if restic else ["restic (not found: scripts/ensure-bench-deps.sh installs it; skipped)"])
    print(f"\n4. adoption of an ArchiveBox 0.7 collection, end to end (`archive-pipelines update "
          f"--import-orphans --migrate-fs`), beside `{' '.join(version)} backup` and `cp -a`")
    print(f"collection: {coll.snapshots:,} snapshots, {coll.archive_files:,} files under archive/ "
          f"({coll.files:,} in all, {coll.bytes / 1e6:,.0f} MB); {runs} rounds, alternated")
    cases = ("adoption", "restic backup", "cp -a") if restic else ("adoption", "cp -a")
    samples: dict[str, list[Timed]] = {case: [] for case in cases}
    work = WORK_DIR / f"realistic-{os.getpid()}"
    work.mkdir()
    settle()  # nothing is deleted between the runs: they all start on a settled disk
    print(f"{'round':>5} {'case':>14} {'wall s':>7} {'cpu s':>7} {'machine usr s':>14} {'sys s':>6}")
    try:
        for number in range(runs):
            order = cases[number % len(cases):] + cases[:number % len(cases)]
            for case in order:
                if case == "adoption":
                    run, _ = adopt(cli, coll, work / f"adopt-{number}")
                elif case == "restic backup" and restic:
                    run = restic_backup(restic, coll, work / f"restic-{number}", work / "restic-cache")
                else:
                    run = cp_a(coll, work / f"cp-{number}")
                samples[case].append(run)
                print(f"{number + 1:>5} {case:>14} {run.wall:>7.1f} {run.cpu:>7.1f} "
                      f"{run.machine_user:>14.1f} {run.machine_sys:>6.1f}", flush=True)
        # the load average counts processes waiting on the disk: the delete below raises it
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} after the rounds, "
              f"before their copies are deleted", flush=True)
    finally:
        remove_tree(work)
    med = {case: statistics.median(run.wall for run in taken) for case, taken in samples.items()}
    files_s, snapshots_s = coll.archive_files / med["adoption"], coll.snapshots / med["adoption"]
    cp_ratio = med["adoption"] / med["cp -a"]
    print(f"adoption (update --import-orphans --migrate-fs)  {coll.snapshots:,} snapshots, "
          f"{coll.archive_files:,} files: median {med['adoption']:.1f} s = {files_s:,.0f} files/s, "
          f"{snapshots_s:,.0f} snapshots/s (runs: "
          f"{', '.join(f'{run.wall:.1f}' for run in samples['adoption'])} s)")
    if "restic backup" in med:
        restic_ratio = med["adoption"] / med["restic backup"]
        per_round = [a.wall / r.wall for a, r in zip(samples["adoption"], samples["restic backup"],
                                                       strict=True)]
        print(f"restic backup  median {med['restic backup']:.1f} s; cp -a median {med['cp -a']:.1f} s; "
              f"adoption/restic {restic_ratio:.2f} (goal <= {GOAL_RESTIC_RATIO:.1f}); "
              f"adoption/cp {cp_ratio:.2f}  (adoption/restic by round: "
              f"{', '.join(f'{ratio:.2f}' for ratio in per_round)})")
    else:
        print(f"cp -a median {med['cp -a']:.1f} s; adoption/cp {cp_ratio:.2f}")
    ok = files_s >= TARGET_FILES_PER_S
    print(f"files/s = {files_s:,.0f}, the median (target >= {TARGET_FILES_PER_S:,.0f})  "
          f"{'PASS' if ok else 'FAIL'}")
    if "restic backup" in med:
        print(f"adoption/restic = {restic_ratio:.2f} (goal <= {GOAL_RESTIC_RATIO:.1f}, not in the "
              f"exit status)  {'PASS' if restic_ratio <= GOAL_RESTIC_RATIO else 'FAIL'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--snapshots", type=int, default=20_000, help="large import case (20000)")
    parser.add_argument("--small", type=int, default=2_000,
                        help="small import case, and the collection migrated end to end (2000)")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs per import size, per migration case and per realistic "
                             "contender; medians (3)")
    parser.add_argument("--realistic-snapshots", type=int, default=1_000, metavar="N",
                        help="snapshots of the ArchiveBox 0.7 collection of part 4 (1000)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="catalog rows for the tick (1000000)")
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="run only this part (repeatable); default: all of them")
    parser.add_argument("--child-import", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_import:
        child_import(args.child_import)
        return 0
    WORK_DIR.mkdir(exist_ok=True)
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} before")
    only = set(args.only or PARTS)
    verdicts = []
    if "import" in only:
        verdicts.append(bench_import([args.small, args.snapshots], args.runs))
    if "migrate" in only:
        verdicts.append(bench_migration(args.small, args.runs))
    if "sensor" in only:
        verdicts.append(bench_sensor(args.rows))
    if "realistic" in only:
        verdicts.append(bench_realistic(args.realistic_snapshots, args.runs))
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())} after")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
