"""Is `archive-pipelines init` O(1)? Time the whole command on an empty data dir and on one
whose archive/ holds many legacy `<timestamp>/` folders, and compare the two as a ratio.

Both cases run in the same process, alternated round by round, so a noisy shared machine
slows both alike; only the ratio (b)/(a) is judged.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
WORK_DIR = BENCH_DIR / ".work"
MAX_RATIO = 1.10
MODES = ("first init", "re-init")
# Variables that would point init somewhere other than the data dir under test.
SCRUBBED_ENV = ("ARCHIVE_DATA_DIR", "DATABASE_URL", "REDIS_URL", "S3_ENDPOINT_URL")


@dataclass(frozen=True)
class Case:
    label: str
    data_dir: Path


@dataclass
class Timings:
    """Seconds per (case label, mode, metric); metric is "wall" or "cpu" (user + sys)."""

    samples: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)

    def add(self, case: Case, mode: str, wall: float, cpu: float) -> None:
        self.samples.setdefault((case.label, mode, "wall"), []).append(wall)
        self.samples.setdefault((case.label, mode, "cpu"), []).append(cpu)

    def median(self, case: Case, mode: str, metric: str) -> float:
        return statistics.median(self.samples[(case.label, mode, metric)])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time `archive-pipelines --data-dir D init` (first init and re-init) on an "
        "empty data dir and on one holding N legacy archive/<timestamp>/ folders; PASS if the "
        f"median ratio (b)/(a) is <= {MAX_RATIO:.2f} for both.",
    )
    parser.add_argument("--folders", type=int, default=100_000, metavar="N",
                        help="legacy folders in case (b) (default: 100000)")
    parser.add_argument("--runs", type=int, default=11, metavar="N",
                        help="timed runs per case and mode, median taken (default: 11, min 5)")
    parser.add_argument("--samples", action="store_true",
                        help="also print every timed run, in order")
    args = parser.parse_args(argv)
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    if args.folders < 1:
        parser.error("--folders must be positive")
    return args


def find_cli() -> Path:
    """The archive-pipelines script of the interpreter running this benchmark."""
    beside = Path(sys.executable).parent / "archive-pipelines"
    if beside.exists():
        return beside
    found = shutil.which("archive-pipelines")
    if found is None:
        sys.exit("error: archive-pipelines not found; run `make venv` and use .venv/bin/python")
    return Path(found)


def ensure_legacy_tree(folders: int) -> Path:
    """A data dir whose archive/ holds `folders` legacy folders; built once, then cached."""
    data_dir = WORK_DIR / f"init-legacy-{folders}"
    if data_dir.is_dir():
        print(f"reusing {folders:,} legacy folders in {data_dir}", flush=True)
        return data_dir
    partial = WORK_DIR / f"init-legacy-{folders}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    print(f"generating {folders:,} legacy folders in {data_dir} ...", flush=True)
    started = time.perf_counter()
    write_legacy_folders(partial / "archive", folders)
    partial.rename(data_dir)
    os.sync()  # so the first timed runs do not pay for writing the tree back
    print(f"generated in {time.perf_counter() - started:.1f} s", flush=True)
    return data_dir


def write_legacy_folders(archive: Path, folders: int) -> None:
    """`archive/<timestamp>/index.json` as ArchiveBox leaves them, written with raw syscalls."""
    archive.mkdir(parents=True)
    for index in range(folders):
        timestamp = legacy_timestamp(index)
        folder = os.path.join(archive, timestamp)
        os.mkdir(folder)
        fd = os.open(os.path.join(folder, "index.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            os.write(fd, legacy_index_json(index, timestamp))
        finally:
            os.close(fd)


def legacy_timestamp(index: int) -> str:
    """Unique, ArchiveBox-looking timestamps such as `1600000000.123`."""
    return f"{1_600_000_000 + index * 61}.{index * 7919 % 1000:03d}"


def legacy_index_json(index: int, timestamp: str) -> bytes:
    return (f'{{"url": "https://site{index % 40}.example/page/{index}", '
            f'"timestamp": "{timestamp}", "title": "page {index}"}}\n').encode()


def reset_for_first_init(case: Case) -> None:
    """Remove everything init creates, keeping only the legacy archive/ (if any)."""
    case.data_dir.mkdir(parents=True, exist_ok=True)
    for entry in case.data_dir.iterdir():
        if entry.name == "archive" and any_entry(entry):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def any_entry(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return next(entries, None) is not None


def run_init(cli: Path, case: Case, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU (user + sys) seconds of one whole `init` command, and its stdout."""
    os.sync()  # start every run with no dirty pages from the previous one or its reset
    cpu_before = children_cpu()
    started = time.perf_counter()
    result = subprocess.run([str(cli), "--data-dir", str(case.data_dir), "init"],
                            env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"error: init on {case.data_dir} exited {result.returncode}:\n{result.stderr}")
    return wall, children_cpu() - cpu_before, result.stdout


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_round(cli: Path, cases: list[Case], env: dict[str, str], timings: Timings | None) -> None:
    """First init of every case, then re-init of every case, in the given order."""
    for mode in MODES:
        for case in cases:
            if mode == "first init":
                reset_for_first_init(case)
            wall, cpu, _ = run_init(cli, case, env)
            if timings is not None:
                timings.add(case, mode, wall, cpu)


