"""Soak: descriptors and memory of every crawler process over a long crawl of many hosts.

    .venv/bin/python bench/crawl_soak.py                  # 50,000 hosts, 600 s
    .venv/bin/python bench/crawl_soak.py --quick          # 5,000 hosts, 90 s
    .venv/bin/python bench/crawl_bench.py --case soak [--quick]

A test web of `--soak-hosts` virtual hosts (its own process, 100 ms latency) and a private
redis-server; every host's home page is seeded with `frontier-service seed`, then
`frontier-service run --processes auto` crawls them (1 s per host, 512 concurrent, the
default --max-open-files and --max-idle-connections unless given) for `--soak-seconds`.
Every 10 s the bench counts each crawler process's open descriptors (/proc/PID/fd) and
resident memory (/proc/PID/statm), and reads pages from the crawl's /metrics; the soak's
seconds count from the crawl's first page (start-up is not the steady state). It prints
min / median / max / last per process, pages/s, and growth in two ways: the median of the
last minute against the second minute's (warm-up included: the crawler's capped caches,
its links waiting for the frontier, recently offered URLs, robots rules, open files and
pooled connections, fill in the first minutes), and against the minute in the middle of the
run (the steady state: a leak grows there, a cache that reached its cap does not). Growth
over 10% in the steady state is flagged (on runs under 3 minutes: the last third against the
second), and so is any sample above the hard descriptor limit's half. Exit 1 on a flag or a
failed crawl.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from archive_pipelines.embedded_redis import LocalRedis  # noqa: E402
from archive_testkit.testweb import TestWebConfig, serve_in_subprocess  # noqa: E402
from frontier_service.service.process_gauges import open_fds, rss_bytes  # noqa: E402

SAMPLE_EVERY_S = 10.0
SEEDS_PER_CALL = 10_000
GROWTH_LIMIT = 1.10
STARTUP_S = 300.0  # the longest wait for the first page (seeding, recovery, a loaded box)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("soak case (--case soak)")
    group.add_argument("--soak-hosts", type=int, default=None, help="virtual hosts (50,000)")
    group.add_argument("--soak-seconds", type=float, default=None, help="crawl time (600)")
    group.add_argument("--soak-concurrency", type=int, default=512)
    group.add_argument("--soak-processes", default="auto")
    group.add_argument("--soak-max-open-files", type=int, default=None,
                       help="the run's --max-open-files (default: the crawler's)")
    group.add_argument("--soak-max-idle-connections", type=int, default=None,
                       help="the run's --max-idle-connections (default: the crawler's)")
    if not any(a.dest == "quick" for a in parser._actions):
        parser.add_argument("--quick", action="store_true", help="5,000 hosts for 90 s")


@dataclass
class Series:
    """One process's samples: (seconds since start, descriptors, RSS bytes)."""

    pid: int
    role: str
    samples: list[tuple[float, int, int]] = field(default_factory=list)

    def describe(self) -> str:
        fds = [s[1] for s in self.samples]
        rss = [s[2] / 1e6 for s in self.samples]
        return (f"  pid {self.pid:<7} {self.role:<10} fds min/median/max/last "
                f"{min(fds):,}/{statistics.median(fds):,.0f}/{max(fds):,}/{fds[-1]:,}   "
                f"RSS MB {min(rss):,.0f}/{statistics.median(rss):,.0f}/{max(rss):,.0f}/"
                f"{rss[-1]:,.0f}   ({len(fds)} samples)")

    def growth(self, seconds: float, *, steady: bool = True) -> tuple[float, float] | None:
        """(descriptors, RSS) median of the last minute over the middle minute (`steady`) or
        over the second minute (warm-up included); None without both windows."""
        if seconds >= 180:
            middle = seconds / 2
            early = (middle - 30.0, middle + 30.0) if steady else (60.0, 120.0)
            late = (seconds - 60.0, seconds + 1e9)
        else:
            early, late = (seconds / 3, 2 * seconds / 3), (2 * seconds / 3, seconds + 1e9)
        first = [s for s in self.samples if early[0] <= s[0] < early[1]]
        last = [s for s in self.samples if late[0] <= s[0] < late[1]]
        if not first or not last:
            return None
        return (statistics.median(s[1] for s in last) / max(statistics.median(s[1] for s in first), 1),
                statistics.median(s[2] for s in last) / max(statistics.median(s[2] for s in first), 1))


