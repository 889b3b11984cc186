"""A/B one benchmark between two checkouts: alternated runs, medians, new/old ratios.

    git worktree add --detach /work/wt-bench-old <before>
    git worktree add --detach /work/wt-bench-new <after>
    .venv/bin/python bench/ab_bench.py --old /work/wt-bench-old --new /work/wt-bench-new --bench cas
    .venv/bin/python bench/ab_bench.py --old ... --new ... --bench crawl --runs 3 -- --seconds 30

Runs `bench/<bench>_bench.py` of each checkout from that checkout, with PYTHONPATH set to
it so its own code is imported (checked before the first run), in the order old, new, new,
old, old, new, ... (ABBA: drift over the session falls on both sides alike). Each run's
output is streamed, prefixed with its side and number; its headline figures are parsed
and the summary gives each figure's runs, the median per side, new/old, and PASS when new
is at most 10% worse than old (--tolerance), else FAIL. Exit status 1 when any figure
FAILs. Rows marked "context" (other tools' times, CPU per page) carry no verdict.

cas: `cas_bench.py` as is (extra arguments after `--` go to it). Its settle wait after the
previous run's large delete is part of every run, so both checkouts must share one
bench/.work (the settle stamp and the corpus): a checkout without bench/.work gets a symlink
to --work, and one whose bench/.work is elsewhere is refused.
crawl: `crawl_bench.py --only frontier` -- (a) frontier_service and the frontier
microbenchmarks; the other contenders do not run our code.
crawl-single: `crawl_bench.py --case single-host --repeat 1` -- our crawler on one site
(pages/s over the request window, wall time); Scrapy's figure is context.

--from-log FILE re-reads an earlier ab_bench output (its prefixed lines) and prints the
summary again, e.g. after a change to the figures parsed; repeated, it pools the runs of
several outputs (e.g. an A/B and its rerun).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NUM = r"([\d,]+(?:\.\d+)?)"


@dataclass(frozen=True)
class Figure:
    name: str
    pattern: str  # regex; group 1 is the figure
    higher_is_better: bool = True
    context: bool = False  # printed, no verdict


BENCHES: dict[str, tuple[list[str], list[Figure]]] = {
    "cas": ([], [
        Figure("small ingest hardlink files/s", rf"small-file ingest\s+hardlink .*?{NUM} files/s"),
        Figure("small ingest copy files/s", rf"small-file ingest\s+copy .*?{NUM} files/s"),
        Figure("large ingest hardlink MB/s", rf"large-file ingest\s+hardlink .*?{NUM} MB/s"),
        Figure("large ingest copy MB/s", rf"large-file ingest\s+copy .*?{NUM} MB/s"),
        Figure("verify files/s", rf"^verify .*?{NUM} files/s"),
        Figure("rebuild_views links/s", rf"^rebuild_views .*?{NUM} links/s"),
        Figure("whole corpus ours hardlink s", rf"ours \(hardlink\) {NUM} s", higher_is_better=False),
        Figure("whole corpus ours copy s", rf"ours \(copy\) {NUM} s", higher_is_better=False),
        Figure("hashlib.sha256 MB/s", rf"hashlib\.sha256 {NUM} MB/s", context=True),
        Figure("restic backup s", rf"ours \(hardlink\).*restic backup {NUM} s",
               higher_is_better=False, context=True),
        Figure("cp -a s", rf"ours \(hardlink\).*cp -a {NUM} s", higher_is_better=False, context=True),
    ]),
    "crawl": (["--only", "frontier"], [
        Figure("(a) frontier_service pages/s", rf"^\(a\) frontier_service.*?{NUM} pages/s"),
        Figure("(a) crawler ms/page", rf"^\(a\) frontier_service.*= {NUM} ms/page",
               higher_is_better=False, context=True),
        Figure("add_urls new clustered/s", rf"^add_urls, new URLs, clustered .*: {NUM}/s"),
        Figure("add_urls new uniform/s", rf"^add_urls, new URLs, uniform .*: {NUM}/s"),
        Figure("add_urls duplicates/s", rf"^add_urls, all duplicates, .*: {NUM}/s"),
        Figure("add_urls crawl mix/s", rf"^add_urls, crawl mix .*: {NUM}/s"),
        Figure("claim 1 domain/call /s", rf"^claim\+reschedule, .* 1 domain\(s\) per call: {NUM}/s"),
        Figure("claim 8 domains/call /s", rf"^claim\+reschedule, .* 8 domain\(s\) per call: {NUM}/s"),
        Figure("claim 32 domains/call /s", rf"^claim\+reschedule, .* 32 domain\(s\) per call: {NUM}/s"),
    ]),
    # crawl_bench.py --case single-host: our crawler on one docs site (Scrapy runs beside it
    # in each run; its figures are context).
    "crawl-single": (["--case", "single-host", "--repeat", "1"], [
        Figure("(a) single-host pages/s", rf"^\s+\(a\) frontier_service\s+{NUM} pages/s over"),
        Figure("(a) single-host wall s", rf"^\s+\(a\) frontier_service\s+.*wall {NUM} s",
               higher_is_better=False),
        Figure("(c) Scrapy pages/s", rf"^\s+\(c\) Scrapy\s+{NUM} pages/s over", context=True),
    ]),
}
# Benchmarks run by another benchmark's script with other flags.
SCRIPTS = {"crawl-single": "crawl"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Arguments after `--` are passed to the benchmark.")
    parser.add_argument("--old", type=Path, metavar="DIR", help="checkout before")
    parser.add_argument("--new", type=Path, metavar="DIR", help="checkout after")
    parser.add_argument("--bench", choices=sorted(BENCHES), required=True)
    parser.add_argument("--runs", type=int, default=3, help="runs per side (default 3)")
    parser.add_argument("--tolerance", type=float, default=0.10,
                        help="how much worse new may be, as a fraction (default 0.10)")
    parser.add_argument("--work", type=Path, default=HERE / ".work", metavar="DIR",
                        help="bench/.work shared by both sides (default: this repo's bench/.work)")
    parser.add_argument("--python", default=sys.executable, help="interpreter (default: this one)")
    parser.add_argument("--from-log", type=Path, action="append", metavar="FILE",
                        help="run nothing: parse the runs in an earlier ab_bench output and "
                             "print its summary (--old and --new are then not used); "
                             "repeat it to pool the runs of several outputs")
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.extra = extra
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.from_log is None and (args.old is None or args.new is None):
        parser.error("--old and --new are required (unless --from-log)")
    return args


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def side_env(checkout: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout), "PYTHONUNBUFFERED": "1"}


def check_side(name: str, checkout: Path, python: str, work: Path) -> None:
    """That side imports its own code, and shares bench/.work with the other side."""
    probe = "import archive_pipelines, frontier_service; print(archive_pipelines.__file__); " \
            "print(frontier_service.__file__)"
    done = subprocess.run([python, "-c", probe], cwd=checkout, env=side_env(checkout),
                          capture_output=True, text=True, check=True)
    for module in done.stdout.split():
        if not Path(module).resolve().is_relative_to(checkout):
            raise SystemExit(f"error: {name} imports {module}, outside {checkout}")
    head = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h %s"],
                          capture_output=True, text=True, check=False).stdout.strip()
    print(f"{name}: {checkout} at {head[:90]}")
    print(f"     imports {', '.join(done.stdout.split())}")
    link = checkout / "bench" / ".work"
    if not link.exists() and not link.is_symlink():
        work.mkdir(parents=True, exist_ok=True)
        link.symlink_to(work)
        print(f"     bench/.work -> {work} (made)")
    elif link.resolve() != work.resolve():
        raise SystemExit(f"error: {link} is not {work}: the two sides would not share the "
                         f"settle stamp and the inputs; remove it or pass --work {link.resolve()}")


def run_once(label: str, checkout: Path, args: argparse.Namespace) -> tuple[dict[str, float], str]:
    flags, figures = BENCHES[args.bench]
    script = SCRIPTS.get(args.bench, args.bench)
    command = [args.python, f"bench/{script}_bench.py", *flags, *args.extra]
    print(f"\n--- {label}: {' '.join(command[1:])}  (load {load()})", flush=True)
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=checkout, env=side_env(checkout), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        print(f"{label} | {lines[-1]}", flush=True)
    if proc.wait() != 0:
        raise SystemExit(f"error: {label} exited {proc.returncode}")
    output = "\n".join(lines)
    found = figures_in(output, figures)
    missing = [f.name for f in figures if f.name not in found and not f.context]
    print(f"--- {label}: {time.monotonic() - started:.0f} s; load {load()}"
          + (f"; not found: {', '.join(missing)}" if missing else ""), flush=True)
    return found, output


def figures_in(output: str, figures: list[Figure]) -> dict[str, float]:
    found: dict[str, float] = {}
    for figure in figures:
        match = re.search(figure.pattern, output, re.MULTILINE)
        if match:
            found[figure.name] = float(match.group(1).replace(",", ""))
    return found


def from_log(args: argparse.Namespace) -> int:
    """The summary of the runs streamed into earlier ab_bench outputs (pooled)."""
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for log in args.from_log:
        outputs: dict[str, list[str]] = {}
        for line in log.read_text().splitlines():
            if match := re.match(r"^((?:old|new)#\d+) \| ?(.*)$", line):
                outputs.setdefault(match.group(1), []).append(match.group(2))
        for label, lines in outputs.items():
            found = figures_in("\n".join(lines), BENCHES[args.bench][1])
            runs[label.split("#")[0]].append(found)
            print(f"{log.name} {label}: " + "; ".join(f"{k} {v:,.2f}" for k, v in found.items()))
    args.runs = min(len(runs["old"]), len(runs["new"]))
    print(f"\n(from {', '.join(str(log) for log in args.from_log)})")
    return summarize(args, runs)


def main() -> int:
    args = parse_args()
    if args.from_log is not None:
        return from_log(args)
    old, new = args.old.resolve(), args.new.resolve()
    print(f"ab_bench {args.bench}: {args.runs} runs per side, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{os.cpu_count()} CPUs, load average {load()} before")
    for name, checkout in (("old", old), ("new", new)):
        check_side(name, checkout, args.python, args.work)
    order = []
    for index in range(args.runs):  # old new, new old, old new, ...
        order += [("old", "new"), ("new", "old")][index % 2]
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for side in order:
        label = f"{side}#{len(runs[side]) + 1}"
        found, _ = run_once(label, old if side == "old" else new, args)
        runs[side].append(found)
        print(f"{label}: " + "; ".join(f"{k} {v:,.2f}" for k, v in found.items()), flush=True)
    print(f"\norder: {', '.join(order)}; load average {load()} after")
    return summarize(args, runs)


def summarize(args: argparse.Namespace, runs: dict[str, list[dict[str, float]]]) -> int:
    figures = BENCHES[args.bench][1]
    width = max(len(f.name) for f in figures)
    print(f"{'figure':<{width}}  {'old runs':>26}  {'new runs':>26}  {'old med':>9}  "
          f"{'new med':>9}  new/old  verdict")
    failed = False
    for figure in figures:
        values = {side: [r[figure.name] for r in runs[side] if figure.name in r] for side in runs}
        if not values["old"] or not values["new"]:
            print(f"{figure.name:<{width}}  (missing in some runs)")
            failed = failed or not figure.context
            continue
        med = {side: statistics.median(v) for side, v in values.items()}
        ratio = med["new"] / med["old"] if med["old"] else float("inf")
        if figure.context:
            verdict = "context"
        else:
            ok = (ratio >= 1 - args.tolerance if figure.higher_is_better
                  else ratio <= 1 + args.tolerance)
            verdict = "PASS" if ok else "FAIL"
            failed = failed or not ok
        arrow = "" if figure.higher_is_better else " (lower is better)"
        print(f"{figure.name:<{width}}  {fmt(values['old']):>26}  {fmt(values['new']):>26}  "
              f"{med['old']:>9,.1f}  {med['new']:>9,.1f}  {ratio:7.3f}  {verdict}{arrow}")
    print(f"verdict: {'FAIL' if failed else 'PASS'} (new at most {args.tolerance:.0%} worse than "
          f"old on every figure, medians of {args.runs} runs per side)")
    return 1 if failed else 0


def fmt(values: list[float]) -> str:
    return ", ".join(f"{v:,.0f}" if v >= 100 else f"{v:.2f}" for v in values)


if __name__ == "__main__":
    raise SystemExit(main())