def measure(cli: Path, cases: list[Case], runs: int) -> Timings:
    """One untimed warm-up round, then `runs` rounds alternating which case goes first."""
    env = {key: value for key, value in os.environ.items() if key not in SCRUBBED_ENV}
    run_round(cli, cases, env, timings=None)
    timings = Timings()
    for number in range(runs):
        order = cases if number % 2 == 0 else cases[::-1]
        run_round(cli, order, env, timings)
    return timings


def init_hint(cli: Path, case: Case) -> str:
    """The hint line a re-init prints for this data dir (shows the bounded sample)."""
    env = {key: value for key, value in os.environ.items() if key not in SCRUBBED_ENV}
    *_, stdout = run_init(cli, case, env)
    hints = [line.split(None, 1)[1] for line in stdout.splitlines() if line.startswith("hint")]
    return hints[0] if hints else "(none)"


def report(timings: Timings, empty: Case, legacy: Case, runs: int) -> list[float]:
    """Print the table; return the wall-time ratio (b)/(a) per mode."""
    metrics = ("wall", "cpu")
    print(f"\nmedian seconds of `archive-pipelines --data-dir D init`, {runs} runs per cell, "
          "cases alternated\n(wall decides; cpu = the command's user+sys, a cross-check "
          "against other load)")
    print(f"{'':<30}" + "".join(f"{mode:>18}" for mode in MODES))
    print(f"{'case':<30}" + "".join(f"{metric:>9}" for metric in metrics) * len(MODES))
    for case in (empty, legacy):
        print(f"{case.label:<30}" + "".join(f"{timings.median(case, mode, metric):>9.3f}"
                                            for mode in MODES for metric in metrics))
    ratios = {(mode, metric): timings.median(legacy, mode, metric)
              / timings.median(empty, mode, metric) for mode in MODES for metric in metrics}
    print(f"{'ratio (b)/(a)':<30}" + "".join(f"{ratio:>9.3f}" for ratio in ratios.values()))
    return [ratios[(mode, "wall")] for mode in MODES]


def print_samples(timings: Timings) -> None:
    for (label, mode, metric), values in timings.samples.items():
        print(f"{label:<30}{mode:>11} {metric:<5}" + " ".join(f"{v:.3f}" for v in values))


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cli = find_cli()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    legacy = Case(f"(b) {args.folders:,} legacy folders", ensure_legacy_tree(args.folders))
    empty = Case("(a) empty data dir", WORK_DIR / "init-empty")
    shutil.rmtree(empty.data_dir, ignore_errors=True)
    print(f"{os.cpu_count()} CPUs, load average {load_average()} before", flush=True)
    timings = measure(cli, [empty, legacy], args.runs)
    ratios = report(timings, empty, legacy, args.runs)
    if args.samples:
        print_samples(timings)
    print(f"load average {load_average()} after")
    print(f"init's hint on (b): {init_hint(cli, legacy)}")
    if all(ratio <= MAX_RATIO for ratio in ratios):
        print(f"PASS: init is O(1) (median ratio <= {MAX_RATIO:.2f} for both modes)")
        return 0
    print(f"FAIL: init slows down with archive/ size (a median ratio > {MAX_RATIO:.2f})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