def children_of(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc/*/stat."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def crawler_processes(root: int) -> dict[int, str]:
    """The run process and its crawler children (a spawn's resource tracker left out)."""
    processes = {root: "run"}
    for child in children_of(root):
        with contextlib.suppress(OSError):
            command = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"resource_tracker" not in command:
                processes[child] = "crawler"
    return processes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def metric(port: int, name: str) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
    except OSError:
        return None
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def cli(data: Path, redis_url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "frontier_service", "--data-dir", str(data), "--redis-url",
            redis_url, "--crawl-name", "soak", *args]


def scope_args(port: int) -> list[str]:
    return ["--allowed-domain", "*.test", "--allow-network", f"127.0.0.1:{port}",
            "--host-map", f"*.test=127.0.0.1:{port}", "--max-depth", "1000"]


@contextlib.contextmanager
def crawling(command: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(log, "wb") as err:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                   stderr=err)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def run_case(args: argparse.Namespace, work: Path) -> bool:
    hosts = args.soak_hosts or (5_000 if args.quick else 50_000)
    seconds = args.soak_seconds or (90.0 if args.quick else 600.0)
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    data.mkdir()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    print(f"crawl soak {time.strftime('%Y-%m-%d %H:%M')}: {hosts:,} hosts, {seconds:g} s, "
          f"{args.soak_concurrency} concurrent, processes {args.soak_processes}, descriptor "
          f"hard limit {hard:,}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    config = TestWebConfig(hosts=hosts, latency_ms=100.0, crawl_delay_fraction=0.0)
    with serve_in_subprocess(config) as web, LocalRedis() as redis:
        seeds = [f"http://{config.host_pattern.format(n=n)}/" for n in range(hosts)]
        for start in range(0, hosts, SEEDS_PER_CALL):
            subprocess.run(cli(data, redis.url, "seed", *scope_args(web.port),
                               *seeds[start:start + SEEDS_PER_CALL]),
                           cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                           check=True, capture_output=True)
        metrics_port = free_port()
        bounds = []
        if args.soak_max_open_files is not None:
            bounds += ["--max-open-files", str(args.soak_max_open_files)]
        if args.soak_max_idle_connections is not None:
            bounds += ["--max-idle-connections", str(args.soak_max_idle_connections)]
        command = cli(data, redis.url, "run", *scope_args(web.port), "--processes",
                      args.soak_processes, "--concurrency", str(args.soak_concurrency),
                      "--min-delay", "1", "--no-assets", "--metrics-port", str(metrics_port),
                      "--max-seconds", f"{seconds + STARTUP_S + 30:g}", "--progress-seconds",
                      "30", *bounds)
        series: dict[int, Series] = {}
        pages: list[tuple[float, float]] = []
        first_page: float | None = None  # the crawl's time counts from its first page
        with crawling(command, work / "crawler.log") as process:
            started = time.monotonic()
            while process.poll() is None and time.monotonic() - started < seconds + STARTUP_S:
                if first_page is not None and time.monotonic() - first_page >= seconds:
                    break
                time.sleep(SAMPLE_EVERY_S)
                count = metric(metrics_port, "frontier_pages_total")
                if first_page is None and count:
                    first_page = time.monotonic()
                now = time.monotonic() - (first_page or time.monotonic())
                line = [f"t={now:4.0f} s" if first_page is not None else "start-up"]
                for pid, role in crawler_processes(process.pid).items():
                    fds, rss = open_fds(pid), rss_bytes(pid)
                    if fds and first_page is not None:
                        series.setdefault(pid, Series(pid, role)).samples.append((now, fds, rss))
                    if fds:
                        line.append(f"{role}[{pid}] {fds:,} fds {rss / 1e6:,.0f} MB")
                if count is not None and first_page is not None:
                    pages.append((now, count))
                    line.append(f"pages {count:,.0f}")
                print("  " + "  ".join(line), flush=True)
            failed = process.poll() not in (None, 0)
    return report(series, pages, seconds=seconds, hard=hard, failed=failed, log=work / "crawler.log")


def report(series: dict[int, Series], pages: list[tuple[float, float]], *, seconds: float,
           hard: int, failed: bool, log: Path) -> bool:
    print("per process (every 10 s):")
    flags = []
    for s in series.values():
        print(s.describe())
        grown = s.growth(seconds)
        warm = s.growth(seconds, steady=False)
        if warm is not None and seconds >= 180:
            print(f"    last / second minute (warm-up included): fds {warm[0]:.2f}x, "
                  f"RSS {warm[1]:.2f}x")
        if grown is not None:
            print(f"    last / middle minute (steady state, flagged over {GROWTH_LIMIT:.2f}x): "
                  f"fds {grown[0]:.2f}x, RSS {grown[1]:.2f}x")
            if s.role == "crawler" and max(grown) > GROWTH_LIMIT:
                flags.append(f"pid {s.pid} grew (fds {grown[0]:.2f}x, RSS {grown[1]:.2f}x)")
        if hard != resource.RLIM_INFINITY and max(x[1] for x in s.samples) > hard // 2:
            flags.append(f"pid {s.pid} held over half the hard descriptor limit")
    if len(pages) >= 2:
        (t0, p0), (t1, p1) = pages[0], pages[-1]
        print(f"pages/s {(p1 - p0) / max(t1 - t0, 1e-9):,.1f} (all processes, {p1:,.0f} pages "
              f"by t={t1:.0f} s)")
    if failed:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        flags.append("the crawl failed: " + " / ".join(tail))
    for flag in flags:
        print(f"FLAG  {flag}")
    print("PASS  descriptors and RSS flat" if not flags else "FAIL")
    return not flags


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    add_arguments(parser)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="crawl-soak-") as work:
        return 0 if run_case(args, Path(work) / "soak") else 1


if __name__ == "__main__":
    sys.exit(main())
