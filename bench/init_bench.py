"""Is `archive-pipelines init` O(1)? Time the whole command, first init and re-init, on
(a) an empty data dir, (b) one whose archive/ holds N legacy `<timestamp>/` folders and
(c) a control holding 1,000 of them, and compare them as ratios.

The cases are alternated run by run in one process, so a noisy shared machine slows them
alike. The verdict is the issue's: (b)/(a) within 10%. (b)/(c) is printed as a control:
(c) is as large as init's bounded hint sample, so it runs exactly the code (b) runs and
differs only in archive/ size; (b)/(a) also holds the constant cost of that hint (one
bounded query), which an empty dir skips.
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
METRICS = ("wall", "cpu")
# archive_pipelines.datadir.initialize.HINT_SAMPLE: init looks at no more entries than this.
CONTROL_FOLDERS = 1_000
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

    def ratios(self, slow: Case, base: Case) -> list[float]:
        """slow/base median, for every mode and metric in table order."""
        return [self.median(slow, mode, metric) / self.median(base, mode, metric)
                for mode in MODES for metric in METRICS]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time `archive-pipelines --data-dir D init` (first init and re-init) on an "
        "empty data dir, on one holding N legacy archive/<timestamp>/ folders and on a "
        f"{CONTROL_FOLDERS:,}-folder control; PASS if the median wall-time ratio "
        f"N-folders/control is <= {MAX_RATIO:.2f} in both modes.",
    )
    parser.add_argument("--folders", type=int, default=100_000, metavar="N",
                        help="legacy folders in case (b) (default: 100000)")
    parser.add_argument("--runs", type=int, default=15, metavar="N",
                        help="timed runs per case and mode, median taken (default: 15, min 5)")
    parser.add_argument("--samples", action="store_true",
                        help="also print every timed run, in order")
    args = parser.parse_args(argv)
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    if args.folders <= CONTROL_FOLDERS:
        parser.error(f"--folders must be more than the control's {CONTROL_FOLDERS:,}")
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


def init_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in SCRUBBED_ENV}


def run_init(cli: Path, case: Case) -> tuple[float, float, str]:
    """Wall and CPU (user + sys) seconds of one whole `init` command, and its stdout."""
    os.sync()  # start every run with no dirty pages from the previous one or its reset
    cpu_before = children_cpu()
    started = time.perf_counter()
    result = subprocess.run([str(cli), "--data-dir", str(case.data_dir), "init"],
                            env=init_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"error: init on {case.data_dir} exited {result.returncode}:\n{result.stderr}")
    return wall, children_cpu() - cpu_before, result.stdout


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_round(cli: Path, cases: list[Case], timings: Timings | None) -> None:
    """First init of every case, then re-init of every case, in the given order."""
    for mode in MODES:
        for case in cases:
            if mode == "first init":
                reset_for_first_init(case)
            wall, cpu, _ = run_init(cli, case)
            if timings is not None:
                timings.add(case, mode, wall, cpu)


def measure(cli: Path, cases: list[Case], runs: int) -> Timings:
    """One untimed warm-up round, then `runs` rounds, each starting with the next case."""
    run_round(cli, cases, timings=None)
    timings = Timings()
    for number in range(runs):
        shift = number % len(cases)
        order = cases[shift:] + cases[:shift]
        run_round(cli, order[::-1] if number // len(cases) % 2 else order, timings)
    return timings


def init_hint(cli: Path, case: Case) -> str:
    """The hint line a re-init prints for this data dir (shows the bounded sample)."""
    *_, stdout = run_init(cli, case)
    hints = [line.split(None, 1)[1] for line in stdout.splitlines() if line.startswith("hint")]
    return hints[0] if hints else "(none)"


def report(timings: Timings, cases: list[Case], runs: int) -> None:
    """Print the medians of every case and the (b)/(a), (b)/(c) ratios."""
    empty, legacy, control = cases
    print(f"\nmedian seconds of `archive-pipelines --data-dir D init`, {runs} runs per cell, "
          "cases alternated\n(wall decides; cpu = the command's user+sys, a cross-check "
          "against other load)")
    print(f"{'':<34}" + "".join(f"{mode:>18}" for mode in MODES))
    print(f"{'case':<34}" + "".join(f"{metric:>9}" for metric in METRICS) * len(MODES))
    for case in cases:
        print(f"{case.label:<34}" + "".join(f"{timings.median(case, mode, metric):>9.3f}"
                                            for mode in MODES for metric in METRICS))
    for name, base in (("ratio (b)/(a)  <- verdict", empty), ("ratio (b)/(c)  (control)", control)):
        print(f"{name:<34}" + "".join(f"{ratio:>9.3f}" for ratio in timings.ratios(legacy, base)))


def print_samples(timings: Timings) -> None:
    for (label, mode, metric), values in timings.samples.items():
        print(f"{label:<34}{mode:>11} {metric:<5}" + " ".join(f"{v:.3f}" for v in values))


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def verdict(timings: Timings, legacy: Case, empty: Case) -> int:
    """PASS (0) if (b)/(a) median wall time is within MAX_RATIO in both modes, else FAIL (1)."""
    walls = [timings.median(legacy, mode, "wall") / timings.median(empty, mode, "wall")
             for mode in MODES]
    if all(ratio <= MAX_RATIO for ratio in walls):
        print(f"PASS: init is O(1) (wall (b)/(a) <= {MAX_RATIO:.2f} in both modes)")
        return 0
    print(f"FAIL: init slower with a large archive/ (wall (b)/(a) > {MAX_RATIO:.2f})")
    return 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cli = find_cli()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    empty = Case("(a) empty data dir", WORK_DIR / "init-empty")
    shutil.rmtree(empty.data_dir, ignore_errors=True)
    legacy = Case(f"(b) {args.folders:,} legacy folders", ensure_legacy_tree(args.folders))
    control = Case(f"(c) {CONTROL_FOLDERS:,} legacy folders (control)",
                   ensure_legacy_tree(CONTROL_FOLDERS))
    print(f"{os.cpu_count()} CPUs, load average {load_average()} before", flush=True)
    timings = measure(cli, [empty, legacy, control], args.runs)
    report(timings, [empty, legacy, control], args.runs)
    if args.samples:
        print_samples(timings)
    print(f"load average {load_average()} after")
    print(f"init's hint on (b): {init_hint(cli, legacy)}")
    return verdict(timings, legacy, empty)


if __name__ == "__main__":
    sys.exit(main())
