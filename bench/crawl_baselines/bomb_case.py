"""The crawl bench's bomb case: a normal site's pages/s without and with compression-bomb
hosts beside it, in one run.

The normal site is the test web's documentation host (its own process, request log on
disk); the bomb hosts (`--bomb-hosts`, default 6: one per encoding) are names mapped to
`archive_testkit.hostile` (another process) serving bombs of gzip, deflate, raw deflate, br,
zstd and gzip+br, each 10 GiB of zeros (a 10 MB gzip body); each bomb host is seeded with
three bombs of its encoding. `frontier-service run` (embedded Redis, --min-delay 0,
concurrency 16, no adaptive delay) crawls the site alone, then the site and the bomb hosts,
each for `--bomb-seconds`, alternated (without, with, with, without, ... `--bomb-repeat`
pairs). The crawler retires a host at its third bomb in a row, after back-offs of 1 and 5 s;
many bomb hosts (e.g. `--bomb-hosts 300`) keep bombs arriving through the whole window. From
the site's request log: pages/s over the request window and the largest gap between two
requests to it. Target: median with / median without >= 0.9.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from archive_testkit.hostile import ENCODINGS, HostileConfig, serve_hostile_in_subprocess
from archive_testkit.testweb import TestWebConfig, read_jsonl, serve_in_subprocess
from bench.crawl_baselines.single_host import ARCHIVE_TOML, FRONTIER_SERVICE, REPO

TARGET_RATIO = 0.9
BOMBS_PER_HOST = 3  # the crawler retires a host at its third bomb in a row
BOMB_BYTES = 10 * 1024**3


@dataclass(frozen=True)
class SideResult:
    pages: int  # 200s of the normal site
    window_s: float  # first to last request to it
    largest_gap_s: float
    bomb_requests: int
    peak_rss_mib: float
    exit_code: int

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.window_s if self.window_s > 0 else 0.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("bomb case")
    group.add_argument("--bomb-seconds", type=float, default=30.0,
                       help="crawl time of each side (without, then with the bomb host)")
    group.add_argument("--bomb-site-pages", type=int, default=5000,
                       help="pages of the normal (documentation) site")
    group.add_argument("--bomb-hosts", type=int, default=len(ENCODINGS),
                       help="bomb hosts, each seeded with three bombs of one encoding "
                            "(default: one per encoding)")
    group.add_argument("--bomb-repeat", type=int, default=2,
                       help="alternated pairs of sides (without, with, with, without ...)")


def crawl_side(args: argparse.Namespace, work: Path, *, with_bombs: bool) -> SideResult:
    site = TestWebConfig(hosts=0, docs_pages=args.bomb_site_pages, docs_links=50)
    work.mkdir(parents=True)
    site_log, bomb_log = work / "site.jsonl", work / "bombs.jsonl"
    data = work / "data"
    data.mkdir()
    (data / "archive.toml").write_text(ARCHIVE_TOML)
    command = [str(FRONTIER_SERVICE), "--data-dir", str(data), "--redis-url", "embedded", "run",
               "--allow-network", "127.0.0.0/8", "--min-delay", "0", "--concurrency", "16",
               "--max-depth", "20", "--max-seconds", f"{args.bomb_seconds:g}",
               "--exit-when-idle", "2", "--metrics-port", "-1"]
    bombs = HostileConfig(bomb_bytes=BOMB_BYTES, bombs_per_kind=1000)
    with serve_in_subprocess(site, log_path=site_log) as web, contextlib.ExitStack() as stack:
        seeds = {f"http://{site.docs_host}/": web.port}
        for seed, port in seeds.items():
            host = seed.split("/")[2]
            command += ["--seed", seed, "--allowed-domain", host,
                        "--host-map", f"{host}=127.0.0.1:{port}"]
        if with_bombs:
            bomb_host = stack.enter_context(serve_hostile_in_subprocess(bombs, log_path=bomb_log))
            command += ["--allowed-domain", "*.bombs.test",
                        "--host-map", f"*.bombs.test=127.0.0.1:{bomb_host.port}"]
            for n in range(args.bomb_hosts):
                kind = ENCODINGS[n % len(ENCODINGS)].replace(", ", "+")
                command += [arg for i in range(BOMBS_PER_HOST)
                            for arg in ("--seed", f"http://h{n}.bombs.test/bomb/{kind}/{i}")]
        with open(work / "crawler.log", "w") as err:
            process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
    records = [r for r in read_jsonl(site_log) if r.host == site.docs_host]
    times = sorted(r.time for r in records)
    return SideResult(
        pages=sum(r.status == 200 for r in records),
        window_s=times[-1] - times[0] if len(times) > 1 else 0.0,
        largest_gap_s=max((b - a for a, b in itertools.pairwise(times)), default=0.0),
        bomb_requests=sum("/bomb/" in r.path_qs for r in read_jsonl(bomb_log)) if with_bombs else 0,
        peak_rss_mib=usage.ru_maxrss / 1024,
        exit_code=process.returncode)


def describe(label: str, side: SideResult) -> str:
    bombs = f", {side.bomb_requests} bomb requests" if side.bomb_requests else ""
    failed = f", crawler exit {side.exit_code}" if side.exit_code else ""
    return (f"{label:<22} {side.pages_per_s:8.1f} pages/s ({side.pages:,} pages in "
            f"{side.window_s:.1f} s), largest gap {side.largest_gap_s * 1000:.0f} ms, crawler "
            f"peak RSS {side.peak_rss_mib:.0f} MiB{bombs}{failed}")


def run_case(args: argparse.Namespace, work: Path) -> bool:
    """Both sides, alternated, their figures and the verdict; True if the ratio of the
    medians meets the target."""
    print(f"\nbomb case {time.strftime('%Y-%m-%d %H:%M')}: a {args.bomb_site_pages}-page "
          f"documentation site crawled for {args.bomb_seconds:g} s alone, then beside "
          f"{args.bomb_hosts} host(s) of compression bombs ({BOMBS_PER_HOST} each, every "
          f"encoding, {BOMB_BYTES / 1024**3:g} GiB of zeros each); frontier-service run, "
          f"--min-delay 0, concurrency 16, embedded Redis; {args.bomb_repeat} alternated "
          f"pair(s)", flush=True)
    sides: dict[bool, list[SideResult]] = {False: [], True: []}
    order = [flag for pair in range(args.bomb_repeat)
             for flag in ((False, True) if pair % 2 == 0 else (True, False))]
    for n, bombs in enumerate(order):
        side = crawl_side(args, work / f"{n}-{'with' if bombs else 'without'}", with_bombs=bombs)
        sides[bombs].append(side)
        label = "with the bomb hosts" if bombs else "without the bomb hosts"
        print(describe(label, side), flush=True)
    without = statistics.median(side.pages_per_s for side in sides[False])
    with_bombs = statistics.median(side.pages_per_s for side in sides[True])
    gap = max(side.largest_gap_s for side in sides[True])
    bomb_requests = sum(side.bomb_requests for side in sides[True])
    ratio = with_bombs / without if without else 0.0
    passed = ratio >= TARGET_RATIO and bomb_requests > 0
    print(f"{'PASS' if passed else 'FAIL'}  normal site's pages/s with / without the bomb "
          f"hosts (medians {with_bombs:.1f} / {without:.1f}): {ratio:.2f} (target >= "
          f"{TARGET_RATIO}); largest gap between its requests with the bomb hosts: "
          f"{gap * 1000:.0f} ms", flush=True)
    return passed
